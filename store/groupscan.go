package store

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/engine"
	"github.com/bitempo/bitempo/layout"
)

// This file reads the group index (groups.go) of one table one group after
// another, for batch reads that visit many groups (a backfill). Where
// GroupRecords opens an iterator per group, a GroupScan keeps one over the
// table's whole index and seeks it to each group; when the groups come in
// index order and the last group was read to its end, the iterator already
// stands on the next group's first entry and no seek is made. Each entry is
// decoded once (decodeGroupEntry), its attributes handed over in stored form
// without decoding the record's head a second time. It reads the same entries
// as GroupRecords, with the same checks and errors.

// GroupScan reads the groups of one table's group index through one iterator.
// It belongs to one goroutine and must be closed; the snapshot must outlive it.
type GroupScan struct {
	s      *Snapshot
	t      *Table
	it     engine.Iter // over the table's whole group index; nil until the first group
	seek   []byte      // the key the last group was sought at
	prev   []byte      // the one before it (a buffer reused for the next seek)
	ended  bool        // the last group was read to its end: it stands past it
	entry  GroupEntry
	values groupValues // the current group's attributes
	skip   []byte      // a seek key past entries outside the valid span
}

// GroupEntry is one entry of a group as GroupScan.Group hands it over: the
// record (Attrs decodes its attributes) and its attributes in stored form.
// Its slices belong to the scan and are valid only during the call.
type GroupEntry struct {
	GroupRecord
	attrs []byte // the entry's positional attributes, unchecked
}

// RawAttrs is GroupRecord.RawAttrs for an entry whose head was split from its
// attributes as it was read: the attributes in stored form, walked as
// projected by the scan's table, and true; or false when the record shares
// its successor's attributes, which Attrs then reads. The group attributes
// are put back only when the scan's table walks one of them: a projection
// that leaves them out walks the entry's own bytes.
func (e *GroupEntry) RawAttrs() (RawAttrs, bool, error) {
	if encoding.SharesAttrs(e.Value) {
		return RawAttrs{}, false, nil
	}
	attrs, err := e.values.rawAttrs(e.attrs)
	if err != nil {
		return RawAttrs{}, false, err
	}
	return RawAttrs{b: attrs, name: e.names.nameFn, proj: e.t.proj}, true, nil
}

// GroupScan returns a scan of the group index of t, read through t (a
// projected table walks only its attributes). Reads of a table without
// GroupBy fail with ErrNotGrouped, as GroupRecords does.
func (s *Snapshot) GroupScan(t *Table) *GroupScan {
	return &GroupScan{s: s, t: t}
}

// Group calls fn with each entry of the group encoded as group (by
// AppendGroupKey) that GroupRecords(t, group, minTx, maxTx) yields, in the same
// order. An error from fn stops the scan and is returned as is.
func (g *GroupScan) Group(group []byte, minTx, maxTx int64, fn func(*GroupEntry) error) error {
	return g.GroupMeeting(group, minTx, maxTx, NegInfinity, Infinity, fn)
}

