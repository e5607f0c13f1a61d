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
func (b *backfill) evaluate(ms []member, run []int32) error {
	direct := len(run) <= directRowsPerBit*bits.Len(uint(len(ms)))
	switch {
	case b.eval == evalDirect, b.eval == evalByShape && direct:
		return b.direct(ms, run)
	}
	return b.sweep(ms, run)
}

// direct computes the rows of run over ms as sweep does, testing for each row
// every member's span in each filter. A row that fails is computed again by
// a sweep from that row on, so that its error is the one the sweep reports
// (the first member to fail in the sweep's order of entering the set).
func (b *backfill) direct(ms []member, run []int32) error {
	p := b.p
	for fi := range p.filters {
		f := &p.filters[fi]
		spans := b.spans[fi][:0]
		for i := range ms {
			if a, end, bad := f.span(p, &ms[i]); a < end {
				spans = append(spans, memberSpan{a: a, b: end, id: int32(i), bad: bad})
			}
		}
		b.spans[fi] = spans
	}
	b.accs = p.newAccums(b.accs, ms, b.cols)
	for k, ri := range run {
		b.progress(b.swept, false)
		if err := b.directRow(ms, ri); err != nil {
			if serr := b.sweep(ms, run[k:]); serr != nil {
				return serr
			}
			return fmt.Errorf("backfill row %d: %w", ri, b.inGroup(err, ri))
		}
	}
	return nil
}

// directRow computes row ri over ms: the accumulators emptied, each member
// whose span holds the row's ts added to its filter's features.
func (b *backfill) directRow(ms []member, ri int32) error {
	p := b.p
	ts := b.rows[ri].TS
	accs := b.accs
	for k := range accs {
		accs[k].restart()
	}
	for fi := range p.filters {
		f := &p.filters[fi]
		for _, s := range b.spans[fi] {
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
	return b.emit(ri)
}
