package query

import (
	"iter"

	"github.com/bitempo/bitempo/store"
)

// AggPath is how an aggregation holds attribute values (aggint.go), for the
// tests and benchmarks that compare the integer path with the generic one.
type AggPath = aggPath

// The aggregation paths.
const (
	IntPath     = intPath
	GenericPath = genericPath
)

// AggregateOn is Aggregate on path.
func AggregateOn(path AggPath, r store.Reader, table string, group store.Key, at AsOf, aggs []Agg) (Features, error) {
	return aggregate(r, table, group, at, aggs, path)
}

// AggregateTableOn is AggregateTable on path.
func AggregateTableOn(path AggPath, r store.Reader, table string, at AsOf, aggs []Agg) (Features, error) {
	return aggregateTable(r, table, at, aggs, path)
}

// BackfillOn is Backfill on path.
func BackfillOn(path AggPath, r store.Reader, table string, rows []LeftRow, aggs []Agg, opts BackfillOptions) iter.Seq2[BackfillRow, error] {
	return backfillOn(r, table, rows, aggs, opts, path)
}

// PlanTables returns the tables an aggregation plan of aggs over table reads
// through on path: records, for the group index, and versions, for scans.
func PlanTables(path AggPath, s *store.Snapshot, table string, aggs []Agg) (records, versions *store.Table, err error) {
	t, err := s.Table(table)
	if err != nil {
		return nil, nil, err
	}
	p, err := newPlan(s, t, aggs, path)
	if err != nil {
		return nil, nil, err
	}
	return p.t, p.readTable(), nil
}

// ResolveSplit runs Resolve's batch join of facts over table t of s with the
// given number of workers and key ranges (batch.go).
func ResolveSplit(s *store.Snapshot, t *store.Table, facts []Fact, attrs bool, workers, ranges int) ([]Resolution, error) {
	return resolveSplit(s, t, facts, attrs, workers, ranges)
}
