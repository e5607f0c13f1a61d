package store

import (
	"cmp"
	"errors"
	"fmt"
	"hash/maphash"
	"iter"
	"slices"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/engine"
	"github.com/bitempo/bitempo/layout"
)

// This file owns the temporal group index (keyspace 0x30) of tables declared with
// TableDef.GroupBy. Every record of such a table is also stored under the values
// of its group attributes, in the commit that writes the record, so that "the
// versions of group G alive at transaction time T" is one range scan that touches
// no other group. Like the primary records, the index has a current part and a
// history part, so a read at the latest transaction time never steps over retired
// records:
//
//	0x30 | tid | group tuple | 0x00 | tuple | desc(valid_from)                  -> entry value (tx_to = +∞)
//	0x30 | tid | group tuple | 0x01 | tuple | desc(valid_from) | desc(tx_from)   -> entry value (tx_to set)
//
// "group tuple" is the values of the GroupBy attributes in encoding.AppendKey form
// (self-delimiting, so the marker byte after it is unambiguous); the entry value
// is the record's stored value (encoding.AppendRecordPositionalAt), identical to
// its value in 0x10 or 0x11 but for the group attributes, which the group tuple
// holds and readers put back (groupvalues.go).
// Assert writes the current entry; Retire deletes it and writes the history
// entry with tx_to set. Each version is indexed under its own group values, so an
// entity whose group attribute changes leaves one group and enters the other at
// the change time.
//
// Semantics decided here: a version whose group attribute is null or absent
// belongs to no group (a lookup cannot ask for the null group, as a join on a null
// key matches nothing); the rejected alternative, a "null group" as in SQL GROUP
// BY, would gather every entity that lacks the attribute into one giant group.
// Group values must be strings, bytes or integers: a float, bool or time group
// value is rejected before anything is written (floats make poor keys: 0.1+0.2 is
// not 0.3; a time group is almost always a mistake for a window, and an int64 of
// microseconds serves where one is meant).

// Sentinels of the group index.
var (
	// ErrGroupValue: a group attribute value the group index cannot hold (float,
	// bool), or a group key that does not fit the table's GroupBy.
	ErrGroupValue = errors.New("bitempo: invalid group value")
	// ErrNotGrouped: a group lookup on a table declared without GroupBy.
	ErrNotGrouped = errors.New("bitempo: table has no group index")
)

// Marker bytes after the group tuple.
const (
	groupCurrent byte = 0x00
	groupHistory byte = 0x01
)

// GroupValueError describes a group value that cannot be indexed or looked up.
type GroupValueError struct {
	Table string
	// Attr is the GroupBy attribute; empty when the whole key has the wrong length.
	Attr   string
	Value  any
	Reason string
}

func (e *GroupValueError) Error() string {
	if e.Attr == "" {
		return fmt.Sprintf("bitempo: table %q group key: %s", e.Table, e.Reason)
	}
	return fmt.Sprintf("bitempo: table %q group attribute %q value %v (%T): %s", e.Table, e.Attr, e.Value, e.Value, e.Reason)
}

// Is makes errors.Is(err, ErrGroupValue) true.
func (e *GroupValueError) Is(target error) bool { return target == ErrGroupValue }

// groupComponent returns the canonical tuple component of a group value, or
// ok false for null.
func (t *Table) groupComponent(attr string, v any) (c any, ok bool, err error) {
	c, err = encoding.Canonical(v)
	if err != nil {
		return nil, false, &GroupValueError{Table: t.Name, Attr: attr, Value: v, Reason: err.Error()}
	}
	switch c.(type) {
	case nil:
		return nil, false, nil
	case string, []byte, int64, uint64:
		return c, true, nil
	}
	return nil, false, &GroupValueError{Table: t.Name, Attr: attr, Value: v, Reason: "group values must be strings, bytes or integers"}
}

// appendGroupTuple appends the group tuple of a record with attributes attrs. It
// returns ok false, appending nothing, when a group attribute is null or absent.
func (t *Table) appendGroupTuple(dst []byte, attrs Attrs) ([]byte, bool, error) {
	n := len(dst)
	for _, name := range t.GroupBy {
		c, ok, err := t.groupComponent(name, attrs[name])
		if err != nil || !ok {
			return dst[:n], false, err
		}
		dst, _ = encoding.AppendComponent(dst, c)
	}
	return dst, true, nil
}

