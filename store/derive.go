package store

import (
	"bytes"
	"math"

	"github.com/bitempo/bitempo/encoding"
)

// This file is the pure part of Apply: how a key's events become versions, where
// a batch's re-derivation of a key may start, and which surrogate key each
// re-derived version carries. Nothing here reads or writes the
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
type CDCEvent struct {
	At, Seq int64
	Op      EventOp
	Attrs   Attrs  // as received; nil for a delete
	Enc     []byte // encoding.AppendAttrs(attrs) of an upsert, see encoded
	Fresh   bool   // the event comes from the batch being applied
	Logged  bool   // an event is stored in the log at (at, seq)
	Index   int    // position of a fresh event in its batch
}

func (e *CDCEvent) Before(o *CDCEvent) bool {
	return e.At < o.At || (e.At == o.At && e.Seq < o.Seq)
}

func (e *CDCEvent) SamePos(o *CDCEvent) bool { return e.At == o.At && e.Seq == o.Seq }

// encoded returns the attribute encoding of an upsert, computing it on first use
// (events read from the log need it only when a tie meets them).
func (e *CDCEvent) Encoded() []byte {
	if e.Enc == nil && e.Op == EventUpsert {
		e.Enc, _ = encoding.AppendAttrs(nil, e.Attrs) // decoded attributes always encode
	}
	return e.Enc
}

// identical reports whether two events at one (at, seq) say the same thing.
func (e *CDCEvent) Identical(o *CDCEvent) bool {
	return e.Op == o.Op && (e.Op == EventDelete || bytes.Equal(e.Encoded(), o.Encoded()))
}

// tieWinner decides between two different events at the same (at, seq): a delete
// beats an upsert, and of two upserts the one whose attribute encoding is smaller
// in byte order wins. It depends only on the two events, never on which arrived
// first, so the log converges to the same event whatever the arrival order
// (docs/design/cdc-tie-winner.md).
func TieWinner(a, b *CDCEvent) *CDCEvent {
	switch {
	case a.Op == EventDelete:
		return a
	case b.Op == EventDelete:
		return b
	case bytes.Compare(b.Encoded(), a.Encoded()) < 0:
		return b
	}
	return a
}

// granuleOf returns the start of the granule holding valid time at: at itself
// without a granularity, else at floored to a multiple of g. ok is false when the
// floor does not fit in an int64 (Apply rejects such events).
func GranuleOf(at, g int64) (start int64, ok bool) {
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
type RunState struct {
	Open  bool
	From  int64
	Attrs Attrs
}

// openState is the state just after the last event of version v's run.
func OpenState(v *Version) RunState {
	return RunState{Open: true, From: v.ValidFrom, Attrs: v.Attrs}
}

// run is one derived version: its valid period and attributes.
type DerivedRun struct {
	From, To int64
	Attrs    Attrs
}

// completeAttrs returns the attributes an upsert stands for: as received, or,
// with partial updates, carry overlaid with what the upsert holds.
func CompleteAttrs(t *Table, carry, attrs Attrs) Attrs {
	if !t.IgnoreNulls || len(carry) == 0 {
		return attrs
	}
	out := make(Attrs, len(carry)+len(attrs))
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
func Derive(t *Table, st RunState, evs []CDCEvent) (runs []DerivedRun, end RunState, tombstones int) {
	for i := 0; i < len(evs); {
		g, _ := GranuleOf(evs[i].At, t.Granularity)
		carry := st.Attrs
		j := i
		for ; j < len(evs); j++ {
			if gj, _ := GranuleOf(evs[j].At, t.Granularity); gj != g {
				break
			}
			if evs[j].Op == EventDelete {
				carry = nil
			} else {
				carry = CompleteAttrs(t, carry, evs[j].Attrs)
			}
		}
		win := &evs[j-1]
		switch {
		case win.Op == EventDelete && st.Open:
			runs = append(runs, DerivedRun{st.From, g, st.Attrs})
			st = RunState{}
		case win.Op == EventDelete:
			if win.Fresh {
				tombstones++
			}
		case st.Open && TrackedEqual(t, st.Attrs, carry):
			st.Attrs = carry
		default:
			if st.Open {
				runs = append(runs, DerivedRun{st.From, g, st.Attrs})
			}
			st = RunState{Open: true, From: g, Attrs: carry}
		}
		i = j
	}
	if st.Open {
		runs = append(runs, DerivedRun{st.From, Infinity, st.Attrs})
	}
	return runs, st, tombstones
}

// CheckpointState is the derivation state a checkpoint stands for.
func CheckpointState(cp Checkpoint) RunState {
	if !cp.Open {
		return RunState{}
	}
	return RunState{Open: true, From: cp.From, Attrs: cp.Attrs}
}

// LoggedEvent is an event of the log as the derivation sees it.
func LoggedEvent(e LogEvent) CDCEvent {
	return CDCEvent{At: e.At, Seq: e.Seq, Op: e.Op, Attrs: e.Attrs, Logged: true}
}
