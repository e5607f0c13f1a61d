package store

import (
	"bytes"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/engine"
	"github.com/bitempo/bitempo/layout"
)

// This file is the history walk: the versions of many keys over a valid
// period, each handed over as a Row filled in place from the stored record.
// ScanHistory is the copying convenience over the same walk (Row.Version).

// ScanHistoryRows calls fn with the versions alive at transaction time tx of
// every key of span that overlap the valid period [from, to), ordered by key
// and then valid time, starting after position after when it is not nil.
// fn gets the same Row every time, valid until it returns; it returns false
// to stop the scan. A malformed record that fn's reads of the row find ends
// the scan with their error.
//
// At or after LastTx it reads the current-state index backwards from the
// start of the period: a few seeks per key plus one step per version
// returned. At an older transaction time it steps forwards through each
// key's records in the current index and in history, decoding the head of
// each and the attributes of none, and copies the records it returns, so a
// key costs the number of its records and no seek. Neither allocates per
// row, except for a retired record that shares its successor's attributes
// (Writer.shareAttrs) when the successor is not the current record of the
// same valid_from (an SCD2 close's is): finding them costs a point read or
// two per record of the chain.
func (s *Snapshot) ScanHistoryRows(t *Table, span Span, tx, from, to int64, after *HistoryPos, fn func(*Row) bool) error {
	return s.scanHistory(t, span, tx, from, to, after, func(r *Row) (bool, error) {
		more := fn(r)
		return more && r.err == nil, r.err
	})
}

// scanHistory is ScanHistoryRows with a callback that may fail.
func (s *Snapshot) scanHistory(t *Table, span Span, tx, from, to int64, after *HistoryPos, each func(*Row) (bool, error)) error {
	if after != nil {
		span = span.from(after.Tuple)
	}
	switch {
	case s.closed:
		return ErrClosed
	case span.empty() || from >= to:
		return nil
	case tx >= s.lastTx:
		return s.historyCurrent(t, span, from, to, after, each)
	}
	if err := s.checkHorizon(t, tx); err != nil {
		return err
	}
	return s.historyPast(t, span, tx, from, to, after, each)
}

func (s *Snapshot) historyCurrent(t *Table, span Span, from, to int64, after *HistoryPos, each func(*Row) (bool, error)) (err error) {
	lower, upper := span.bounds(layout.CurrentKeys, t.ID)
	it, err := s.newIter(lower, upper)
	if err != nil {
		return err
	}
	defer func() { err = firstError(err, it.Close()) }()
	h := &keyHistory{r: s.newRow(t), it: it, pfxLen: len(lower) - len(span.Start), from: from, to: to, each: each}
	for ok := it.First(); ok; {
		kp, _, err := layout.CurrentKeys.Split(it.Key(), h.pfxLen)
		if err != nil {
			return err
		}
		h.keyPfx = append(h.keyPfx[:0], kp...)
		h.resume = after != nil && bytes.Equal(kp[h.pfxLen:], after.Tuple)
		if h.resume {
			h.after = after.ValidFrom
		}
		if more, err := h.run(); !more || err != nil {
			return err
		}
		next := h.keyEnd()
		if bytes.Compare(next, upper) >= 0 {
			break // the span holds no further key (a single-key history ends here)
		}
		ok = it.SeekGE(next)
	}
	return it.Error()
}

// keyHistory hands over the versions of one key overlapping [from, to) from
// the current index, in ascending valid order. The index holds a key's
// versions newest first, so it seeks to the start of the period and steps
// backwards.
type keyHistory struct {
	r      *Row
	it     engine.Iter
	pfxLen int
	from   int64
	to     int64
	keyPfx []byte
	resume bool  // the key is the one the scan resumes in
	after  int64 // with resume: only versions starting after it
	seek   []byte
	each   func(*Row) (bool, error)
}

