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

// TestBackfillOnWorkersAsOnOne backfills random rows of pathStore's groups
// (and of groups with no records) with every aggregation set of pathSpecs on
// two, three and eight goroutines, and checks each against the same backfill
// on one: the rows in input order, their values and types, and the error that
// ends it (the first failing group to appear, whichever goroutine finishes
// first). The rows come clustered by group and shuffled, some reading at past
// transaction times. Each backfill is also stopped after a random number of
// rows, which must be the first rows of the whole one.
func TestBackfillOnWorkersAsOnOne(t *testing.T) {
	for _, seed := range testlong.Size([]uint64{1, 2, rand.Uint64()}, []uint64{1, rand.Uint64()}) {
		rng := rand.New(rand.NewPCG(seed, 23))
		db := pathStore(t, rng)
		last := db.LastTx()
		var rows []query.LeftRow
		for g := range 9 {
			for range 1 + rng.IntN(30) {
				r := query.LeftRow{Group: store.Key{fmt.Sprint("u", g)}, TS: (rng.Int64N(80) - 5) * pathMinute}
				if rng.IntN(5) == 0 {
					r.Tx = 1 + rng.Int64N(last)
				}
				rows = append(rows, r)
			}
		}
		shuffled := append([]query.LeftRow(nil), rows...)
		rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		for _, in := range [][]query.LeftRow{rows, shuffled} {
			for _, aggs := range pathSpecs(t) {
				want := renderWorkers(db, 1, in, aggs, -1)
				for _, workers := range []int{2, 3, 8} {
					if got := renderWorkers(db, workers, in, aggs, -1); got != want {
						t.Fatalf("seed %d, %v, %d goroutines:\ngot\n%swant (one goroutine)\n%s", seed, aggs, workers, got, want)
					}
					limit := rng.IntN(len(in))
					got := renderWorkers(db, workers, in, aggs, limit)
					if wantLines := strings.SplitAfter(want, "\n"); limit < len(wantLines) && got != strings.Join(wantLines[:limit], "") {
						t.Fatalf("seed %d, %v, %d goroutines, stopped after %d rows:\ngot\n%swant the first rows of\n%s", seed, aggs, workers, limit, got, want)
					}
				}
			}
		}
	}
}

// renderWorkers renders a backfill on workers goroutines as renderEval does,
// stopping after limit rows when limit >= 0.
func renderWorkers(r store.Reader, workers int, rows []query.LeftRow, aggs []query.Agg, limit int) string {
	return renderFeatures(query.BackfillRowsWorkers(workers, r, "c", rows, aggs, query.BackfillOptions{}), limit)
}

// TestBackfillProgressOnWorkers checks Progress on a backfill computed by
// several goroutines: it is called on the backfill's goroutine only (the race
// detector sees the unsynchronized appends), its row and group counts never
// go back, and its last call reports every row and group.
func TestBackfillProgressOnWorkers(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 23))
	db := pathStore(t, rng)
	rows := make([]query.LeftRow, 600)
	for i := range rows {
		rows[i] = query.LeftRow{Group: store.Key{fmt.Sprint("u", rng.IntN(6))}, TS: (rng.Int64N(80) - 5) * pathMinute}
	}
	count, err := query.ParseAgg("count")
	if err != nil {
		t.Fatal(err)
	}
	var progress []query.BackfillProgress
	opts := query.BackfillOptions{ProgressEvery: 25, Progress: func(p query.BackfillProgress) { progress = append(progress, p) }}
	n := 0
	for _, err := range query.BackfillRowsWorkers(3, db, "c", rows, []query.Agg{count}, opts) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != len(rows) || len(progress) < 2 {
		t.Fatalf("%d rows, progress %+v", n, progress)
	}
	for i := 1; i < len(progress); i++ {
		if progress[i].Rows < progress[i-1].Rows || progress[i].Groups < progress[i-1].Groups {
			t.Fatalf("progress went back: %+v", progress)
		}
	}
	if last := progress[len(progress)-1]; last != (query.BackfillProgress{Rows: 600, TotalRows: 600, Groups: 6, TotalGroups: 6}) {
		t.Fatalf("last progress %+v", last)
	}
}
