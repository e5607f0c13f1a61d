package store

import (
	"bytes"
	"fmt"
	"iter"
	"slices"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/engine"
	"github.com/bitempo/bitempo/layout"
)

// This file holds the multi-key reads package query builds on: snapshot scans,
// history scans, the sk index, the transaction log and sorted batch lookups. They
// walk the record keyspaces key by key, seeking past a key's records instead of
// stepping through its history, so their cost follows the number of keys and the
// rows they return.
//
// Scans returned as iter.Seq2 own the iterators that keep their position across
// iterations and close them when the loop ends, however it ends. Per-key lookups
// inside a scan use the snapshot's cached iterators, which hold no position
// between calls; so a loop body may issue other reads on the same snapshot, but
// the snapshot must stay open, and on one goroutine, until the loop ends.

// nextsBeforeSeek is how many Next calls a scan spends looking for the next key
// (or the next version it needs) before it seeks instead. A key with few records
// left is cheaper to step over than to seek past; one with many costs one seek.
const nextsBeforeSeek = 4

// stepsToValid is how many Next calls a snapshot scan spends stepping from a
// key's newest version back to the one in effect before it seeks instead
// (stepToValid). It is larger than nextsBeforeSeek: a seek inside the key
// also makes the scan leave the key with a second seek (keySkipper), so a step
// saves more here (BenchmarkSnapshotRows, valid-mid-1: the answer five
// versions back).
const stepsToValid = 8

// Span is a range of natural keys of one table, as encoded tuples: every key whose
// tuple k satisfies Start <= k < End, bytewise. A nil Start or End leaves that side
// open. Partial keys (leading components, encoded by Table.AppendKeyPrefix) make
// prefix and range scans: every key that starts with Start's components sorts at
// or after Start, and every key that starts with End's sorts after End, so it is
// excluded.
type Span struct {
	Start, End []byte
}

// PrefixSpan returns the span of the keys that start with the encoded partial
// key prefix (all keys when prefix is empty).
func PrefixSpan(prefix []byte) Span {
	if len(prefix) == 0 {
		return Span{}
	}
	return Span{Start: prefix, End: encoding.PrefixEnd(prefix)}
}

// empty reports whether the span holds no key at all.
func (sp Span) empty() bool {
	return sp.End != nil && bytes.Compare(sp.Start, sp.End) >= 0
}

// bounds returns the iterator bounds of the span in record keyspace r of table
// tid.
func (sp Span) bounds(r layout.RecordCodec, tid uint32) (lower, upper []byte) {
	return sp.boundsIn(r.TablePrefix(nil, tid))
}

// boundsIn returns the iterator bounds of the span among the keys pfx | tuple,
// where pfx is a table's prefix in a keyspace whose keys continue with tuples.
func (sp Span) boundsIn(pfx []byte) (lower, upper []byte) {
	lower = append(slices.Clip(pfx), sp.Start...)
	if sp.End != nil {
		upper = append(slices.Clip(pfx), sp.End...)
	} else {
		upper = encoding.PrefixEnd(pfx)
	}
	return lower, upper
}

// from returns the span narrowed to keys at or after tuple.
func (sp Span) from(tuple []byte) Span {
	if bytes.Compare(tuple, sp.Start) > 0 {
		sp.Start = tuple
	}
	return sp
}

// yielder delivers the values of an iter.Seq2 and remembers when the loop has
// ended, so that an error found later (closing an iterator) is never passed to a
// loop that has already stopped.
type yielder[T any] struct {
	yield func(T, error) bool
	done  bool
}

func (y *yielder[T]) emit(v T) bool {
	if !y.done && !y.yield(v, nil) {
		y.done = true
	}
	return !y.done
}

func (y *yielder[T]) fail(err error) {
	if err != nil && !y.done {
		y.done = true
		var zero T
		y.yield(zero, err)
	}
}