// run hands over the key's versions, starting with the iterator on the key's
// newest record; it reports false when the scan has ended.
func (h *keyHistory) run() (bool, error) {
	var ok bool
	r := h.r
	switch {
	case h.resume && h.after >= h.from:
		ok = h.it.SeekLT(h.seekKey(h.after)) // the first version starting after h.after
	case h.from == NegInfinity:
		ok = h.it.SeekLT(h.keyEnd()) // the key's first version
	default:
		// The version with the greatest valid_from <= from may overlap the period;
		// when it is the newest, it is the only one that can.
		if err := h.fill(); err != nil {
			return false, err
		}
		newest := r.ValidFrom <= h.from
		if !newest {
			if ok = h.it.SeekGE(h.seekKey(h.from)); !ok || !bytes.HasPrefix(h.it.Key(), h.keyPfx) {
				ok = h.it.SeekLT(h.seekKey(h.from)) // every version starts after from
				break
			}
			if err := h.fill(); err != nil {
				return false, err
			}
		}
		if r.ValidTo > h.from && (!h.resume || r.ValidFrom > h.after) {
			if more, err := h.each(r); !more || err != nil {
				return false, err
			}
		}
		if newest {
			return true, nil
		}
		ok = h.it.Prev()
	}
	for ; ok && bytes.HasPrefix(h.it.Key(), h.keyPfx); ok = h.it.Prev() {
		if err := h.fill(); err != nil {
			return false, err
		}
		if r.ValidFrom >= h.to {
			break
		}
		if more, err := h.each(r); !more || err != nil {
			return false, err
		}
	}
	return true, h.it.Error()
}

// keyEnd returns the least key after every record of the key (keyPfx starts
// with the current keyspace's byte, not 0xff, so there is one).
func (h *keyHistory) keyEnd() []byte {
	h.seek = encoding.PrefixEndInPlace(append(h.seek[:0], h.keyPfx...))
	return h.seek
}

func (h *keyHistory) seekKey(t int64) []byte {
	h.seek = layout.CurrentKeys.AppendValid(append(h.seek[:0], h.keyPfx...), t)
	return h.seek
}

// fill points the row at the record the iterator is on.
func (h *keyHistory) fill() error {
	from, err := layout.CurrentKeys.ValidFrom(h.it.Key(), len(h.keyPfx))
	if err != nil {
		return err
	}
	return h.r.fillCurrent(h.keyPfx[h.pfxLen:], h.it.Value(), from)
}

// historyPast hands over the versions alive at the past transaction time tx
// of every key of span that overlap [from, to). It walks the current index
// and history side by side, key by key (pastKeys).
func (s *Snapshot) historyPast(t *Table, span Span, tx, from, to int64, after *HistoryPos, each func(*Row) (bool, error)) (err error) {
	w := &pastKeys{r: s.newRow(t), tx: tx, from: from, to: to, each: each}
	for i, keys := range []layout.RecordCodec{layout.CurrentKeys, layout.HistoryKeys} {
		lower, upper := span.bounds(keys, t.ID)
		it, err := s.newIter(lower, upper)
		if err != nil {
			return firstError(err, w.close())
		}
		w.idx[i] = pastIndex{keys: keys, it: it, pfxLen: len(lower) - len(span.Start)}
	}
	defer func() { err = firstError(err, w.close()) }()
	for i := range w.idx {
		if err := w.idx[i].load(w.idx[i].it.First()); err != nil {
			return err
		}
	}
	for {
		tuple := w.least()
		if tuple == nil {
			return nil
		}
		w.tuple = append(w.tuple[:0], tuple...)
		w.resume = after != nil && bytes.Equal(w.tuple, after.Tuple)
		if w.resume {
			w.after = after.ValidFrom
		}
		if err := w.collect(); err != nil {
			return err
		}
		if more, err := w.emit(); !more || err != nil {
			return err
		}
	}
}

// pastKeys walks the keys of a history read at a past transaction time. For
// each key it steps forwards through the key's records in both indexes, both
// newest valid_from first, merging them by valid_from: it keeps a copy of
// each record alive at the read's transaction time (at most one per
// valid_from) that the read returns, then hands them over oldest first. It
// never seeks: the step off a key's last record lands on the next key's
// first.
type pastKeys struct {
	r        *Row
	idx      [2]pastIndex // the current index and history
	tx       int64
	from, to int64
	tuple    []byte // the key being walked
	resume   bool   // the key is the one the scan resumes in
	after    int64  // with resume: only versions starting after it
	recs     []keptRec
	vals     []byte // the values recs point into
	each     func(*Row) (bool, error)
}

// keptRec is a record pastKeys keeps: where its key's valid_from and tx_from
// say it is, and its value, and its successor's for a record that shares
// the successor's attributes, in pastKeys.vals.
type keptRec struct {
	from, keyTx int64
	val, succ   [2]int // [start, end) in vals; an empty succ: none kept
}

