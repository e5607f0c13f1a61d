package store

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/engine"
	"github.com/bitempo/bitempo/layout"
)

// This file holds the batch lookup behind query.Resolve: probes sorted by key
// and descending valid time, merged against the current-state index with one
// forward pass of one iterator.

// Probe is one lookup of a batch: the version of the key encoded as Tuple in
// effect at valid time Valid, as known at transaction time Tx.
type Probe struct {
	Tuple []byte
	Valid int64
	Tx    int64
}

// LookupSorted answers a batch of probes sorted by Tuple ascending and, for equal
// tuples, by Valid descending (a key's versions are stored newest first), calling
// fn once per probe in order with the probe's index, the version found and the
// reason for a miss (v is then zero). Probes at or after LastTx are merged
// against the current-state index in one forward pass of one iterator, which
// steps through a key's versions or seeks ahead when the next probe is far.
// Older probes are merged too, with one forward pass of an iterator over the
// current index and one over history (lookuppast.go): each probed key's
// versions alive at the probe's transaction time are read once and answer
// every probe of that key and time. v is valid only during fn: its Key is nil (the
// caller knows the key) and its Attrs are decoded only when attrs is set. A batch
// that is not sorted fails before any lookup.
func (s *Snapshot) LookupSorted(t *Table, probes []Probe, attrs bool, fn func(i int, v *Version, r MissReason)) (err error) {
	if s.closed {
		return ErrClosed
	}
	var first, last = -1, -1
	var firstPast, lastPast = -1, -1
	for i := range probes {
		if i > 0 {
			c := bytes.Compare(probes[i-1].Tuple, probes[i].Tuple)
			if c > 0 || (c == 0 && probes[i-1].Valid < probes[i].Valid) {
				return fmt.Errorf("%w: LookupSorted: probe %d is out of order", ErrInvalidUse, i)
			}
		}
		if probes[i].Tx >= s.lastTx {
			if first < 0 {
				first = i
			}
			last = i
		} else {
			if firstPast < 0 {
				firstPast = i
			}
			lastPast = i
		}
	}
	var past *pastMerge
	if firstPast >= 0 {
		if past, err = s.newPastMerge(t, probes[firstPast].Tuple, probes[lastPast].Tuple, attrs); err != nil {
			return err
		}
		defer func() { err = firstError(err, past.close()) }()
	}
	var m *merge
	if first >= 0 {
		pfx := layout.CurrentKeys.TablePrefix(nil, t.ID)
		lower := append(slices.Clip(pfx), probes[first].Tuple...)
		it, err := s.newIter(lower, encoding.PrefixEnd(append(slices.Clip(pfx), probes[last].Tuple...)))
		if err != nil {
			return err
		}
		defer func() { err = firstError(err, it.Error(), it.Close()) }()
		m = &merge{s: s, t: t, it: it, pfxLen: len(pfx), attrs: attrs, ok: it.First()}
	}
	var v Version // one for the whole batch: fn sees it only during its call
	var r MissReason
	for i := range probes {
		p := &probes[i]
		if p.Tx < s.lastTx {
			if r, err = past.lookup(probes, i, &v); err != nil {
				return err
			}
			if !attrs {
				v.Attrs = nil
			}
			fn(i, &v, r)
			continue
		}
		if m.keyPfx == nil || !bytes.Equal(m.keyPfx[m.pfxLen:], p.Tuple) {
			if err := m.enterKey(p.Tuple); err != nil {
				return err
			}
		}
		if v, r, err = m.lookup(p.Valid); err != nil {
			return err
		}
		fn(i, &v, r)
	}
	return nil
}

// merge is the state of LookupSorted's forward pass over the current index.
type merge struct {
	s       *Snapshot
	t       *Table
	it      engine.Iter
	pfxLen  int
	attrs   bool
	ok      bool   // the iterator is positioned
	keyPfx  []byte // keyspace | table id | tuple of the key being probed
	inKey   bool   // the iterator is on a record of that key
	exists  bool   // the key has a record
	atFirst bool   // the iterator is on the key's newest record
	seek    []byte
}

// enterKey positions the iterator on the newest record of tuple's key, stepping
// over what lies before it or seeking when that is more than a few records.
func (m *merge) enterKey(tuple []byte) error {
	m.keyPfx = layout.CurrentKeys.KeyPrefix(m.keyPfx[:0], m.t.ID, tuple)
	for steps := 0; m.ok; steps++ {
		if bytes.Compare(m.it.Key(), m.keyPfx) >= 0 {
			break
		}
		if steps == nextsBeforeSeek {
			m.ok = m.it.SeekGE(m.keyPfx)
			break
		}
		m.ok = m.it.Next()
	}
	m.inKey = m.ok && bytes.HasPrefix(m.it.Key(), m.keyPfx)
	m.exists, m.atFirst = m.inKey, m.inKey
	return m.it.Error()
}

// lookup finds the version of the current key in effect at valid, moving forward
// from the iterator's position (probes of a key come in descending valid order).
func (m *merge) lookup(valid int64) (Version, MissReason, error) {
	if !m.exists {
		return Version{}, UnknownKey, nil
	}
	for moves := 0; m.inKey; moves++ {
		from, err := layout.CurrentKeys.ValidFrom(m.it.Key(), len(m.keyPfx))
		if err != nil {
			return Version{}, 0, err
		}
		if from <= valid {
			return m.found(from, valid)
		}
		if moves < nextsBeforeSeek {
			m.ok = m.it.Next()
		} else {
			m.seek = layout.CurrentKeys.AppendValid(append(m.seek[:0], m.keyPfx...), valid)
			m.ok = m.it.SeekGE(m.seek)
		}
		m.atFirst = false
		m.inKey = m.ok && bytes.HasPrefix(m.it.Key(), m.keyPfx)
	}
	return Version{}, ClassifyMiss(false, true), m.it.Error()
}

// found classifies the iterator's record, the key's version with the greatest
// valid_from <= valid.
func (m *merge) found(from, valid int64) (Version, MissReason, error) {
	// With a WithRawAttrs table the head is decoded once, its attributes left
	// in stored form (raw, valid only during LookupSorted's fn).
	value := m.it.Value()
	split := m.attrs && m.t.rawAttrs && !encoding.SharesAttrs(value)
	var head encoding.RecordValue
	var b []byte
	var err error
	if split {
		head, b, err = m.s.decodeHeadSplit(m.t, value, from, 0)
	} else {
		head, err = m.s.decodeHead(m.t, value, from, 0)
	}
	if err != nil {
		return Version{}, 0, err
	}
	if valid >= head.ValidTo { // a later version, if any, sorts before this one
		return Version{}, ClassifyMiss(true, !m.atFirst), nil
	}
	var raw RawAttrs
	switch {
	case split:
		raw = RawAttrs{b: b, name: m.s.attrNames(m.t).nameFn, proj: m.t.proj}
	case m.attrs:
		if head, err = m.s.decodeRecord(m.t, value, from, 0); err != nil {
			return Version{}, 0, err
		}
	}
	return Version{
		ValidFrom: from, ValidTo: head.ValidTo, TxFrom: head.TxFrom, TxTo: head.TxTo, SK: head.SK,
		Attrs: head.Attrs, Inferred: head.Flags&encoding.FlagInferred != 0, tuple: m.keyPfx[m.pfxLen:], raw: raw,
	}, Found, nil
}