// keySkipper moves a scan's iterator from a record of one key to the first
// record of the next: a few Next calls, then, when the engine can and the
// key's records are exactly one engine prefix (a table with a one-column key,
// comparer.go), one NextPrefix, else one seek.
//
// How many Next calls it tries first is learned from the scan's own keys. A
// Next costs a fraction of a NextPrefix or a seek, so stepping over a key's
// remaining records is cheaper while there are few of them and costlier when
// there are many: on a store of ten versions per key, stepping up to 16 times
// took 5-8% less time than 4 steps and a NextPrefix, and on one of a hundred
// versions per key 35-40% more (BenchmarkSnapshotRows,
// BenchmarkSnapshotRowsLongHistories; docs/design/scan-learned-steps.md). A
// scan lands on a key's newest version, or a few versions in, and never sees
// how many records the key has left; so every probeEvery keys the skipper
// steps up to maxSkipSteps times and counts. When that probe reaches the next
// key after s steps, the next keys get s+2 steps (at least nextsBeforeSeek);
// when it does not, nextsBeforeSeek. A probe over long histories costs at
// most maxSkipSteps Next calls per probeEvery keys. Where a skip lands does
// not depend on the count: only how many Next calls it spends.
//
// NextPrefix is Pebble's step to the next prefix: it skips the rest of the
// key's records inside the data block it is in (Pebble marks, per entry,
// whether its prefix repeats the previous one) and seeks only the levels
// whose block ends first, where a SeekGE starts over from every level's
// index. CockroachDB's MVCC scanner does the same (a few Next calls, then a
// seek or NextPrefix). A composite key's records span several keys of one
// engine prefix (its first column), and NextPrefix would skip the others: it
// seeks, as an engine without NextPrefix does.
type keySkipper struct {
	steps int    // Next calls before NextPrefix or a seek; 0 before the first key
	keys  int    // keys skipped so far
	end   []byte // the seek key, reused from call to call
}

// Bounds of keySkipper's learned steps.
const (
	maxSkipSteps = 16  // the most Next calls a skip (or a probe) makes
	probeEvery   = 256 // keys from one probe to the next
)

// skip moves it, positioned on a record of the key whose records start with
// keyPfx, to the first record of the next key, and reports whether it stands
// on a record.
//
// With seekNext set the caller expects to seek again inside the next key (a
// snapshot at a valid time older than the keys' newest versions): it seeks,
// since Pebble turns a seek that follows a seek to a smaller key into a few
// steps, and a seek after NextPrefix starts over from every level.
func (k *keySkipper) skip(it engine.Iter, keyPfx []byte, seekNext bool) bool {
	steps, probe := k.steps, k.keys%probeEvery == 0
	k.keys++
	if probe {
		steps = maxSkipSteps
	}
	for i := range steps {
		if !it.Next() {
			return false
		}
		if !bytes.HasPrefix(it.Key(), keyPfx) {
			if probe { // i+1 steps left this key: two more for keys a little longer
				k.steps = max(nextsBeforeSeek, min(i+3, maxSkipSteps))
			}
			return true
		}
	}
	if probe {
		k.steps = nextsBeforeSeek
	}
	if np, ok := it.(nextPrefixer); ok && !seekNext && layout.Split(it.Key()) == len(keyPfx) {
		if np.NextPrefix() {
			return true
		}
		if it.Error() == nil {
			return false
		}
		// Pebble refuses NextPrefix under an upper bound inside a prefix
		// (no bound the scans set is one): seek instead, which clears it.
	}
	k.end = encoding.PrefixEndInPlace(append(k.end[:0], keyPfx...))
	if len(k.end) == 0 {
		return false // keyPfx is all 0xff: no key follows it
	}
	return it.SeekGE(k.end)
}

// nextPrefixer is an engine iterator that can step to the first key of the
// next engine prefix (Pebble's Iterator.NextPrefix); see keySkipper.
type nextPrefixer interface {
	NextPrefix() bool
}

// keyCursor walks the distinct keys of one record keyspace of a table in order.
type keyCursor struct {
	it     engine.Iter
	keys   layout.RecordCodec
	pfxLen int
	ok     bool
	keyPfx []byte // keyspace | table id | tuple of the current key
	skip   keySkipper
}

func (s *Snapshot) newKeyCursor(keys layout.RecordCodec, t *Table, span Span) (*keyCursor, error) {
	lower, upper := span.bounds(keys, t.ID)
	it, err := s.newIter(lower, upper)
	if err != nil {
		return nil, err
	}
	c := &keyCursor{it: it, keys: keys, pfxLen: len(lower) - len(span.Start)}
	c.ok = it.First()
	return c, c.load()
}

// load records the key of the iterator's position.
func (c *keyCursor) load() error {
	if !c.ok {
		return c.it.Error()
	}
	keyPfx, _, err := c.keys.Split(c.it.Key(), c.pfxLen)
	c.keyPfx = append(c.keyPfx[:0], keyPfx...)
	return err
}

