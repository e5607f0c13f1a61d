package store

import (
	"bytes"

	"github.com/bitempo/bitempo/engine"
	"github.com/bitempo/bitempo/layout"
)

// This file is the point read of the row view: KeyRowAt finds the version
// KeyVersionAt finds and hands it to its callback as a Row read in place,
// refilled for every read on the snapshot, instead of decoding it into a
// Version with an attribute map. Both reads share the seek and the
// classification of a miss at the latest transaction time (seekCurrent,
// currentMiss), and pastAt at an older one.

// pointRow is the row a snapshot's KeyRowAt fills, with what its reads at a
// past transaction time keep.
type pointRow struct {
	row  Row
	past Version // the version a read at a past transaction time found
	raw  *Table  // a WithRawAttrs copy of table rawOf, which past reads go through
	from *Table
	cur  engine.Iter // the snapshot's current-index iterator
}

// KeyRowAt is KeyVersionAt read in place: when key has a version in effect at
// valid time valid as known at transaction time tx, it calls fn with it as a
// Row and returns Found and fn's error, or else the error of a malformed record
// that fn's reads of the row found (as ScanRowsAt does); otherwise it returns
// the reason there is none and does not call fn. The snapshot refills the same
// Row for every KeyRowAt, so the row and what is read from it in place are
// valid only until fn returns, and only until fn makes another point read on
// the snapshot (KeyRowAt, KeyVersionAt, VersionAt), which moves the iterator
// the row reads from and refills the row. At or after LastTx a read that finds
// a version costs one seek, as KeyVersionAt's does, and allocates nothing. At
// an older transaction time the row is built from the version the read finds,
// as ScanRowsAt's rows are, which costs that read's allocations. A key that
// does not fit the table's is a *KeyError.
func (s *Snapshot) KeyRowAt(t *Table, key Key, valid, tx int64, fn func(*Row) error) (MissReason, error) {
	if s.closed {
		return 0, ErrClosed
	}
	tuple, err := t.AppendKey(s.kbuf[:0], key)
	if err != nil {
		return 0, err
	}
	s.kbuf = tuple
	r := s.pointRow(t)
	if tx < s.lastTx {
		if err := s.checkHorizon(t, tx); err != nil {
			return 0, err
		}
		p := &s.point
		if p.from != t {
			p.raw, p.from = t.WithRawAttrs(), t
		}
		var reason MissReason
		if p.past, reason, err = s.pastAt(p.raw, tuple, valid, tx); err != nil || reason != Found {
			return reason, err
		}
		if err := r.fillPast(&p.past); err != nil {
			return 0, err
		}
		return Found, firstError(fn(r), r.err)
	}
	it, prefix, from, ok, err := s.seekCurrent(t, tuple, valid)
	if err != nil {
		return 0, err
	}
	if ok {
		if err := r.fillCurrent(tuple, it.Value(), from); err != nil {
			return 0, err
		}
		if valid < r.ValidTo {
			return Found, firstError(fn(r), r.err)
		}
	}
	return s.currentMiss(it, prefix, ok)
}

// pointRow returns the snapshot's point row, reset for a read of table t.
func (s *Snapshot) pointRow(t *Table) *Row {
	r := &s.point.row
	if r.t != t || r.s != s {
		a := s.attrNames(t)
		r.s, r.t, r.names, r.name = s, t, a, a.nameFn
	}
	r.err = nil
	return r
}

// seekCurrent positions the snapshot's current-index iterator on the record of
// the key encoded as tuple with the greatest valid_from <= valid, with one
// prefix seek, and returns the iterator, the key's record prefix (held in
// s.buf) and, when there is such a record (ok), its valid_from.
func (s *Snapshot) seekCurrent(t *Table, tuple []byte, valid int64) (it engine.Iter, prefix []byte, from int64, ok bool, err error) {
	if it = s.point.cur; it == nil {
		if it, err = s.iter(layout.Current); err != nil {
			return nil, nil, 0, false, err
		}
		s.point.cur = it
	}
	prefix = layout.CurrentKeys.KeyPrefix(s.buf[:0], t.ID, tuple)
	s.buf = layout.CurrentKeys.AppendValid(prefix, valid)
	if it.SeekPrefixGE(s.buf) && bytes.HasPrefix(it.Key(), prefix) {
		from, err = layout.CurrentKeys.ValidFrom(it.Key(), len(prefix))
		return it, prefix, from, err == nil, err
	}
	return it, prefix, 0, false, it.Error()
}

// currentMiss explains a read at the latest transaction time that found no
// version in effect, from where seekCurrent left the iterator: on the record
// that starts at or before the valid time and has ended (ended), or on none.
func (s *Snapshot) currentMiss(it engine.Iter, prefix []byte, ended bool) (MissReason, error) {
	if ended {
		// A gap if a later version exists (it sorts just before this one),
		// else after the last. A prefix seek cannot step back: seek below the
		// found key instead. (prefix is the front of s.buf, and of that key.)
		s.buf = append(s.buf[:0], it.Key()...)
		later := it.SeekLT(s.buf) && bytes.HasPrefix(it.Key(), prefix)
		return ClassifyMiss(true, later), it.Error()
	}
	// Nothing starts at or before the valid time: is there a later version?
	later := it.SeekPrefixGE(prefix) && bytes.HasPrefix(it.Key(), prefix)
	return ClassifyMiss(false, later), it.Error()
}
