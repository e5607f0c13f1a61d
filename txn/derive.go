package txn

import (
	"bytes"
	"math"
	"slices"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/store"
)

// This file is the pure part of Apply: how a key's events become versions, where
// a batch's re-derivation of a key may start, and which surrogate key each
// re-derived version carries. Nothing here reads or writes the store.
//
// A key's versions are a function of its event set:
//
//  1. Events are ordered by (at, seq); the log holds one event per (at, seq), the
//     winner of its ties (see tieWinner).
//  2. Each event's attributes are completed (partial updates): with IgnoreNulls an
//     absent attribute takes the previous event's value, an explicit null
//     replaces it, and a delete resets the carry to nothing.
//  3. Valid times are truncated to the table's granularity; of several events in
//     one granule (or, without a granularity, at one instant) only the last by
//     (at, seq) counts, so no version is ever zero-width.
//  4. The granules' winners form runs: a maximal stretch of upserts whose tracked
//     attributes equal those of the upsert before them, with no delete between.
//     A run is one version [first granule, granule of the event that ends it) or
//     [first, +inf), with the attributes of its last event. A delete ends the run
//     before it; one that ends nothing is kept in the log (a tombstone) and ends
//     any run a later-arriving, earlier upsert starts before it.

// cdcEvent is one event of a key as the derivation sees it.
type cdcEvent struct {
	at, seq int64
	op      store.EventOp
	attrs   store.Attrs // as received; nil for a delete
	enc     []byte      // encoding.AppendAttrs(attrs) of an upsert, see encoded
	fresh   bool        // the event comes from the batch being applied
	logged  bool        // an event is stored in the log at (at, seq)
	index   int         // position of a fresh event in its batch
}

func (e *cdcEvent) before(o *cdcEvent) bool {
	return e.at < o.at || (e.at == o.at && e.seq < o.seq)
}

func (e *cdcEvent) samePos(o *cdcEvent) bool { return e.at == o.at && e.seq == o.seq }

// encoded returns the attribute encoding of an upsert, computing it on first use
// (events read from the log need it only when a tie meets them).
func (e *cdcEvent) encoded() []byte {
	if e.enc == nil && e.op == store.EventUpsert {
		e.enc, _ = encoding.AppendAttrs(nil, e.attrs) // decoded attributes always encode
	}
	return e.enc
}

// identical reports whether two events at one (at, seq) say the same thing.
func (e *cdcEvent) identical(o *cdcEvent) bool {
	return e.op == o.op && (e.op == store.EventDelete || bytes.Equal(e.encoded(), o.encoded()))
}

// tieWinner decides between two different events at the same (at, seq): a delete
// beats an upsert, and of two upserts the one whose attribute encoding is smaller
// in byte order wins. It depends only on the two events, never on which arrived
// first, so the log converges to the same event whatever the arrival order
// (docs/design/cdc-tie-winner.md).
func tieWinner(a, b *cdcEvent) *cdcEvent {
	switch {
	case a.op == store.EventDelete:
		return a
	case b.op == store.EventDelete:
		return b
	case bytes.Compare(b.encoded(), a.encoded()) < 0:
		return b
	}
	return a
}

// granuleOf returns the start of the granule holding valid time at: at itself
// without a granularity, else at floored to a multiple of g. ok is false when the
// floor does not fit in an int64 (Apply rejects such events).
func granuleOf(at, g int64) (start int64, ok bool) {
	if g <= 1 {
		return at, true
	}
	r := at % g
	if r < 0 {
		r += g
	}
	if at < math.MinInt64+r {
		return math.MinInt64, false
	}
	return at - r, true
}

// runState is the derivation's state at a granule boundary: whether a run is
// open, where it started, and the completed attributes of its last event (which
// are also the carry of partial updates; after a delete there is none).
type runState struct {
	open  bool
	from  int64
	attrs store.Attrs
}

// openState is the state just after the last event of version v's run.
func openState(v *store.Version) runState {
	return runState{open: true, from: v.ValidFrom, attrs: v.Attrs}
}

// run is one derived version: its valid period and attributes.
type run struct {
	from, to int64
	attrs    store.Attrs
}

// completeAttrs returns the attributes an upsert stands for: as received, or,
// with partial updates, carry overlaid with what the upsert holds.
func completeAttrs(t *store.Table, carry, attrs store.Attrs) store.Attrs {
	if !t.IgnoreNulls || len(carry) == 0 {
		return attrs
	}
	out := make(store.Attrs, len(carry)+len(attrs))
	for k, v := range carry {
		out[k] = v
	}
	for k, v := range attrs {
		out[k] = v
	}
	return out
}

// derive walks a key's events, sorted by (at, seq), from state st and returns the
// runs they form, the state after the last event, and how many fresh deletes end
// nothing (tombstones remembered). A run still open at the end is returned with
// to = +inf and is also the open run of the end state.
func derive(t *store.Table, st runState, evs []cdcEvent) (runs []run, end runState, tombstones int) {
	for i := 0; i < len(evs); {
		g, _ := granuleOf(evs[i].at, t.Granularity)
		carry := st.attrs
		j := i
		for ; j < len(evs); j++ {
			if gj, _ := granuleOf(evs[j].at, t.Granularity); gj != g {
				break
			}
			if evs[j].op == store.EventDelete {
				carry = nil
			} else {
				carry = completeAttrs(t, carry, evs[j].attrs)
			}
		}
		win := &evs[j-1]
		switch {
		case win.op == store.EventDelete && st.open:
			runs = append(runs, run{st.from, g, st.attrs})
			st = runState{}
		case win.op == store.EventDelete:
			if win.fresh {
				tombstones++
			}
		case st.open && trackedEqual(t, st.attrs, carry):
			st.attrs = carry
		default:
			if st.open {
				runs = append(runs, run{st.from, g, st.attrs})
			}
			st = runState{open: true, from: g, attrs: carry}
		}
		i = j
	}
	if st.open {
		runs = append(runs, run{st.from, store.Infinity, st.attrs})
	}
	return runs, st, tombstones
}