func (c *keyCursor) tuple() []byte { return c.keyPfx[c.pfxLen:] }

func (c *keyCursor) advance() error {
	c.ok = c.skip.skip(c.it, c.keyPfx, false)
	return c.load()
}

// tableKeys walks the distinct keys that have records in the current index or in
// history: the keys a read at a past transaction time must consider.
type tableKeys struct {
	cursors []*keyCursor
	tuple   []byte
}

// eachTableKey calls fn with the tuple of each key of t in span that has
// records (tableKeys), in key order, until fn returns false or an error.
func (s *Snapshot) eachTableKey(t *Table, span Span, fn func(tuple []byte) (more bool, err error)) (err error) {
	keys, err := s.newTableKeys(t, span)
	defer func() { err = firstError(err, keys.close()) }()
	if err != nil {
		return err
	}
	for {
		ok, err := keys.next()
		if !ok || err != nil {
			return err
		}
		if more, err := fn(keys.tuple); !more || err != nil {
			return err
		}
	}
}

func (s *Snapshot) newTableKeys(t *Table, span Span) (*tableKeys, error) {
	tk := &tableKeys{}
	for _, keys := range []layout.RecordCodec{layout.CurrentKeys, layout.HistoryKeys} {
		c, err := s.newKeyCursor(keys, t, span)
		if c != nil {
			tk.cursors = append(tk.cursors, c)
		}
		if err != nil {
			return tk, err
		}
	}
	return tk, nil
}

// next moves to the next key in tuple order; the tuple is valid until the next
// call.
func (tk *tableKeys) next() (bool, error) {
	var least []byte
	for _, c := range tk.cursors {
		if c.ok && (least == nil || bytes.Compare(c.tuple(), least) < 0) {
			least = c.tuple()
		}
	}
	if least == nil {
		return false, nil
	}
	tk.tuple = append(tk.tuple[:0], least...)
	for _, c := range tk.cursors {
		if c.ok && bytes.Equal(c.tuple(), tk.tuple) {
			if err := c.advance(); err != nil {
				return false, err
			}
		}
	}
	return true, nil
}

