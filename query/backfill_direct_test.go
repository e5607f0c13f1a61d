package query_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/bitempo/bitempo/internal/testlong"
	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
)

// TestBackfillDirectMatchesSweep backfills random rows of pathStore (every
// column type, nulls, overflows, bad window columns) with every aggregation
// set of pathSpecs, evaluating every run of rows directly, by a sweep, and by
// the run's shape: each row's values and their types, or the error, must be
// the same. Each group gets from one to sixty rows, so runs fall on both
// sides of the size at which a backfill stops evaluating directly; some rows
// read at past transaction times, and table-wide backfills evaluate the whole
// table as one group.
func TestBackfillDirectMatchesSweep(t *testing.T) {
	for _, seed := range testlong.Size([]uint64{1, 2, 3, rand.Uint64()}, []uint64{1, rand.Uint64()}) {
		rng := rand.New(rand.NewPCG(seed, 21))
		db := pathStore(t, rng)
		last := db.LastTx()
		var rows []query.LeftRow
		for u := range 5 {
			for range []int{1, 2, 5, 12, 25, 60}[rng.IntN(6)] {
				r := query.LeftRow{Group: store.Key{fmt.Sprint("u", u)}, TS: (rng.Int64N(80) - 5) * pathMinute}
				if rng.IntN(4) == 0 {
					r.Tx = 1 + rng.Int64N(last)
				}
				if rng.IntN(4) == 0 {
					r.TS++ // between minutes
				}
				rows = append(rows, r)
			}
		}
		rng.Shuffle(len(rows), func(i, j int) { rows[i], rows[j] = rows[j], rows[i] })
		for _, aggs := range pathSpecs(t) {
			for _, wide := range []bool{false, true} {
				opts := query.BackfillOptions{TableWide: wide}
				want := renderEval(db, query.EvalSweep, rows, aggs, opts)
				for _, eval := range []query.EvalRule{query.EvalDirect, query.EvalByShape} {
					if got := renderEval(db, eval, rows, aggs, opts); got != want {
						t.Fatalf("seed %d, %v, table-wide %v, rule %d:\ngot\n%swant (sweep)\n%s", seed, aggs, wide, eval, got, want)
					}
				}
			}
		}
	}
}

// renderEval renders a backfill by rule eval: each row's index, values and
// their types, and the error that ends it.
func renderEval(r store.Reader, eval query.EvalRule, rows []query.LeftRow, aggs []query.Agg, opts query.BackfillOptions) string {
	var b strings.Builder
	for row, err := range query.BackfillRowsEval(eval, r, "c", rows, aggs, opts) {
		if err != nil {
			fmt.Fprintf(&b, "error: %v\n", err)
			break
		}
		fmt.Fprintf(&b, "%d:", row.Index)
		for k := range row.Len() {
			v := row.Value(k)
			fmt.Fprintf(&b, " %v (%T)", v, v)
		}
		b.WriteString("\n")
	}
	return b.String()
}
