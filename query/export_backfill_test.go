package query

import (
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
