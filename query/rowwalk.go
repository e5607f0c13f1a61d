package query

import (
	"cmp"
	"iter"
)

// This file turns a row walk (a read that calls fn with one reused row per
// result, as HistoryRows and ChangesRows do) into the reads that copy each
// row out, and counts a page's rows: the copying reads and the pages are
// loops over the row walks, so that each read's options, Limit and cursors
// have one implementation.

// copyRows yields each row walk hands out, copied out by copyOut (which must
// not keep the row). A failure of copyOut or of the walk is the last pair it
// yields; once the loop has ended it yields nothing more.
func copyRows[R, V any](walk func(fn func(R) bool) error, copyOut func(R) (V, error)) iter.Seq2[V, error] {
	return func(yield func(V, error) bool) {
		var failed error
		stopped := false // the loop has ended: yield no more
		err := walk(func(row R) bool {
			var v V
			if v, failed = copyOut(row); failed != nil {
				return false
			}
			stopped = !yield(v, nil)
			return !stopped
		})
		if err = cmp.Or(failed, err); err != nil && !stopped {
			var zero V
			yield(zero, err)
		}
	}
}

// collectRows returns the rows walk hands out, each copied out by copyOut
// (which must not keep the row), or the first failure of copyOut or of the
// walk.
func collectRows[R, V any](walk func(fn func(R) bool) error, copyOut func(R) (V, error)) ([]V, error) {
	var out []V
	var failed error
	err := walk(func(row R) bool {
		var v V
		if v, failed = copyOut(row); failed != nil {
			return false
		}
		out = append(out, v)
		return true
	})
	if err = cmp.Or(failed, err); err != nil {
		return nil, err
	}
	return out, nil
}

// limitRows returns fn passing on at most limit rows, every row when limit
// is not positive. At the row after the limit-th it calls more instead and
// stops the walk, so more is called only when rows are left after the last
// one fn saw.
func limitRows[R any](limit int, fn func(R) bool, more func()) func(R) bool {
	if limit <= 0 {
		return fn
	}
	n := 0
	return func(row R) bool {
		if n == limit {
			more()
			return false
		}
		n++
		return fn(row)
	}
}
