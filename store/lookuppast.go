package store

import (
	"bytes"
	"cmp"
	"errors"
	"math"
	"slices"
	"sort"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/engine"
	"github.com/bitempo/bitempo/layout"
)

// This file is LookupSorted's merge for probes at a transaction time older
// than the newest commit (a point-in-time training set: every fact at one past
// Tx). Like the merge at the newest commit, it moves two iterators, one over
// the current index and one over history, forward through the probed keys in
// order, instead of seeking afresh for every probe. For each probed key and
// transaction time it reads the key's versions alive at that time once, in
// descending valid_from order (the key's timeline as then known; record heads
// only, and with attrs the values, copied once to answer from), and answers
// every probe of the key from it: the answer's attributes are read from the
// copied value, without decoding its head again, and a record that shares its
// attributes takes those of its successor when the timeline holds it.
//
// A key's records alive at tx are its current records with tx_from <= tx and,
// for each valid_from in its history, the newest record asserted at or before
// tx if it was not yet retired at tx (at most one record per key and
// valid_from is alive at any instant). History's records of one valid_from are
// newest asserted first, so each valid_from costs a few steps, or one seek
// when it has many records (corrections).
//
// Reading a timeline costs its records; answering a probe by itself (the
// point read's walk, Snapshot.pastRecord) costs a seek in the current index,
// which answers it when the record there was asserted by the time and covers
// the probe, and otherwise a seek in history and a step or two per valid_from
// from the probe's valid time down to the record alive at the time. So a
// timeline is read only while it is short for the probes it serves (the run
// of probes of the key at the transaction time): once it has read
// timelineRecordsPerProbe records per probe, and as many again, the merge
// stops reading it, keeps what it read with both iterators where they stand,
// and answers those probes one by one. A key with a long history and few
// probes then costs a few steps per probe rather than its whole history.
//
// Two kinds of probe take the timeline up again where it stopped, read it to
// its end, and are answered from it, as are the run's remaining probes. One
// of a run of several whose walk takes more than directSteps steps: versions
// asserted after the transaction time lie between its valid time and the
// record alive then, and the walk looks at each, where the timeline, read
// once for the run, steps through them all. (The walk of a run's only probe
// is not limited: it steps through part of what the timeline would read, the
// versions from the probe's valid time down to the record alive then.) And
// one that misses: a miss is explained by whether a version alive at the
// time starts after the probe's valid time, which the walk learns only by
// stepping down every version asserted after that time. Such a run costs its
// timeline, as when it was read at once, and the few steps of the probes
// answered before.

// pastMerge is the state of the merge over probes at past transaction times.
type pastMerge struct {
	s     *Snapshot
	t     *Table
	attrs bool
	names func(ord uint32) (string, bool) // t's attribute names, for raw answers
	cur   engine.Iter
	hist  engine.Iter
	curOK bool // the current-index iterator is positioned
	hisOK bool // the history iterator is positioned

	built   bool // recs holds the timeline of tuple at tx, or direct is set
	direct  bool // the timeline went over its budget: tuple's probes at tx are answered one by one
	budget  int  // the records the timeline being read may still read
	again   bool // the timeline being read is of the key the last one was of
	curIn   bool // the current-index iterator has entered the timeline's key
	hisIn   bool // the history iterator has entered it
	curDone bool // the key's current records are read; recs[:nCur] holds the alive ones
	nCur    int
	probes  int     // the probes of the run the timeline serves
	tuple   []byte  // the key whose timeline recs holds
	tx      int64   // the transaction time it holds it at
	checked []int64 // transaction times whose horizon was checked
	recs    []pastRec
	later   []pastRec // current records of the key asserted after tx
	vals    []byte    // the values of recs and later
	curPfx  []byte
	hisPfx  []byte
	group   []byte
	seek    []byte
}

// pastRec is one record of a timeline: a version alive at the timeline's
// transaction time (or, in later, a current record asserted after it).
type pastRec struct {
	from, keyTx int64 // valid_from; the tx_from its key holds (0: current index)
	head        encoding.RecordValue
	// With attrs, its value is vals[off:end] and its attributes, in
	// positional form, vals[attrs:end].
	off, attrs, end int
	// raw is the answer's attributes for a WithRawAttrs table, set once the
	// timeline is read: its own, or its successor's when it shares them;
	// zero when its successor is not among the timeline's later records.
	raw RawAttrs
}

