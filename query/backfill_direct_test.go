package query_test

import (
	"fmt"
	"iter"
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
	return renderFeatures(query.BackfillRowsEval(eval, r, "c", rows, aggs, opts), -1)
}

// renderFeatures renders a backfill's rows (each row's index, values and
// their types, and the error that ends it), stopping after limit rows when
// limit >= 0.
func renderFeatures(rows iter.Seq2[*query.FeatureRow, error], limit int) string {
	var b strings.Builder
	n := 0
	for row, err := range rows {
		if n == limit {
			break
		}
		n++
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

// TestBackfillShuffledRowsAsInAppearanceOrder backfills shuffled rows of
// pathStore's groups (and of groups with no records), whose groups a backfill
// computes in the group index's order, and checks the rows it yields and the
// error that ends it against those of computing the groups in order of first
// appearance: the rows of every group, backfilled alone, in input order up to
// the first row whose group fails or appears after a failing one, then the
// error of the first failing group to appear.
func TestBackfillShuffledRowsAsInAppearanceOrder(t *testing.T) {
	for _, seed := range testlong.Size([]uint64{1, 2, rand.Uint64()}, []uint64{1, rand.Uint64()}) {
		rng := rand.New(rand.NewPCG(seed, 22))
		db := pathStore(t, rng)
		rows := make([]query.LeftRow, 120)
		for i := range rows {
			rows[i] = query.LeftRow{Group: store.Key{fmt.Sprint("u", rng.IntN(7))}, TS: (rng.Int64N(80) - 5) * pathMinute}
		}
		var order []string // groups in order of first appearance
		byGroup := map[string][]int{}
		for i, r := range rows {
			g := r.Group[0].(string)
			if _, ok := byGroup[g]; !ok {
				order = append(order, g)
			}
			byGroup[g] = append(byGroup[g], i)
		}
		for _, aggs := range pathSpecs(t) {
			lines := map[int]string{} // per row, its rendered values
			var fail string           // the error of the first failing group to appear
			failed := map[string]bool{}
			for _, g := range order {
				idx := byGroup[g]
				sub := make([]query.LeftRow, len(idx))
				for k, i := range idx {
					sub[k] = rows[i]
				}
				for k, line := range strings.Split(strings.TrimSuffix(renderEval(db, query.EvalByShape, sub, aggs, query.BackfillOptions{}), "\n"), "\n") {
					var n int
					if _, err := fmt.Sscanf(line, "error: backfill row %d:", &n); err == nil {
						failed[g] = true
						if fail == "" {
							fail = strings.Replace(line, fmt.Sprintf("row %d:", n), fmt.Sprintf("row %d:", idx[n]), 1) + "\n"
						}
						break
					}
					lines[idx[k]] = fmt.Sprintf("%d:%s\n", idx[k], strings.SplitN(line, ":", 2)[1])
				}
				if failed[g] {
					break
				}
			}
			var want strings.Builder
			for i := range rows {
				line, ok := lines[i]
				if !ok {
					break
				}
				want.WriteString(line)
			}
			want.WriteString(fail)
			if got := renderEval(db, query.EvalByShape, rows, aggs, query.BackfillOptions{}); got != want.String() {
				t.Fatalf("seed %d, %v:\ngot\n%swant\n%s", seed, aggs, got, want.String())
			}
		}
	}
}
