package query

import (
	"hash/maphash"
	"iter"

	"github.com/bitempo/bitempo/store"
)

// EvalRule is how a backfill evaluates a run of rows (backfill_direct.go),
// for the tests that compare direct evaluation with the sweep.
type EvalRule = evalRule

// The evaluation rules: by the run's shape (every backfill's), always a
// sweep, always direct.
const (
	EvalByShape = evalByShape
	EvalSweep   = evalSweep
	EvalDirect  = evalDirect
)

// BackfillRowsEval is BackfillRows evaluating runs of rows by rule eval.
func BackfillRowsEval(eval EvalRule, r store.Reader, table string, rows []LeftRow, aggs []Agg, opts BackfillOptions) iter.Seq2[*FeatureRow, error] {
	return backfillRowsOn(r, table, rows, aggs, opts, intPath, eval, 0)
}

// BackfillRowsWorkers is BackfillRows computing its groups on workers
// goroutines, however few its rows.
func BackfillRowsWorkers(workers int, r store.Reader, table string, rows []LeftRow, aggs []Agg, opts BackfillOptions) iter.Seq2[*FeatureRow, error] {
	return backfillRowsOn(r, table, rows, aggs, opts, intPath, evalByShape, workers)
}

// SetGroupKeyHash makes backfills hash group keys with h, so a test can
// make keys collide, until the returned function restores the hash.
func SetGroupKeyHash(h func(maphash.Seed, []byte) uint64) (restore func()) {
	old := groupKeyHash
	groupKeyHash = h
	return func() { groupKeyHash = old }
}

// BackfillGroups returns how a backfill of rows over table groups them: each
// group's encoded key, in order of first appearance, and each row's group.
func BackfillGroups(s *store.Snapshot, table string, rows []LeftRow, aggs []Agg) (groups [][]byte, rowGroup []int32, err error) {
	b, err := newBackfill(s, table, rows, aggs, BackfillOptions{}, intPath, evalByShape, 1)
	if err != nil {
		return nil, nil, err
	}
	return b.groups, b.rowGroup, b.scan.Close()
}