// timelineRecordsPerProbe is how many records a timeline may read for each
// probe it serves before the merge answers them one by one. A probe answered
// by itself costs about what reading twenty records costs
// (BenchmarkResolvePastTxLongHistories in package query: about 85 ns a record,
// 1.7 us a probe); stopping at eight loses nothing when the timeline is taken
// up again, and measured faster than sixteen on keys of a thousand versions
// with ten probes each.
const timelineRecordsPerProbe = 8

// pastTimelineBudget is the records a timeline serving probes probes may read.
func pastTimelineBudget(probes int) int { return timelineRecordsPerProbe * (probes + 1) }

// directSteps is how many steps (a current record or a valid_from of history
// looked at) a probe of a run of several answered by itself may take before
// the merge reads the timeline after all: enough for a probe whose record is
// alive at its time, where versions asserted after that time lie above it.
const directSteps = 4

// newPastMerge opens the merge's iterators over the records of the keys from
// lowTuple to highTuple, inclusive.
func (s *Snapshot) newPastMerge(t *Table, lowTuple, highTuple []byte, attrs bool) (*pastMerge, error) {
	m := &pastMerge{s: s, t: t, attrs: attrs}
	if attrs && t.rawAttrs {
		m.names = s.attrNames(t).nameFn
	}
	var err error
	for _, r := range []struct {
		keys layout.RecordCodec
		it   *engine.Iter
		ok   *bool
	}{{layout.CurrentKeys, &m.cur, &m.curOK}, {layout.HistoryKeys, &m.hist, &m.hisOK}} {
		pfx := r.keys.TablePrefix(nil, t.ID)
		lower := append(slices.Clip(pfx), lowTuple...)
		upper := encoding.PrefixEnd(append(slices.Clip(pfx), highTuple...))
		if *r.it, err = s.newIter(lower, upper); err != nil {
			m.close()
			return nil, err
		}
		*r.ok = (*r.it).First()
	}
	return m, nil
}

func (m *pastMerge) close() error {
	return closeIters(m.cur, m.hist)
}

// lookup answers probes[i] (its Tx older than LastTx) as Snapshot.VersionAt
// does, setting v to the version found (zero for a miss). The version is valid
// until the next call; its Key is nil.
func (m *pastMerge) lookup(probes []Probe, i int, v *Version) (MissReason, error) {
	p := &probes[i]
	*v = Version{}
	if !m.built || m.tx != p.Tx || !bytes.Equal(m.tuple, p.Tuple) {
		// The timeline serves the run of probes of this key at this time.
		n := 1
		for j := i + 1; j < len(probes) && probes[j].Tx == p.Tx && bytes.Equal(probes[j].Tuple, p.Tuple); j++ {
			n++
		}
		m.probes = n
		if err := m.build(p.Tuple, p.Tx, pastTimelineBudget(n)); err != nil {
			return 0, err
		}
	}
	if m.direct {
		return m.lookupDirect(p, v)
	}
	return m.answer(p, v)
}

// answer answers probe p from the timeline.
func (m *pastMerge) answer(p *Probe, v *Version) (MissReason, error) {
	// The first record (descending valid_from) that starts at or before p.Valid.
	i := sort.Search(len(m.recs), func(i int) bool { return m.recs[i].from <= p.Valid })
	found := i < len(m.recs)
	if found && p.Valid < m.recs[i].head.ValidTo {
		return Found, m.version(&m.recs[i], v)
	}
	later := len(m.recs) > 0 && m.recs[0].from > p.Valid
	return ClassifyMiss(found, later), nil
}

// lookupDirect answers probe p by itself, as Snapshot.VersionAt does, for a
// key whose timeline at p.Tx is too long for its probes: the record found is
// copied after the records the stopped timeline read, as a timeline's are, and
// answered from the copy, which the next lookup overwrites. A probe that
// misses, or one of a run of several whose walk goes over directSteps, reads
// the rest of the timeline from where it stopped and answers from it, as do
// the run's remaining probes.
func (m *pastMerge) lookupDirect(p *Probe, v *Version) (MissReason, error) {
	limit := directSteps
	if m.probes == 1 {
		limit = 0 // a walk steps through a part of what the timeline would read
	}
	hit, found, err := m.s.pastRecord(m.t, p.Tuple, p.Valid, p.Tx, limit)
	if err != nil && !errors.Is(err, errOverBudget) {
		return 0, err
	}
	if err != nil || !found || p.Valid >= hit.head.ValidTo {
		m.budget = math.MaxInt
		if err := m.read(); err != nil {
			return 0, err
		}
		return m.answer(p, v)
	}
	r, err := m.record(hit.from, hit.keyTx, hit.value)
	if err != nil {
		return 0, err
	}
	n, vals := len(m.recs), len(m.vals)
	m.recs = m.keep(m.recs, r, hit.value)
	rec := &m.recs[n]
	m.setRaw(rec)
	err = m.version(rec, v)
	// The answer's attributes stay where they are, past the stopped
	// timeline's values, until the next lookup appends there.
	m.recs, m.vals = m.recs[:n], m.vals[:vals]
	return Found, err
}