// CheckGroupAttrs returns a *GroupValueError (ErrGroupValue) if attrs hold a
// group attribute value the table's group index cannot hold. Writers call it
// before changing anything, so a bad value leaves no trace; Writer.Assert checks
// again. It returns nil for tables without GroupBy.
func (t *Table) CheckGroupAttrs(attrs Attrs) error {
	if len(t.GroupBy) == 0 {
		return nil
	}
	_, _, err := t.appendGroupTuple(nil, attrs)
	return err
}

// AppendGroupKey appends the encoded group tuple of a lookup key: one value per
// GroupBy attribute, in declaration order (string, []byte or any Go integer).
func (t *Table) AppendGroupKey(dst []byte, group Key) ([]byte, error) {
	if len(t.GroupBy) == 0 {
		return dst, fmt.Errorf("%w: table %q", ErrNotGrouped, t.Name)
	}
	if len(group) != len(t.GroupBy) {
		return dst, &GroupValueError{Table: t.Name, Reason: fmt.Sprintf("has %d values, the table groups by %d attributes %v", len(group), len(t.GroupBy), t.GroupBy)}
	}
	n := len(dst)
	for i, name := range t.GroupBy {
		c, ok, err := t.groupComponent(name, group[i])
		if err == nil && !ok {
			err = &GroupValueError{Table: t.Name, Attr: name, Value: nil, Reason: "null is in no group"}
		}
		if err != nil {
			return dst[:n], err
		}
		dst, _ = encoding.AppendComponent(dst, c)
	}
	return dst, nil
}

// groupPrefix returns 0x30 | tid | group tuple.
func groupPrefix(dst []byte, tid uint32, group []byte) []byte {
	return append(layout.AppendTablePrefix(dst, layout.Groups, tid), group...)
}

// groupEntryKey returns the index key of record v, or ok false when the record
// belongs to no group. Current records omit tx_from.
func groupEntryKey(t *Table, v *Version) (key []byte, ok bool, err error) {
	key, ok, err = t.appendGroupTuple(layout.AppendTablePrefix(nil, layout.Groups, t.ID), v.Attrs)
	if err != nil || !ok {
		return nil, false, err
	}
	keys := layout.CurrentKeys
	if v.TxTo == Infinity {
		key = append(key, groupCurrent)
	} else {
		key, keys = append(key, groupHistory), layout.HistoryKeys
	}
	return keys.AppendRecordSuffix(key, v.tuple, v.ValidFrom, v.TxFrom), true, nil
}

// groupEntry returns the index key of record v and the entry's value, given
// the record's stored value (groupEntryValue; ordinal numbers t's names), or
// ok false when the record belongs to no group.
func groupEntry(t *Table, v *Version, value []byte, ordinal func(name string) (uint32, bool)) (key, entry []byte, ok bool, err error) {
	key, ok, err = groupEntryKey(t, v)
	if err != nil || !ok {
		return nil, nil, false, err
	}
	if entry, err = groupEntryValueAt(t, key, value, ordinal); err != nil {
		return nil, nil, false, err
	}
	return key, entry, true, nil
}

// groupEntryValueAt returns the value of the group index entry at key (a
// groupEntryKey) of a record whose stored value is value (groupEntryValue).
func groupEntryValueAt(t *Table, key, value []byte, ordinal func(name string) (uint32, bool)) ([]byte, error) {
	group, err := groupTupleOf(t, key)
	if err != nil {
		return nil, err
	}
	var buf [2]groupAttr
	gas, _, err := appendGroupAttrs(buf[:0], nil, t, group, ordinal)
	if err != nil {
		return nil, err
	}
	entry, err := groupEntryValue(value, gas)
	if err != nil {
		return nil, fmt.Errorf("%w: table %q record value: %v", ErrCorrupt, t.Name, err)
	}
	return entry, nil
}