// GroupMeeting is Group for only the entries whose valid period meets [from,
// to] (both ends included): it calls fn with those, in the same order, and
// skips the rest without reading what it can seek past. A key's entries come
// newest valid_from first, so a run of them starting after to ends with a seek
// to the first that starts at or before to; and its current entries are
// disjoint, so once one ends at or before from, so do all after it, and the
// scan moves on to the next key. A run of up to nextsBeforeSeek entries is
// stepped over rather than sought past.
func (g *GroupScan) GroupMeeting(group []byte, minTx, maxTx, from, to int64, fn func(*GroupEntry) error) error {
	s, t := g.s, g.t
	switch {
	case s.closed:
		return ErrClosed
	case len(t.GroupBy) == 0:
		return fmt.Errorf("%w: table %q", ErrNotGrouped, t.Name)
	}
	if minTx < s.lastTx {
		if err := s.checkHorizon(t, minTx); err != nil {
			return err
		}
	}
	// The entries are the keys prefix | marker | ..., marker at most last.
	last := groupHistory
	if minTx >= s.lastTx {
		last = groupCurrent
	}
	ok, err := g.position(group)
	if err != nil {
		return err
	}
	n := len(g.seek) - 1 // the prefix 0x30 | tid | group tuple
	names := s.attrNames(t)
	g.values.reset(t, names, g.seek[len(g.seek)-len(group)-1:n])
	e := &g.entry
	run := 0 // entries skipped in a row; a seek within a key uses the key of the entry it stands on
	for ok {
		key := g.it.Key()
		if !bytes.HasPrefix(key, g.seek[:n]) || len(key) == n || key[n] > last {
			break
		}
		attrs, err := s.decodeGroupEntry(t, key[n:], g.it.Value(), &e.GroupRecord)
		if err != nil {
			return err
		}
		suffix := layout.TimeLen // desc(valid_from)
		if key[n] == groupHistory {
			suffix = 2 * layout.TimeLen // and desc(tx_from)
		}
		keyPfx := key[:len(key)-suffix] // prefix | marker | tuple
		switch {
		case e.ValidFrom > to: // the key's next entries may start at or before to
			if run++; run > nextsBeforeSeek {
				g.skip = layout.CurrentKeys.AppendValid(append(g.skip[:0], keyPfx...), to)
				ok, run = g.it.SeekGE(g.skip), 0
				continue
			}
		case e.ValidTo <= from && key[n] == groupCurrent: // so do the key's next current entries
			ok, run = g.skipKey(keyPfx), 0
			continue
		case e.ValidTo <= from:
		case last == groupHistory && (e.TxFrom > maxTx || e.TxTo <= minTx):
			run = 0
		default:
			run = 0
			e.names, e.t, e.values, e.attrs = names, t, &g.values, attrs
			if err := fn(e); err != nil {
				return err
			}
		}
		ok = g.it.Next()
	}
	if err := g.it.Error(); err != nil {
		return err
	}
	g.ended = true
	return nil
}

// skipKey moves the iterator past the entries under keyPfx (a key's current
// entries; a slice of the iterator's key, copied before it moves): a few
// steps, then a seek.
func (g *GroupScan) skipKey(keyPfx []byte) bool {
	g.skip = append(g.skip[:0], keyPfx...)
	for steps := 0; ; steps++ {
		if !g.it.Next() {
			return false
		}
		if !bytes.HasPrefix(g.it.Key(), g.skip) {
			return true
		}
		if steps == nextsBeforeSeek {
			return g.it.SeekGE(encoding.PrefixEndInPlace(g.skip))
		}
	}
}

// position moves the iterator to the first entry of group, creating it on
// first use, and reports whether it stands on a key. A scan that read the last
// group to its end stands on the first key after the entries it read, and
// every key before it is at most one of them; so for a later group (whose keys
// all sort after the last group's), when the group's first possible key is at
// most the iterator's key, the iterator stands on the group's first entry.
func (g *GroupScan) position(group []byte) (bool, error) {
	g.prev, g.seek = g.seek, append(groupPrefix(g.prev[:0], g.t.ID, group), groupCurrent)
	from := g.prev
	ended := g.ended
	g.ended = false
	if g.it == nil {
		prefix := layout.AppendTablePrefix(nil, layout.Groups, g.t.ID)
		it, err := g.s.newIter(prefix, encoding.PrefixEnd(prefix))
		if err != nil {
			return false, err
		}
		g.it = it
	} else if ended && bytes.Compare(from, g.seek) < 0 && (!g.it.Valid() || bytes.Compare(g.seek, g.it.Key()) <= 0) {
		return g.it.Valid(), nil
	}
	return g.it.SeekGE(g.seek), nil
}

// Close releases the scan's iterator.
func (g *GroupScan) Close() error {
	if g.it == nil {
		return nil
	}
	it := g.it
	g.it = nil
	return errors.Join(it.Error(), it.Close())
}