// version sets v to the answer from a timeline record, with its attributes
// when the merge reads them: as stored, aliasing the timeline (valid until the
// next lookup, as the version is), for a WithRawAttrs table (r.raw), else
// decoded. A record that shares its attributes takes those of its successor
// (the record of the same key, valid_from and surrogate key asserted when it
// was retired) when that is a current record the timeline read, else those
// Snapshot.sharedAttrs finds with point reads (a chain of shared records in
// history), decoded.
func (m *pastMerge) version(r *pastRec, v *Version) error {
	h := &r.head
	v.ValidFrom, v.ValidTo, v.TxFrom, v.TxTo, v.SK = r.from, h.ValidTo, h.TxFrom, h.TxTo, h.SK
	v.Inferred, v.tuple = h.Flags&encoding.FlagInferred != 0, m.tuple
	if !m.attrs {
		return nil
	}
	if !r.raw.IsZero() {
		v.raw = r.raw
		return nil
	}
	src := r
	if encoding.SharesAttrs(m.vals[r.off:r.end]) {
		if src = m.successor(r); src == nil {
			var err error
			v.Attrs, err = m.s.sharedAttrs(m.t, m.tuple, r.from, h.SK, h.TxTo)
			return err
		}
	}
	rv, err := m.s.decodeRecord(m.t, m.vals[src.off:src.end], src.from, src.keyTx)
	v.Attrs = rv.Attrs
	return err
}

// successor returns the current record of the timeline's later ones that
// record r shares its attributes with, or nil.
func (m *pastMerge) successor(r *pastRec) *pastRec {
	for i := range m.later {
		succ := &m.later[i]
		if succ.from == r.from && succ.head.TxFrom == r.head.TxTo && succ.head.SK == r.head.SK &&
			!encoding.SharesAttrs(m.vals[succ.off:succ.end]) {
			return succ
		}
	}
	return nil
}

// build reads the timeline of tuple at tx: its records alive at tx, by
// descending valid_from. A timeline that reads more than budget records stops
// where it stands, direct set, until read takes it up again.
func (m *pastMerge) build(tuple []byte, tx int64, budget int) error {
	if !slices.Contains(m.checked, tx) {
		if err := m.s.checkHorizon(m.t, tx); err != nil {
			return err
		}
		m.checked = append(m.checked, tx)
	}
	m.again = m.built && bytes.Equal(m.tuple, tuple) // the same key at another tx: read it again
	m.built, m.direct, m.tx, m.tuple = false, false, tx, append(m.tuple[:0], tuple...)
	m.recs, m.later, m.vals = m.recs[:0], m.later[:0], m.vals[:0]
	m.curIn, m.hisIn, m.curDone, m.budget = false, false, false, budget
	return m.read()
}

// read reads the timeline being built from where it stands to its end, or
// until it goes over its budget: it then stops (direct).
func (m *pastMerge) read() error {
	m.built, m.direct = true, false
	if !m.curDone {
		if err := m.readCurrent(); err != nil {
			return m.stopped(err)
		}
		m.curDone, m.nCur = true, len(m.recs)
	}
	if err := m.readHistory(); err != nil {
		return m.stopped(err)
	}
	// Both runs are in descending valid_from order and no two alive records
	// share a valid_from: merge them.
	if n := m.nCur; n > 0 && n < len(m.recs) {
		slices.SortStableFunc(m.recs, func(a, b pastRec) int { return cmp.Compare(b.from, a.from) })
	}
	for i := range m.recs {
		m.setRaw(&m.recs[i])
	}
	return nil
}

// stopped returns err from reading a timeline, or nil with direct set when
// the timeline went over its budget and stopped.
func (m *pastMerge) stopped(err error) error {
	if errors.Is(err, errOverBudget) {
		m.direct = true
		return nil
	}
	m.built = false
	return err
}

