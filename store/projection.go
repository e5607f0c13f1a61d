package store

import (
	"fmt"

	"github.com/bitempo/bitempo/encoding"
)

// This file is the store's side of projections: a read through a projected
// copy of a table (Snapshot.Project) decodes only the attributes it names,
// stepping over the others in each record without allocating
// (encoding.DecodeRecordProjectedAt). Every read that decodes versions honours
// it: ScanAt, ScanHistory, VersionAt, KeyVersions, LookupSorted, GroupRecord.Attrs,
// and RawAttrs.Walk on WithRawAttrs copies.

// Project returns a copy of t whose reads on any snapshot decode only the
// attributes named in names (the projection): nil returns t itself, an empty
// non-nil list decodes no attribute (each version's Attrs is empty). A name
// the table has never stored is absent from every version, as an attribute a
// version does not hold is: it is not an error, because a table's attribute
// names are whatever its writes used so far, and a name first written after the
// projection was made is still found. Ordinals are never renumbered, so the copy
// stays right on later snapshots. Use the copy for reads only.
func (s *Snapshot) Project(t *Table, names []string) *Table {
	if names == nil {
		return t
	}
	c := *t
	c.proj = encoding.NewProjection(names, s.attrNames(t).names)
	return &c
}

// Project is Snapshot.Project over the table's attribute names as the DB
// knows them now, for a projection made once and kept (package typed keeps
// one per struct type): like every projection it stays right on later
// snapshots, and a name first written after it was made is still found, by
// name.
func (db *DB) Project(t *Table, names []string) *Table {
	if names == nil {
		return t
	}
	db.mu.RLock()
	ordinals := db.attrList[t.ID] // append-only: the elements it holds never change
	db.mu.RUnlock()
	c := *t
	c.proj = encoding.NewProjection(names, ordinals)
	return &c
}

// Projected reports whether reads through t decode a projection of the
// attributes (Project).
func (t *Table) Projected() bool { return t.proj != nil }

// decodeProjected is decodeRecord for a projected table.
func (s *Snapshot) decodeProjected(t *Table, value []byte, validFrom, keyTxFrom int64) (encoding.RecordValue, error) {
	rv, err := encoding.DecodeRecordProjectedAt(value, validFrom, keyTxFrom, s.attrNames(t).name, t.proj)
	if err != nil {
		return rv, fmt.Errorf("%w: table %q record: %v", ErrCorrupt, t.Name, err)
	}
	return rv, nil
}

// RawAttrs returns the record's attributes in their stored form, walked as
// projected by the table the records were read through (Snapshot.Project), and
// true; or false when the record shares its successor's attributes, which Attrs
// then reads. A value that is not a record is ErrCorrupt.
func (r *GroupRecord) RawAttrs() (RawAttrs, bool, error) {
	if encoding.SharesAttrs(r.Value) {
		return RawAttrs{}, false, nil
	}
	b, err := encoding.PositionalAttrs(r.Value)
	if err != nil {
		return RawAttrs{}, false, fmt.Errorf("%w: group index record: %v", ErrCorrupt, err)
	}
	return RawAttrs{b: b, name: r.names.name, proj: r.t.proj}, true, nil
}