// resumePoint says where a batch's re-derivation of a key starts: the events
// before granule p, and the versions they alone determine, stay as they are.
type resumePoint struct {
	p  int64
	st runState
	// within is the version the batch's earliest granule lands inside of (or
	// before the end of whose run there are later events). Its run's state just
	// before that granule depends on the run's last event before it, which only
	// the log knows; st then describes the fallback of re-deriving the whole run.
	within *store.Version
}

// resume chooses the resume point for a batch whose earliest event lies in
// granule m, given the key's current versions and the granule of its newest
// logged event. Only the suffix from there is re-derived: a late event costs the
// run it lands in and what follows, not the key's whole history.
func resume(cur []store.Version, m int64, newest int64, hasNewest bool) resumePoint {
	// i: the last version starting before m.
	i, _ := slices.BinarySearchFunc(cur, m, func(v store.Version, m int64) int {
		if v.ValidFrom < m {
			return -1
		}
		return 1
	})
	i--
	if i < 0 {
		return resumePoint{p: m}
	}
	v := &cur[i]
	switch {
	case v.ValidTo < m:
		// Its run ended before m, by a delete: nothing is open at m.
		return resumePoint{p: m}
	case v.ValidTo == m, v.ValidTo == store.Infinity && hasNewest && newest < m:
		// Its run's last event is before m, so v's attributes are that event's.
		return resumePoint{p: m, st: openState(v)}
	}
	rp := resumePoint{p: v.ValidFrom, within: v}
	if i > 0 && cur[i-1].ValidTo == v.ValidFrom {
		rp.st = openState(&cur[i-1])
	}
	return rp
}

// versionCounts classifies what re-deriving a key did to its versions.
type versionCounts struct {
	inserted, closed, split, merged, updated, removed int
}

// placeRuns turns the re-derived runs into versions, reusing the surrogate keys
// of the versions they replace so that a fact resolved to sk S at valid time v
// keeps resolving to S unless the batch changed what is true at v:
//
//   - A run takes the sk of the earliest replaced version that overlaps it, has
//     equal tracked attributes, and no earlier run took. So a version shortened
//     at either end, extended (also to an earlier start) or given new untracked
//     attributes keeps its sk, and versions that a late event fused into one
//     run leave their sk to the earliest of them.
//   - Every other run gets a new sk, in ascending valid time. So when a late
//     event splits a version, the earlier piece keeps its sk and the later one
//     gets a new sk, and a stretch whose tracked attributes changed is a new
//     version.
//
// Matching is not on valid_from alone, which would renumber a version that
// lost only its first instant (docs/design/cdc-surrogate-key-inheritance.md).
func placeRuns(t *store.Table, ks *keyState, replaced []store.Version, runs []run, alloc func() uint64) ([]store.Version, versionCounts) {
	out := make([]store.Version, len(runs))
	heir := make([]int, len(runs)) // index into replaced, or -1
	taken := make([]bool, len(replaced))
	j := 0
	for k, r := range runs {
		heir[k] = -1
		for j < len(replaced) && replaced[j].ValidTo <= r.from {
			j++
		}
		for x := j; x < len(replaced) && replaced[x].ValidFrom < r.to; x++ {
			if !taken[x] && trackedEqual(t, replaced[x].Attrs, r.attrs) {
				heir[k], taken[x] = x, true
				break
			}
		}
		if heir[k] >= 0 {
			v := replaced[heir[k]]
			v.ValidFrom, v.ValidTo, v.Attrs = r.from, r.to, r.attrs
			out[k] = v
		} else {
			out[k] = ks.table.NewVersion(ks.key, ks.tuple, r.from, r.to, alloc(), r.attrs)
		}
	}
	return out, countVersions(t, replaced, out, heir, taken)
}

// overlaps reports whether two versions share a valid instant.
func overlaps(a, b *store.Version) bool { return a.ValidFrom < b.ValidTo && b.ValidFrom < a.ValidTo }

// countVersions classifies the outcome of placeRuns for ApplyResult.
func countVersions(t *store.Table, replaced, out []store.Version, heir []int, taken []bool) versionCounts {
	var c versionCounts
	wasSplit := make([]bool, len(replaced))
	for k := range out {
		if heir[k] >= 0 {
			continue
		}
		d := &out[k]
		split := false
		for x := range replaced {
			s := &replaced[x]
			if taken[x] && overlaps(s, d) && trackedEqual(t, s.Attrs, d.Attrs) {
				split, wasSplit[x] = true, true
				break
			}
		}
		if split {
			c.split++
		} else {
			c.inserted++
		}
	}
	for k := range out {
		x := heir[k]
		if x < 0 || wasSplit[x] {
			continue
		}
		s, d := &replaced[x], &out[k]
		switch {
		case s.ValidFrom == d.ValidFrom && s.ValidTo == d.ValidTo && s.Attrs.Equal(d.Attrs):
		case d.ValidTo < s.ValidTo:
			c.closed++
		default:
			c.updated++
		}
	}
	for x := range replaced {
		if taken[x] {
			continue
		}
		merged := false
		for k := range out {
			if heir[k] >= 0 && overlaps(&replaced[x], &out[k]) && trackedEqual(t, out[k].Attrs, replaced[x].Attrs) {
				merged = true
				break
			}
		}
		if merged {
			c.merged++
		} else {
			c.removed++
		}
	}
	return c
}
