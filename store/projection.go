package store

import (
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/bitempo/bitempo/encoding"
)

// This file is the store's side of projections: a read through a projected
// view of a table (Snapshot.Project) decodes only the attributes it names,
// stepping over the others in each record without allocating
// (encoding.DecodeRecordProjectedAt). Every read that decodes versions honours
// it: ScanAt, ScanHistory, VersionAt, KeyVersions, LookupSorted, GroupRecord.Attrs,
// and RawAttrs.Walk on WithRawAttrs copies.

// Project returns a view of t whose reads on any snapshot decode only the
// attributes named in names (the projection): nil returns t itself, an empty
// non-nil list decodes no attribute (each version's Attrs is empty). A name
// the table has never stored is absent from every version, as an attribute a
// version does not hold is: it is not an error, because a table's attribute
// names are whatever its writes used so far, and a name first written after the
// projection was made is still found. Ordinals are never renumbered, so the view
// stays right on later snapshots. Use the view for reads only: it may be shared.
//
// Views are cached per catalog table, keyed by the list of names (in its
// order) and whether t leaves attributes encoded (WithRawAttrs), so a read
// repeated with the same list, as a point read in a hot loop is, does not build
// its projection again (viewCache).
func (s *Snapshot) Project(t *Table, names []string) *Table {
	if names == nil {
		return t
	}
	if t.views == nil {
		return s.newView(t, names)
	}
	var buf [128]byte
	key := viewKey(buf[:0], t.rawAttrs, names)
	known := len(s.attrNames(t).names)
	if v := t.views.get(key, known); v != nil {
		return v
	}
	v := s.newView(t, names)
	t.views.put(key, v, known)
	return v
}

// newView returns a copy of t projected to names over the snapshot's ordinals.
func (s *Snapshot) newView(t *Table, names []string) *Table {
	c := *t
	c.proj = encoding.NewProjection(names, s.attrNames(t).names)
	return &c
}

// maxViews bounds the views a viewCache holds.
const maxViews = 64

// viewCache holds the projected views of one catalog table (Snapshot.Project),
// safe for concurrent readers. It holds at most maxViews: a new view past that
// replaces an arbitrary one, so a caller passing ever-new lists of names costs
// a rebuild per read, as it would without the cache, but never grows memory.
// A view records how many ordinals the table had when it was made: a snapshot
// that knows more rebuilds it (a name first written since then gets its
// ordinal in the projection, so decoding stops after the last projected
// ordinal again); one that knows fewer uses it as is, since its records never
// hold the newer ordinals.
//
// The cache sits on the store's side of the read, invisible in the API, so
// every projected read of package query (Get, GetBySK, Snapshot, History,
// Audit, Changes, Resolve, the aggregations) and every caller of Project gains
// from it without changing a call (docs/design/projection-view-cache.md).
type viewCache struct {
	mu    sync.RWMutex
	views map[string]cachedView
}

type cachedView struct {
	t     *Table
	known int // the ordinals the table had when t was made
}

// viewKey appends the cache key of a view: whether it leaves attributes
// encoded, then each name with its length before it, so that two different
// lists never share a key.
func viewKey(b []byte, raw bool, names []string) []byte {
	b = append(b, 0)
	if raw {
		b[len(b)-1] = 1
	}
	for _, n := range names {
		b = binary.AppendUvarint(b, uint64(len(n)))
		b = append(b, n...)
	}
	return b
}

// get returns the view of key, or nil if there is none made with at least
// known ordinals.
func (c *viewCache) get(key []byte, known int) *Table {
	c.mu.RLock()
	v, ok := c.views[string(key)]
	c.mu.RUnlock()
	if !ok || v.known < known {
		return nil
	}
	return v.t
}

// put stores view t of key, made with known ordinals, unless a view made with
// more is already there.
func (c *viewCache) put(key []byte, t *Table, known int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if v, ok := c.views[string(key)]; ok {
		if v.known < known {
			c.views[string(key)] = cachedView{t: t, known: known}
		}
		return
	}
	if c.views == nil {
		c.views = map[string]cachedView{}
	}
	if len(c.views) >= maxViews {
		for k := range c.views {
			delete(c.views, k)
			break
		}
	}
	c.views[string(key)] = cachedView{t: t, known: known}
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
	return rv, s.mapCommit(t, &rv)
}

// RawAttrs returns the record's attributes in their stored form, walked as
// projected by the table the records were read through (Snapshot.Project), and
// true; or false when the record shares its successor's attributes, which Attrs
// then reads. The group attributes the entry leaves to its key are put back
// when that table walks one of them, in a buffer the next record reuses. A
// value that is not a record is ErrCorrupt.
func (r *GroupRecord) RawAttrs() (RawAttrs, bool, error) {
	if encoding.SharesAttrs(r.Value) {
		return RawAttrs{}, false, nil
	}
	b, err := encoding.PositionalAttrs(r.Value)
	if err != nil {
		return RawAttrs{}, false, fmt.Errorf("%w: group index record: %v", ErrCorrupt, err)
	}
	if b, err = r.values.rawAttrs(b); err != nil {
		return RawAttrs{}, false, err
	}
	return RawAttrs{b: b, name: r.names.nameFn, proj: r.t.proj}, true, nil
}