func (tk *tableKeys) close() error {
	var first error
	for _, c := range tk.cursors {
		if err := c.it.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// ScanAt yields, in key order, the version of every key of span in effect at
// valid time valid as known at transaction time tx; keys with no such version are
// left out. It is ScanRowsAt with each row copied out (Row.Version).
func (s *Snapshot) ScanAt(t *Table, span Span, valid, tx int64) iter.Seq2[Version, error] {
	return func(yield func(Version, error) bool) {
		y := &yielder[Version]{yield: yield}
		if tx < s.lastTx && !s.closed && !span.empty() {
			// A past row is a Version already: yield it as read.
			y.fail(s.scanPast(t, span, valid, tx, func(v *Version) (bool, error) { return y.emit(*v), nil }))
			return
		}
		y.fail(s.scanRows(t, span, valid, tx, func(r *Row) (bool, error) {
			v, err := r.Version()
			if err != nil {
				return false, err
			}
			return y.emit(v), nil
		}))
	}
}

// ScanRowsAt calls fn, in key order, with the version of every key of span in
// effect at valid time valid as known at transaction time tx, as a Row read in
// place; keys with no such version are left out. fn gets the same Row every
// time, valid until it returns; it returns false to stop the scan. A malformed
// record that fn's reads of the row find ends the scan with their error.
//
// At or after LastTx it reads each key's newest version from the
// newest-version keyspace, one entry per key, and a key whose newest version
// starts after valid with one seek in the current-state index; when more than
// one key in eight needs that seek, it walks the current-state index for the
// rest of the span instead, with at most two seeks per key: one to the version
// in effect, unless a few steps from the key's newest reach it, and one past
// the key's older versions, unless a few steps reach the next key (after
// steps, Pebble's NextPrefix rather than a seek). It allocates nothing per
// row. At an older transaction time it walks the keys
// of both indexes and costs a few seeks per key and the allocations of a point
// read. It never walks through a key's history.
func (s *Snapshot) ScanRowsAt(t *Table, span Span, valid, tx int64, fn func(*Row) bool) error {
	return s.scanRows(t, span, valid, tx, func(r *Row) (bool, error) {
		more := fn(r)
		return more && r.err == nil, r.err
	})
}

// scanRows is ScanRowsAt with a callback that may fail.
func (s *Snapshot) scanRows(t *Table, span Span, valid, tx int64, each func(*Row) (bool, error)) error {
	switch {
	case s.closed:
		return ErrClosed
	case span.empty():
		return nil
	case tx >= s.lastTx:
		return s.scanNewestAt(t, span, valid, each)
	}
	tr := t
	if !t.rawAttrs {
		tr = t.WithRawAttrs()
	}
	r := s.newRow(t)
	return s.scanPast(tr, span, valid, tx, func(v *Version) (bool, error) {
		if err := r.fillPast(v); err != nil {
			return false, err
		}
		return each(r)
	})
}

// Where a snapshot at the latest transaction time starts: the newest-version
// keyspace (newest.go), one entry per key. A key whose newest version starts
// after the valid time misses there and costs a seek in the current index; a
// scan whose keys miss often walks the current index instead (scanCurrentAt),
// which steps from each key's newest version to the one in effect. The walk
// decides from each window of newestWindow keys: once more than one key in
// newestMissesPerWalk of the window has missed, the rest of the span is
// walked.
const (
	newestWindow        = 64
	newestMissesPerWalk = 8
)

// scanNewestAt is scanRows at the latest transaction time: each key's newest
// version from the newest-version keyspace, the version in effect from the
// current index where that one starts after valid.
func (s *Snapshot) scanNewestAt(t *Table, span Span, valid int64, each func(*Row) (bool, error)) (err error) {
	lower, upper := span.boundsIn(layout.NewestKeys.TablePrefix(nil, t.ID))
	it, err := s.newIter(lower, upper)
	if err != nil {
		return err
	}
	defer func() { err = firstError(err, it.Close()) }()
	var cur engine.Iter // the current index, for the keys that miss
	defer func() {
		if cur != nil {
			err = firstError(err, cur.Close())
		}
	}()
	pfxLen := len(lower) - len(span.Start)
	r := s.newRow(t)
	var seek []byte
	seen, misses := 0, 0
	for ok := it.First(); ok; ok = it.Next() {
		key := it.Key()
		if len(key) <= pfxLen {
			return fmt.Errorf("%w: newest-version key %x has no tuple", engine.ErrCorrupt, key)
		}
		tuple := key[pfxLen:]
		from, record, err := layout.NewestKeys.DecodeValue(it.Value())
		if err != nil {
			return err
		}
		if seen++; seen > newestWindow {
			seen, misses = 1, 0
		}
		if from > valid { // the version in effect is older: in the current index
			if misses++; misses*newestMissesPerWalk > newestWindow {
				return s.scanCurrentAt(t, span.from(bytes.Clone(tuple)), valid, each)
			}
			if cur == nil {
				if cur, err = s.newIter(span.bounds(layout.CurrentKeys, t.ID)); err != nil {
					return err
				}
			}
			seek = layout.CurrentKeys.KeyPrefix(seek[:0], t.ID, tuple)
			keyPfxLen := len(seek)
			seek = layout.CurrentKeys.AppendValid(seek, valid)
			// SeekGE, not SeekPrefixGE: on an engine that reads pages of keys
			// (etcd), the next keys that miss are often in the page it read.
			if !cur.SeekGE(seek) || !bytes.HasPrefix(cur.Key(), seek[:keyPfxLen]) {
				if err := cur.Error(); err != nil {
					return err
				}
				continue // no version of the key starts at or before valid
			}
			if from, err = layout.CurrentKeys.ValidFrom(cur.Key(), keyPfxLen); err != nil {
				return err
			}
			record = cur.Value()
		}
		if err := r.fillCurrent(tuple, record, from); err != nil {
			return err
		}
		if valid < r.ValidTo {
			if more, err := each(r); !more || err != nil {
				return err
			}
		}
	}
	return it.Error()
}

func (s *Snapshot) scanCurrentAt(t *Table, span Span, valid int64, each func(*Row) (bool, error)) (err error) {
	lower, upper := span.bounds(layout.CurrentKeys, t.ID)
	it, err := s.newIter(lower, upper)
	if err != nil {
		return err
	}
	defer func() { err = firstError(err, it.Close()) }()
	pfxLen := len(lower) - len(span.Start)
	r := s.newRow(t)
	var keyPfx, seek []byte
	var skip keySkipper
	for ok := it.First(); ok; {
		kp, from, err := layout.CurrentKeys.Split(it.Key(), pfxLen)
		if err != nil {
			return err
		}
		keyPfx = append(keyPfx[:0], kp...)
		seeked := false   // the key needed a seek to its version in effect
		if from > valid { // the newest version starts later: find the one in effect
			var step stepResult
			if step, from, err = stepToValid(it, keyPfx, pfxLen, valid); err != nil {
				return err
			}
			switch step {
			case stepEnd:
				return it.Error()
			case stepNextKey:
				continue // no version starts at or before valid; at the next key
			case stepSeek:
				seeked = true
				seek = layout.CurrentKeys.AppendValid(append(seek[:0], keyPfx...), valid)
				if ok = it.SeekGE(seek); !ok || !bytes.HasPrefix(it.Key(), keyPfx) {
					continue // likewise
				}
				if _, from, err = layout.CurrentKeys.Split(it.Key(), pfxLen); err != nil {
					return err
				}
			}
		}
		if err := r.fillCurrent(keyPfx[pfxLen:], it.Value(), from); err != nil {
			return err
		}
		if valid < r.ValidTo {
			if more, err := each(r); !more || err != nil {
				return err
			}
		}
		ok = skip.skip(it, keyPfx, seeked)
	}
	return it.Error()
}

// stepResult is where stepToValid left its iterator.
type stepResult uint8

const (
	stepFound   stepResult = iota // on the key's version in effect
	stepNextKey                   // on the next key: the key has no version in effect
	stepEnd                       // past the last key (or failed: see Error)
	stepSeek                      // still inside the key: seek to the version
)

// stepToValid steps a current-index iterator from a version of the key keyPfx
// that starts after valid towards the version in effect at valid, with at most
// stepsToValid Next calls. A key's versions are newest first, so a snapshot
// at a valid time a few versions back costs a few steps instead of a seek, and
// the scan then leaves the key with NextPrefix rather than a second seek. from
// is the valid_from of the version found.
func stepToValid(it engine.Iter, keyPfx []byte, pfxLen int, valid int64) (step stepResult, from int64, err error) {
	for range stepsToValid {
		if !it.Next() {
			return stepEnd, 0, nil
		}
		if !bytes.HasPrefix(it.Key(), keyPfx) {
			return stepNextKey, 0, nil
		}
		if _, from, err = layout.CurrentKeys.Split(it.Key(), pfxLen); err != nil || from <= valid {
			return stepFound, from, err
		}
	}
	return stepSeek, 0, nil
}

// scanPast calls each with the version of every key of span in effect at
// valid as known at the past transaction time tx.
func (s *Snapshot) scanPast(t *Table, span Span, valid, tx int64, each func(*Version) (bool, error)) error {
	if err := s.checkHorizon(t, tx); err != nil {
		return err
	}
	return s.eachTableKey(t, span, func(tuple []byte) (bool, error) {
		v, found, err := s.pastCandidate(t, tuple, valid, tx, true)
		if err != nil || !found || valid >= v.ValidTo {
			return err == nil, err
		}
		return each(&v)
	})
}

// HistoryPos is a position in a history scan: the version of the key encoded as
// Tuple that starts at ValidFrom. A scan resumed after it yields what follows it.
type HistoryPos struct {
	Tuple     []byte
	ValidFrom int64
}

// ScanHistory yields the versions alive at transaction time tx of every key of
// span that overlap the valid period [from, to), ordered by key and then valid
// time, starting after position after when it is not nil. It is
// ScanHistoryRows with each row copied out (Row.Version), and costs what that
// walk costs plus the decoding of each version.
func (s *Snapshot) ScanHistory(t *Table, span Span, tx, from, to int64, after *HistoryPos) iter.Seq2[Version, error] {
	return func(yield func(Version, error) bool) {
		y := &yielder[Version]{yield: yield}
		y.fail(s.scanHistory(t, span, tx, from, to, after, func(r *Row) (bool, error) {
			v, err := r.Version()
			if err != nil {
				return false, err
			}
			return y.emit(v), nil
		}))
	}
}

// RecordBySK returns the newest record of surrogate key sk asserted at or before
// transaction time tx, and false if there is none. It is the record of sk alive at
// tx when one is (records of one sk have disjoint transaction periods, invariant
// 3), otherwise the record whose retirement ended sk (its TxTo <= tx). One seek in
// the sk index names the key and valid_from of sk's records at tx; one point read
// of the current index and one seek in history (plus a step per record of that
// key and valid_from asserted for another surrogate key) find the record.
func (s *Snapshot) RecordBySK(t *Table, sk uint64, tx int64) (Version, bool, error) {
	if s.closed {
		return Version{}, false, ErrClosed
	}
	if err := s.checkHorizon(t, tx); err != nil {
		return Version{}, false, err
	}
	it, err := s.iter(layout.SKIndex)
	if err != nil {
		return Version{}, false, err
	}
	prefix := layout.SKIndexKeys.Prefix(nil, t.ID, sk)
	if !it.SeekPrefixGE(layout.SKIndexKeys.Key(nil, t.ID, sk, tx)) || !bytes.HasPrefix(it.Key(), prefix) {
		return Version{}, false, it.Error()
	}
	txFrom, err := layout.SKIndexKeys.DecodeTxFrom(it.Key()[len(prefix):])
	if err != nil {
		return Version{}, false, err
	}
	tuple, validFrom, err := layout.SKIndexKeys.DecodeValue(t.splitTuple, it.Value())
	if err != nil {
		return Version{}, false, err
	}
	v, err := s.recordOfSK(t, sk, bytes.Clone(tuple), validFrom, txFrom, tx)
	return v, err == nil, err
}

// recordOfSK reads the newest record of surrogate key sk, key tuple and
// validFrom asserted at or before tx, from the current index or history. The sk
// index entry at indexTx says there is one (invariant 5); its absence is
// corruption.
func (s *Snapshot) recordOfSK(t *Table, sk uint64, tuple []byte, validFrom, indexTx, tx int64) (Version, error) {
	cur, err := s.iter(layout.Current)
	if err != nil {
		return Version{}, err
	}
	key := layout.CurrentKeys.Key(nil, t.ID, tuple, validFrom, 0)
	if cur.SeekPrefixGE(key) && bytes.Equal(cur.Key(), key) {
		head, err := s.decodeHead(t, cur.Value(), validFrom, 0)
		if err != nil {
			return Version{}, err
		}
		if head.SK == sk && head.TxFrom <= tx {
			return s.decodeVersion(t, tuple, validFrom, 0, cur.Value())
		}
	}
	hist, err := s.iter(layout.History)
	if err != nil {
		return Version{}, err
	}
	group := layout.HistoryKeys.AppendValid(layout.HistoryKeys.KeyPrefix(nil, t.ID, tuple), validFrom)
	for ok := hist.SeekPrefixGE(layout.HistoryKeys.Key(nil, t.ID, tuple, validFrom, tx)); ok && bytes.HasPrefix(hist.Key(), group); ok = hist.Next() {
		keyTx, err := layout.HistoryKeys.TxFrom(hist.Key())
		if err != nil {
			return Version{}, err
		}
		head, err := s.decodeHead(t, hist.Value(), validFrom, keyTx)
		if err != nil {
			return Version{}, err
		}
		if head.TxFrom < indexTx {
			break
		}
		if head.SK == sk {
			return s.decodeVersion(t, tuple, validFrom, keyTx, hist.Value())
		}
	}
	if err := firstError(cur.Error(), hist.Error()); err != nil {
		return Version{}, err
	}
	return Version{}, fmt.Errorf("%w: table %q: no record of sk %d (key %x valid from %d) asserted in [%d, %d]", ErrCorrupt, t.Name, sk, tuple, validFrom, indexTx, tx)
}

// Fork returns a snapshot of the same consistent view with iterators of its own,
// for reading on another goroutine in parallel with s (a Snapshot is meant for one
// goroutine). Closing the fork releases only its iterators; close every fork
// before s.
func (s *Snapshot) Fork() (*Snapshot, error) {
	if s.closed {
		return nil, ErrClosed
	}
	return &Snapshot{db: s.db, view: borrowedView{s.view}, lastTx: s.lastTx, iters: map[byte]engine.Iter{}}, nil
}

// borrowedView is a fork's view: its owner closes it.
type borrowedView struct{ engine.View }

func (borrowedView) Close() error { return nil }

func firstError(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// closeIters closes every iterator of its that is not nil, returning the
// first error.
func closeIters(its ...engine.Iter) error {
	var first error
	for _, it := range its {
		if it != nil {
			first = firstError(first, it.Close())
		}
	}
	return first
}