// setRaw sets, for a WithRawAttrs table, the answer attributes of timeline
// record r: its own, or its successor's among the later records when it
// shares them.
func (m *pastMerge) setRaw(r *pastRec) {
	if !m.attrs || !m.t.rawAttrs {
		return
	}
	src := r
	if encoding.SharesAttrs(m.vals[r.off:r.end]) {
		src = m.successor(r)
	}
	if src != nil {
		r.raw = RawAttrs{b: m.vals[src.attrs:src.end:src.end], name: m.names, proj: m.t.proj}
	}
}

// enter positions it on the first record at or after keyPfx: a few steps
// forward, or a seek (always a seek when the key is read again).
func (m *pastMerge) enter(it engine.Iter, ok bool, keyPfx []byte, again bool) bool {
	if again {
		return it.SeekGE(keyPfx)
	}
	for steps := 0; ok && bytes.Compare(it.Key(), keyPfx) < 0; steps++ {
		if steps == nextsBeforeSeek {
			return it.SeekGE(keyPfx)
		}
		ok = it.Next()
	}
	return ok
}

// record decodes the head of value, the record of the key valid from from
// whose key holds tx_from keyTx; its attrs is where its attributes start in
// value until keep copies it.
func (m *pastMerge) record(from, keyTx int64, value []byte) (pastRec, error) {
	head, attrs, err := m.s.decodeHeadSplit(m.t, value, from, keyTx)
	return pastRec{from: from, keyTx: keyTx, head: head, attrs: len(value) - len(attrs)}, err
}

// keep appends r, a record of value, to list, with attrs copying value to
// vals.
func (m *pastMerge) keep(list []pastRec, r pastRec, value []byte) []pastRec {
	if m.attrs {
		r.off = len(m.vals)
		m.vals = append(m.vals, value...)
		r.attrs += r.off
		r.end = len(m.vals)
	}
	return append(list, r)
}

// readCurrent reads the key's current records, from the first or from the
// one the current-index iterator stands on when the timeline stopped.
func (m *pastMerge) readCurrent() error {
	it, tx := m.cur, m.tx
	if !m.curIn {
		m.curPfx = layout.CurrentKeys.KeyPrefix(m.curPfx[:0], m.t.ID, m.tuple)
		m.curOK, m.curIn = m.enter(it, m.curOK, m.curPfx, m.again), true
	}
	for ; m.curOK && bytes.HasPrefix(it.Key(), m.curPfx); m.curOK = it.Next() {
		if m.budget--; m.budget < 0 {
			return errOverBudget
		}
		from, err := layout.CurrentKeys.ValidFrom(it.Key(), len(m.curPfx))
		if err != nil {
			return err
		}
		r, err := m.record(from, 0, it.Value())
		if err != nil {
			return err
		}
		if r.head.TxFrom <= tx {
			m.recs = m.keep(m.recs, r, it.Value())
		} else if m.attrs {
			// A record alive at tx that shares its attributes usually shares
			// them with this one (its successor, asserted when it was retired).
			m.later = m.keep(m.later, r, it.Value())
		}
	}
	return it.Error()
}

// readHistory reads the key's records in history, from its greatest
// valid_from or from the one the history iterator stands on when the timeline
// stopped (which it does only between two valid_froms).
func (m *pastMerge) readHistory() error {
	it, tx := m.hist, m.tx
	if !m.hisIn {
		m.hisPfx = layout.HistoryKeys.KeyPrefix(m.hisPfx[:0], m.t.ID, m.tuple)
		m.hisOK, m.hisIn = m.enter(it, m.hisOK, m.hisPfx, m.again), true
	}
	for m.hisOK && bytes.HasPrefix(it.Key(), m.hisPfx) {
		if m.budget < 0 {
			return errOverBudget
		}
		from, err := layout.HistoryKeys.ValidFrom(it.Key(), len(m.hisPfx))
		if err != nil {
			return err
		}
		m.group = layout.HistoryKeys.AppendValid(append(m.group[:0], m.hisPfx...), from)
		keyTx, found, ok, looked, err := toAssertedBy(it, false, m.group, tx, &m.seek)
		m.budget -= looked
		if err != nil {
			return err
		}
		if m.hisOK = ok; !found {
			continue // the iterator has left the valid_from's records
		}
		r, err := m.record(from, keyTx, it.Value())
		if err != nil {
			return err
		}
		if tx < r.head.TxTo {
			m.recs = m.keep(m.recs, r, it.Value())
		}
		m.hisOK = pastValidFrom(it, false, m.hisPfx, m.group, from, &m.seek)
	}
	return it.Error()
}
