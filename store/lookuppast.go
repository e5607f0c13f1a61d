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
// point read's walk, Snapshot.pastRecord) costs a few seeks, about what
// stepping through timelineRecordsPerProbe records costs. So a timeline is
// read only while it is short for the probes it serves (the run of probes of
// the key at the transaction time): once it has read timelineRecordsPerProbe
// records per probe, and as many again, the merge drops it and answers those
// probes one by one, until one misses. A key with a long history and few
// probes then costs a few seeks per probe rather than its whole history; what
// the dropped timeline read is at most about what answering its probes one by
// one costs, so no key costs much more than twice the cheaper of the two
// ways. A miss is explained by whether a version alive at the time starts
// after the probe's valid time, which the walk can only learn by stepping
// down every version asserted after that time, a seek or two each: a probe
// that misses reads the whole timeline, in order, as before.

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

	built   bool    // recs holds the timeline of tuple at tx, or direct is set
	direct  bool    // the timeline was too long: tuple's probes at tx are answered one by one
	budget  int     // the records the timeline being read may still read
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
// probe it serves before the merge answers them one by one: about what one
// probe's own walk costs (BenchmarkResolvePastTxLongHistories in package
// query: a timeline record costs about 85 ns to read, a probe answered by
// itself about 1.7 us).
const timelineRecordsPerProbe = 16

// pastTimelineBudget is the records a timeline serving probes probes may read.
func pastTimelineBudget(probes int) int { return timelineRecordsPerProbe * (probes + 1) }

// errLongTimeline stops reading a timeline that went over its budget.
var errLongTimeline = errors.New("bitempo: timeline longer than its budget")

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
// copied, as a timeline's are, and answered from the copy. A miss reads the
// whole timeline after all: whether a version alive at p.Tx starts after
// p.Valid can take a walk down every version asserted after p.Tx, a seek or
// two each, where the timeline steps through them in order; it then answers
// the run's remaining probes.
func (m *pastMerge) lookupDirect(p *Probe, v *Version) (MissReason, error) {
	hit, found, err := m.s.pastRecord(m.t, p.Tuple, p.Valid, p.Tx)
	if err != nil {
		return 0, err
	}
	if !found || p.Valid >= hit.head.ValidTo {
		if err := m.build(p.Tuple, p.Tx, math.MaxInt); err != nil {
			return 0, err
		}
		return m.answer(p, v)
	}
	m.recs, m.later, m.vals = m.recs[:0], m.later[:0], m.vals[:0]
	r, err := m.record(hit.from, hit.keyTx, hit.value)
	if err != nil {
		return 0, err
	}
	m.recs = m.keep(m.recs, r, hit.value)
	m.setRaw()
	return Found, m.version(&m.recs[0], v)
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
// descending valid_from. A timeline that reads more than budget records is
// dropped: direct is set instead.
func (m *pastMerge) build(tuple []byte, tx int64, budget int) error {
	if !slices.Contains(m.checked, tx) {
		if err := m.s.checkHorizon(m.t, tx); err != nil {
			return err
		}
		m.checked = append(m.checked, tx)
	}
	again := m.built && bytes.Equal(m.tuple, tuple) // the same key at another tx: read it again
	m.built, m.direct, m.tx, m.tuple = false, false, tx, append(m.tuple[:0], tuple...)
	m.recs, m.later, m.vals = m.recs[:0], m.later[:0], m.vals[:0]
	m.budget = budget
	err := m.readCurrent(tuple, tx, again)
	n := len(m.recs)
	if err == nil {
		err = m.readHistory(tuple, tx, again)
	}
	if errors.Is(err, errLongTimeline) {
		m.built, m.direct = true, true
		return nil
	}
	if err != nil {
		return err
	}
	// Both runs are in descending valid_from order and no two alive records
	// share a valid_from: merge them.
	if n > 0 && n < len(m.recs) {
		slices.SortStableFunc(m.recs, func(a, b pastRec) int { return cmp.Compare(b.from, a.from) })
	}
	m.setRaw()
	m.built = true
	return nil
}

// setRaw sets, for a WithRawAttrs table, each timeline record's answer
// attributes: its own, or its successor's among the later records when it
// shares them.
func (m *pastMerge) setRaw() {
	if !m.attrs || !m.t.rawAttrs {
		return
	}
	for i := range m.recs {
		r, src := &m.recs[i], &m.recs[i]
		if encoding.SharesAttrs(m.vals[r.off:r.end]) {
			src = m.successor(r)
		}
		if src != nil {
			r.raw = RawAttrs{b: m.vals[src.attrs:src.end:src.end], name: m.names, proj: m.t.proj}
		}
	}
}

// step counts one record read into the timeline against its budget.
func (m *pastMerge) step() error {
	if m.budget--; m.budget < 0 {
		return errLongTimeline
	}
	return nil
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
	head, attrs, err := decodeHeadSplit(m.t, value, from, keyTx)
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

func (m *pastMerge) readCurrent(tuple []byte, tx int64, again bool) error {
	m.curPfx = layout.CurrentKeys.KeyPrefix(m.curPfx[:0], m.t.ID, tuple)
	it := m.cur
	m.curOK = m.enter(it, m.curOK, m.curPfx, again)
	for ; m.curOK && bytes.HasPrefix(it.Key(), m.curPfx); m.curOK = it.Next() {
		if err := m.step(); err != nil {
			return err
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

func (m *pastMerge) readHistory(tuple []byte, tx int64, again bool) error {
	m.hisPfx = layout.HistoryKeys.KeyPrefix(m.hisPfx[:0], m.t.ID, tuple)
	it := m.hist
	m.hisOK = m.enter(it, m.hisOK, m.hisPfx, again)
	for m.hisOK && bytes.HasPrefix(it.Key(), m.hisPfx) {
		from, err := layout.HistoryKeys.ValidFrom(it.Key(), len(m.hisPfx))
		if err != nil {
			return err
		}
		m.group = layout.HistoryKeys.AppendValid(append(m.group[:0], m.hisPfx...), from)
		// The newest record of this valid_from asserted at or before tx: a few
		// steps, then one seek.
		found := false
		var keyTx int64
		for steps := 0; m.hisOK && bytes.HasPrefix(it.Key(), m.group); steps++ {
			if err := m.step(); err != nil {
				return err
			}
			if keyTx, err = layout.HistoryKeys.TxFrom(it.Key()); err != nil {
				return err
			}
			if keyTx <= tx {
				found = true
				break
			}
			if steps < nextsBeforeSeek {
				m.hisOK = it.Next()
			} else {
				m.seek = layout.HistoryKeys.AppendValid(append(m.seek[:0], m.group...), tx)
				m.hisOK = it.SeekGE(m.seek)
			}
		}
		if !found {
			continue // the iterator has left the valid_from's records
		}
		r, err := m.record(from, keyTx, it.Value())
		if err != nil {
			return err
		}
		if tx < r.head.TxTo {
			m.recs = m.keep(m.recs, r, it.Value())
		}
		// Past the older records of this valid_from: a few steps, then one seek.
		for steps := 0; ; steps++ {
			if m.hisOK = it.Next(); !m.hisOK || !bytes.HasPrefix(it.Key(), m.group) {
				break
			}
			if steps == nextsBeforeSeek {
				if from == NegInfinity {
					m.hisOK = it.SeekGE(encoding.PrefixEnd(m.hisPfx))
				} else {
					m.seek = layout.HistoryKeys.AppendValid(append(m.seek[:0], m.hisPfx...), from-1)
					m.hisOK = it.SeekGE(m.seek)
				}
				break
			}
		}
	}
	return it.Error()
}