// groupAssert indexes the record v that Assert lays out; value is its encoding.
func (w *Writer) groupAssert(t *Table, v *Version, value []byte) error {
	if len(t.GroupBy) == 0 {
		return nil
	}
	key, entry, ok, err := groupEntry(t, v, value, w.ordinalOf(t))
	if err != nil || !ok {
		return err
	}
	w.asserts = append(w.asserts, engine.Write{Key: key, Value: entry})
	return nil
}

// groupRetire moves the index entry of the record v that Retire retires (v.TxTo
// already set, value its new encoding) from the current to the history part.
// The delete joins the retires, which the commit applies before the asserts: a
// record asserted in the same commit may reuse the current entry's key.
func (w *Writer) groupRetire(t *Table, v *Version, value []byte) error {
	if len(t.GroupBy) == 0 {
		return nil
	}
	hist, ok, err := groupEntryKey(t, v)
	if err != nil || !ok {
		return nil // never indexed: asserts refuse such values
	}
	entry, err := groupEntryValueAt(t, hist, value, w.ordinalOf(t))
	if err != nil {
		return err
	}
	cur := *v
	cur.TxTo = Infinity
	curKey, _, _ := groupEntryKey(t, &cur)
	w.retires = append(w.retires, engine.Write{Key: curKey, Delete: true}, engine.Write{Key: hist, Value: entry})
	return nil
}

// GroupRecord is one record of a group as GroupRecords yields it. Its slices
// belong to the scan and are valid only until the next iteration.
type GroupRecord struct {
	// Tuple is the encoded natural key of the record's entity.
	Tuple                            []byte
	ValidFrom, ValidTo, TxFrom, TxTo int64
	SK                               uint64
	Inferred                         bool
	// Value is the entry's stored value: the record's value
	// (encoding.AppendRecordPositionalAt, attributes by ordinal of the table's
	// names) without the group attributes the entry's key holds
	// (groupvalues.go). Attrs and RawAttrs put them back.
	Value []byte

	names  *attrNames
	t      *Table
	values *groupValues // the group's attributes, to put back
}

// Attrs decodes the record's attributes (a fresh map). A retired record that
// shares its successor's attributes (see Writer.shareAttrs) reads them from it.
func (r *GroupRecord) Attrs() (Attrs, error) {
	if encoding.SharesAttrs(r.Value) {
		return r.names.s.sharedAttrs(r.t, r.Tuple, r.ValidFrom, r.SK, r.TxTo)
	}
	value, err := r.values.value(r.Value)
	if err != nil {
		return nil, err
	}
	decode := encoding.DecodeRecordAt
	if r.t.proj != nil {
		decode = func(b []byte, validFrom, keyTxFrom int64, name func(uint32) (string, bool)) (encoding.RecordValue, error) {
			return encoding.DecodeRecordProjectedAt(b, validFrom, keyTxFrom, name, r.t.proj)
		}
	}
	rv, err := decode(value, r.ValidFrom, r.TxFrom, r.names.name)
	if err != nil {
		return nil, fmt.Errorf("%w: group index record: %v", ErrCorrupt, err)
	}
	return rv.Attrs, nil
}

// GroupRecords yields the records of the group encoded as group (by
// AppendGroupKey) that are alive at some transaction time in [minTx, maxTx]
// (minTx = maxTx = T: the group's state at T), ordered by natural key, current
// entries before retired ones. When minTx is at or after LastTx it reads only the
// group's current entries. It costs one bounded range scan of the group, whatever
// the size of the other groups.
func (s *Snapshot) GroupRecords(t *Table, group []byte, minTx, maxTx int64) iter.Seq2[*GroupRecord, error] {
	return func(yield func(*GroupRecord, error) bool) {
		if s.closed {
			yield(nil, ErrClosed)
			return
		}
		if len(t.GroupBy) == 0 {
			yield(nil, fmt.Errorf("%w: table %q", ErrNotGrouped, t.Name))
			return
		}
		if minTx < s.lastTx {
			if err := s.checkHorizon(t, minTx); err != nil {
				yield(nil, err)
				return
			}
		}
		prefix := groupPrefix(nil, t.ID, group)
		lower := append(slices.Clip(prefix), groupCurrent)
		upper := encoding.PrefixEnd(append(slices.Clip(prefix), groupHistory))
		latest := minTx >= s.lastTx
		if latest {
			upper = encoding.PrefixEnd(lower)
		}
		it, err := s.newIter(lower, upper)
		if err != nil {
			yield(nil, err)
			return
		}
		var rec GroupRecord
		values := &groupValues{}
		values.reset(t, s.attrNames(t), group)
		for ok := it.First(); ok; ok = it.Next() {
			if _, err := s.decodeGroupEntry(t, it.Key()[len(prefix):], it.Value(), &rec); err != nil {
				_ = it.Close()
				yield(nil, err)
				return
			}
			if !latest && (rec.TxFrom > maxTx || rec.TxTo <= minTx) {
				continue
			}
			rec.names, rec.t, rec.values = values.names, t, values
			if !yield(&rec, nil) {
				_ = it.Close()
				return
			}
		}
		if err := errors.Join(it.Error(), it.Close()); err != nil {
			yield(nil, err)
		}
	}
}

