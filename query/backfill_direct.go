package query

import (
	"fmt"
	"math/bits"
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

// memberSpan is a member's request times [a, b) in a filter's set; bad marks
// a window column value that is not a time (filter.span).
type memberSpan struct {
	a, b int64
	id   int32
	bad  bool
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

// direct computes the rows of run over ms as sweep does, testing for each row
// every member's span in each filter. A row that fails is computed again by
// a sweep from that row on, so that its error is the one the sweep reports
// (the first member to fail in the sweep's order of entering the set).
func (e *evaluator) direct(ms []member, run []int32) error {
	p := e.p
	for fi := range p.filters {
		f := &p.filters[fi]
		spans := e.spans[fi][:0]
		for i := range ms {
			if a, end, bad := f.span(p, &ms[i]); a < end {
				spans = append(spans, memberSpan{a: a, b: end, id: int32(i), bad: bad})
			}
		}
		e.spans[fi] = spans
	}
	e.accs = p.newAccums(e.accs, ms, e.cols)
	for k, ri := range run {
		e.progress()
		if err := e.directRow(ms, ri); err != nil {
			if serr := e.sweep(ms, run[k:]); serr != nil {
				return serr
			}
			return fmt.Errorf("backfill row %d: %w", ri, e.b.inGroup(err, ri))
		}
	}
	return nil
}

// directRow computes row ri over ms: the accumulators emptied, each member
// whose span holds the row's ts added to its filter's features.
func (e *evaluator) directRow(ms []member, ri int32) error {
	p := e.p
	ts := e.b.rows[ri].TS
	accs := e.accs
	for k := range accs {
		accs[k].restart()
	}
	for fi := range p.filters {
		f := &p.filters[fi]
		for _, s := range e.spans[fi] {
			if ts < s.a || ts >= s.b {
				continue
			}
			if s.bad {
				return p.badWindow(f, &ms[s.id])
			}
			for _, k := range f.feats {
				if err := accs[k].add(s.id); err != nil {
					return err
				}
			}
		}
	}
	return e.emit(ri)
}