// pastIndex is one record keyspace of a pastKeys walk: its iterator and the
// record it is on.
type pastIndex struct {
	keys   layout.RecordCodec
	it     engine.Iter
	pfxLen int
	on     bool   // the iterator is on a record (of keyPfx)
	keyPfx []byte // keyspace | table id | tuple of that record
	from   int64  // its valid_from
}

// load records the key and valid_from of the iterator's position.
func (x *pastIndex) load(ok bool) error {
	if x.on = ok; !ok {
		return x.it.Error()
	}
	kp, from, err := x.keys.Split(x.it.Key(), x.pfxLen)
	x.keyPfx, x.from = append(x.keyPfx[:0], kp...), from
	return err
}

func (x *pastIndex) tuple() []byte { return x.keyPfx[x.pfxLen:] }

// least returns the smallest tuple the indexes are on, or nil at the end.
func (w *pastKeys) least() []byte {
	var least []byte
	for i := range w.idx {
		if x := &w.idx[i]; x.on && (least == nil || bytes.Compare(x.tuple(), least) < 0) {
			least = x.tuple()
		}
	}
	return least
}

// next returns the index on the key's record of greatest valid_from, or nil
// when both have left the key. Of a valid_from in both, the current record
// comes first, so that collect has it when history's record of the same
// valid_from shares its attributes.
func (w *pastKeys) next() *pastIndex {
	var most *pastIndex
	for i := range w.idx {
		x := &w.idx[i]
		if x.on && bytes.Equal(x.tuple(), w.tuple) && (most == nil || x.from > most.from) {
			most = x
		}
	}
	return most
}

// collect steps both indexes through the records of key w.tuple, keeping
// those the read returns in w.recs, newest valid_from first.
func (w *pastKeys) collect() error {
	w.recs, w.vals = w.recs[:0], w.vals[:0]
	var cur keptRec // the last current record stepped over, when its value is kept
	var curHead encoding.RecordValue
	for x := w.next(); x != nil; x = w.next() {
		keyTx, err := x.keys.TxFrom(x.it.Key()) // 0 in the current index
		if err != nil {
			return err
		}
		value := x.it.Value()
		head, err := w.r.s.decodeHead(w.r.t, value, x.from, keyTx)
		if err != nil {
			return err
		}
		current := x == &w.idx[0]
		if current {
			// A successor of history's record of the same valid_from, if it
			// shares its attributes.
			cur, curHead = keptRec{from: x.from, val: w.keep(value)}, head
		}
		if head.TxFrom <= w.tx && w.tx < head.TxTo && head.ValidTo > w.from && x.from < w.to && (!w.resume || x.from > w.after) {
			rec := keptRec{from: x.from, keyTx: keyTx, val: cur.val}
			if !current {
				rec.val = w.keep(value)
				if encoding.SharesAttrs(value) && cur.val != [2]int{} && cur.from == x.from &&
					curHead.TxFrom == head.TxTo && curHead.SK == head.SK {
					rec.succ = cur.val // an SCD2 close: the successor is the current record
				}
			}
			w.recs = append(w.recs, rec)
		}
		if err := x.load(x.it.Next()); err != nil {
			return err
		}
	}
	return nil
}

// keep copies value into w.vals and returns where it is.
func (w *pastKeys) keep(value []byte) [2]int {
	w.vals = append(w.vals, value...)
	return [2]int{len(w.vals) - len(value), len(w.vals)}
}

// emit hands over the records collect kept, oldest valid_from first; it
// reports false when the scan has ended.
func (w *pastKeys) emit() (bool, error) {
	for i := len(w.recs) - 1; i >= 0; i-- {
		rec := &w.recs[i]
		var succ []byte
		if rec.succ != [2]int{} {
			succ = w.vals[rec.succ[0]:rec.succ[1]]
		}
		if err := w.r.fillRecord(w.tuple, w.vals[rec.val[0]:rec.val[1]], rec.from, rec.keyTx, succ); err != nil {
			return false, err
		}
		if more, err := w.each(w.r); !more || err != nil {
			return false, err
		}
	}
	return true, nil
}

func (w *pastKeys) close() error {
	var first error
	for _, x := range w.idx {
		if x.it != nil {
			first = firstError(first, x.it.Close())
		}
	}
	return first
}