// decodeGroupEntry decodes an index entry from the bytes after its group tuple
// and returns the record's positional attributes, unchecked.
func (s *Snapshot) decodeGroupEntry(t *Table, suffix, value []byte, rec *GroupRecord) ([]byte, error) {
	bad := func(format string, args ...any) ([]byte, error) {
		return nil, fmt.Errorf("%w: table %q group index entry: %s", ErrCorrupt, t.Name, fmt.Sprintf(format, args...))
	}
	if len(suffix) == 0 || suffix[0] > groupHistory {
		return bad("missing or unknown marker")
	}
	marker, keys := suffix[0], layout.CurrentKeys
	if marker == groupHistory {
		keys = layout.HistoryKeys
	}
	tuple, from, keyTxFrom, err := keys.Decode(t.splitTuple, suffix[1:])
	if err != nil {
		return bad("%v", err)
	}
	rv, attrs, err := encoding.DecodeRecordHeadSplitAt(value, from, keyTxFrom)
	if err != nil {
		return bad("%v", err)
	}
	if err := s.mapCommit(t, &rv); err != nil {
		return nil, err
	}
	if (marker == groupCurrent) != (rv.TxTo == Infinity) || (marker == groupHistory && keyTxFrom != rv.TxFrom) {
		return bad("key and value disagree on the transaction period")
	}
	*rec = GroupRecord{
		Tuple: tuple, ValidFrom: from, ValidTo: rv.ValidTo, TxFrom: rv.TxFrom, TxTo: rv.TxTo,
		SK: rv.SK, Inferred: rv.Flags&encoding.FlagInferred != 0, Value: value,
	}
	return attrs, nil
}

// verifyGroups checks (as part of invariant 5) that the group index of every
// grouped table holds exactly one entry per record that has a group, under the
// record's group values and transaction state, with the record's exact value
// less the group attributes (groupEntryValue);
// and that no other table has entries in keyspace 0x30.
func verifyGroups(s *Snapshot, rep *Report) error {
	grouped := map[uint32]bool{}
	for _, t := range s.db.Tables() {
		if len(t.GroupBy) == 0 {
			continue
		}
		grouped[t.ID] = true
		if err := verifyGroupTable(s, t, rep); err != nil {
			return err
		}
	}
	return eachTableID(s, layout.Groups, rep, func(tid uint32) {
		if !grouped[tid] {
			rep.add(Problem{Invariant: 5, Detail: fmt.Sprintf("group index keys of table id %d, which is not a grouped table of the catalog", tid)})
		}
	})
}

