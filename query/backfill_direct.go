package query

import (
	"fmt"
	"math"
	"math/bits"
	"slices"

	"github.com/bitempo/bitempo/store"
)

// This file is the backfill's direct evaluation: for a run of few rows over
// few members it is cheaper to test every member against each row than to
// sort the members' edges and sweep running states over them. Both build
// their features with the same accumulators (accum.add, accum.result), so
// they agree value for value; docs/design/backfill-direct-path.md gives the
// reasons and the measurements.

// evalRule is how a backfill evaluates a run of rows: by its shape, as every
// backfill does, or always one way, as the tests that compare the two do.
type evalRule uint8

const (
	evalByShape evalRule = iota
	evalSweep
	evalDirect
)

// directRowsPerBit bounds the rows a run evaluates directly: at most this
// many per bit of the number of members, that is while testing each row
// against every member costs no more than sorting the members' edges.
const directRowsPerBit = 4

// memberSpan is a member's request times [a, b) in one filter's set; bad
// marks a window column value that is not a time (filter.span).
type memberSpan struct {
	a, b int64
	bad  bool
}

// directMember is a member of a direct evaluation that belongs to some
// filter's set at some time: [from, to) covers its span in every filter, and
// id is its index in the load.
type directMember struct {
	from, to int64
	id       int32
}

// evaluate computes the rows of run (sorted by ts, all reading at one
// transaction time) over ms, the versions alive at that time: directly when
// the run has few rows for its members, else by a sweep.
func (e *evaluator) evaluate(ms []member, run []int32) error {
	direct := len(run) <= directRowsPerBit*bits.Len(uint(len(ms)))
	switch eval := e.b.eval; {
	case eval == evalDirect, eval == evalByShape && direct:
		return e.direct(ms, run)
	}
	return e.sweep(ms, run)
}

// direct computes the rows of run over ms as sweep does. Each member's span
// in each filter is computed once; each row then tests every member's outer
// span and, for the few members that hold the row's ts, the member's span in
// each filter (one test per member rather than one per member and filter).
// The sets only grow, so MIN, MAX, LATEST and EARLIEST keep their best member
// rather than a heap (accum.addOnly). A row that fails is computed again by
// a sweep from that row on, so that its error is the one the sweep reports
// (the first member to fail in the sweep's order of entering the set).
func (e *evaluator) direct(ms []member, run []int32) error {
	p := e.p
	nf := len(p.filters)
	members, spans := e.candidates[:0], e.spans[:0]
	for i := range ms {
		n := len(spans)
		outer := directMember{from: store.Infinity, to: math.MinInt64, id: int32(i)}
		for fi := range p.filters {
			a, end, bad := p.filters[fi].span(p, &ms[i])
			if a < end {
				outer.from, outer.to = min(outer.from, a), max(outer.to, end)
			}
			spans = append(spans, memberSpan{a: a, b: end, bad: bad})
		}
		if outer.from >= outer.to { // in no filter's set at any time
			spans = spans[:n]
			continue
		}
		members = append(members, outer)
	}
	e.candidates, e.spans = members, spans
	e.accs = p.newAccums(e.accs, ms, e.cols, true)
	for k, ri := range run {
		e.progress()
		if err := e.directRow(ms, ri, nf); err != nil {
			if serr := e.sweep(ms, run[k:]); serr != nil {
				return serr
			}
			return fmt.Errorf("backfill row %d: %w", ri, e.b.inGroup(err, ri))
		}
	}
	return nil
}

// directRow computes row ri over ms: for each filter, the members whose span
// in it holds the row's ts are gathered (e.inSet), then each of the filter's
// features is computed from its emptied accumulator over all of them at once
// (accum.addAll). nf is the number of filters.
func (e *evaluator) directRow(ms []member, ri int32, nf int) error {
	p := e.p
	ts := e.b.rows[ri].TS
	inSet := slices.Grow(e.inSet[:0], nf)[:nf]
	for fi := range inSet {
		inSet[fi] = inSet[fi][:0]
	}
	e.inSet = inSet
	for j, m := range e.candidates {
		if ts < m.from || ts >= m.to {
			continue
		}
		spans := e.spans[j*nf : (j+1)*nf]
		for fi := range spans {
			s := &spans[fi]
			if ts < s.a || ts >= s.b {
				continue
			}
			if s.bad {
				return p.badWindow(&p.filters[fi], &ms[m.id])
			}
			inSet[fi] = append(inSet[fi], m.id)
		}
	}
	accs := e.accs
	for k := range accs {
		accs[k].restart()
	}
	for fi := range p.filters {
		for _, k := range p.filters[fi].feats {
			if err := accs[k].addAll(inSet[fi]); err != nil {
				return err
			}
		}
	}
	return e.emit(ri)
}