// verifyGroupTable compares the group index of t with the table's records.
// The index is in group order and the records in key order, so, like the
// sk-index and log checks (verify.go), it holds fixed-size entries rather than
// records: a pass over the records collects the hash of the index key and of
// the value each record needs (24 bytes per record), sorted; a pass over the
// index matches its entries against them; and only when a record's entry is
// missing, a third pass over the records names it. Hashes are seeded per call
// (tupleHash); a collision (2^-64 per pair) could hide a problem. It holds 24
// bytes per record, not a copy of the index, and scans instead of making a
// point read per entry (docs/design/verify-group-hashes.md).
func verifyGroupTable(s *Snapshot, t *Table, rep *Report) error {
	h := tupleHash{maphash.MakeSeed()}
	var want []groupHash
	names := s.attrNames(t)
	for _, keys := range []layout.RecordCodec{layout.CurrentKeys, layout.HistoryKeys} {
		err := decodableRecords(s, t, keys, func(v *Version, value []byte) {
			key, entry, ok, err := groupEntry(t, v, value, names.ordinal)
			if err != nil {
				rep.add(Problem{Invariant: 5, Table: t.Name, Key: v.Key, Records: []Version{*v}, Detail: fmt.Sprintf("record cannot be in the group index: %v", err)})
				return
			}
			if ok {
				want = append(want, groupHash{key: h.of(key), value: h.of(entry)})
			}
		})
		if err != nil {
			return err
		}
	}
	slices.SortFunc(want, func(a, b groupHash) int { return cmp.Compare(a.key, b.key) })
	find := func(key []byte) (int, bool) {
		return slices.BinarySearchFunc(want, h.of(key), func(w groupHash, k uint64) int { return cmp.Compare(w.key, k) })
	}
	prefix := layout.AppendTablePrefix(nil, layout.Groups, t.ID)
	it, err := s.newIter(prefix, encoding.PrefixEnd(prefix))
	if err != nil {
		return err
	}
	for ok := it.First(); ok; ok = it.Next() {
		i, found := find(it.Key())
		switch {
		case !found:
			rep.add(Problem{Invariant: 5, Table: t.Name, Key: groupEntryNaturalKey(t, it.Key()[len(prefix):]), Detail: fmt.Sprintf("group index entry %x has no matching record", it.Key())})
		case want[i].value != h.of(it.Value()):
			rep.add(Problem{Invariant: 5, Table: t.Name, Key: groupEntryNaturalKey(t, it.Key()[len(prefix):]), Detail: fmt.Sprintf("group index entry %x differs from its record", it.Key())})
		}
		if found {
			want[i].matched = true
		}
	}
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		return err
	}
	if !slices.ContainsFunc(want, func(w groupHash) bool { return !w.matched }) {
		return nil
	}
	for _, keys := range []layout.RecordCodec{layout.CurrentKeys, layout.HistoryKeys} {
		err := decodableRecords(s, t, keys, func(v *Version, _ []byte) {
			key, ok, err := groupEntryKey(t, v)
			if err != nil || !ok {
				return
			}
			i, found := find(key)
			if found && !want[i].matched {
				rep.add(Problem{Invariant: 5, Table: t.Name, Key: v.Key, Detail: fmt.Sprintf("record is missing from the group index (entry %x)", key)})
			}
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// groupHash is a group index entry by the hashes of its key and value, and
// whether the index holds it.
type groupHash struct {
	key, value uint64
	matched    bool
}

// groupEntryNaturalKey decodes the natural key of a group index entry for a
// report, or returns nil if the entry is corrupt.
func groupEntryNaturalKey(t *Table, b []byte) Key {
	rest, err := encoding.SkipKey(b, len(t.GroupBy))
	if err != nil || len(rest) == 0 {
		return nil
	}
	tuple, _, err := t.splitTuple(rest[1:])
	if err != nil {
		return nil
	}
	key, _ := t.DecodeKey(tuple)
	return key
}

// decodableRecords calls fn with every decodable record of table t in record
// keyspace keys (current or history) and its stored value, which is valid
// only during the call. Records that do not decode are skipped: Verify's own
// pass reports them.
func decodableRecords(s *Snapshot, t *Table, keys layout.RecordCodec, fn func(v *Version, value []byte)) error {
	prefix := keys.TablePrefix(nil, t.ID)
	it, err := s.newIter(prefix, encoding.PrefixEnd(prefix))
	if err != nil {
		return err
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		tuple, from, txFrom, err := keys.Decode(t.splitTuple, it.Key()[len(prefix):])
		if err != nil {
			continue
		}
		v, err := s.decodeVersion(t, tuple, from, txFrom, it.Value())
		if err != nil {
			continue
		}
		fn(&v, it.Value())
	}
	return it.Error()
}
