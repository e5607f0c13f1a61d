package query_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/bitempo/bitempo/internal/testutil/randstore"
	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
)

// TestBackfillAfterAnotherMatchesAggregate runs backfills one after another
// in one process, of more rows and features and of fewer, some stopped part
// way and on several goroutines, and checks every row of each against
// Aggregate at the row's group and times: a backfill writes its features into
// arrays an earlier one finished with, and must never yield what that one
// left there.
func TestBackfillAfterAnotherMatchesAggregate(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 29))
	db := pathStore(t, rng)
	last := db.LastTx()
	sets := pathSpecs(t)
	for round := range 40 {
		aggs := sets[rng.IntN(len(sets))]
		rows := randomLeftRows(rng, 1+rng.IntN(400), last)
		want := make([]string, len(rows))
		failing := false
		for i, r := range rows {
			f, err := query.Aggregate(db, "c", r.Group, query.AsOf{Valid: r.TS, Tx: r.Tx}, aggs)
			if err != nil {
				failing = true
				break
			}
			want[i] = fmt.Sprintf("%v", f.Values)
		}
		workers := 1 + rng.IntN(3)
		stopAt := len(rows)
		if rng.IntN(3) == 0 {
			stopAt = rng.IntN(len(rows))
		}
		n := 0
		for row, err := range query.BackfillRowsWorkers(workers, db, "c", rows, aggs, query.BackfillOptions{}) {
			if err != nil {
				if !failing {
					t.Fatalf("round %d, %v: %v", round, aggs, err)
				}
				break
			}
			if n == stopAt {
				break
			}
			n++
			values := make([]any, row.Len())
			for k := range values {
				values[k] = row.Value(k)
			}
			if got := fmt.Sprintf("%v", values); !failing && got != want[row.Index] {
				t.Fatalf("round %d, %v, %d goroutines: row %d (%v) is %s, Aggregate says %s", round, aggs, workers, row.Index, rows[row.Index], got, want[row.Index])
			}
		}
		if !failing && stopAt == len(rows) && n != len(rows) {
			t.Fatalf("round %d: %d rows, want %d", round, n, len(rows))
		}
	}
}

// TestBackfillFeaturesTogetherAsAlone backfills each of pathSpecs' sets of
// several features (one aggregation of a column over several windows, and
// many aggregations together) and checks every row's every feature against a
// backfill of that feature alone: features that read one column share work
// (COUNT_DISTINCT numbers the column's values once per set of members), and
// must not share results.
func TestBackfillFeaturesTogetherAsAlone(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 31))
	db := pathStore(t, rng)
	rows := randomLeftRows(rng, 300, db.LastTx())
	values := func(aggs []query.Agg) ([][]string, error) {
		out := make([][]string, len(rows))
		for row, err := range query.BackfillRows(db, "c", rows, aggs, query.BackfillOptions{}) {
			if err != nil {
				return nil, err
			}
			for k := range row.Len() {
				v := row.Value(k)
				out[row.Index] = append(out[row.Index], fmt.Sprintf("%v (%T)", v, v))
			}
		}
		return out, nil
	}
	checked := 0
	for _, aggs := range pathSpecs(t) {
		if len(aggs) < 2 {
			continue
		}
		together, err := values(aggs)
		if err != nil {
			continue // a set that fails (a SUM of strings) fails alone too
		}
		col := 0 // together's first column of a (an aggregation over several windows has one per window)
		for _, a := range aggs {
			alone, err := values([]query.Agg{a})
			if err != nil {
				t.Fatalf("%v alone: %v, together it computed", a, err)
			}
			for i := range rows {
				for w := range alone[i] {
					if together[i][col+w] != alone[i][w] {
						t.Fatalf("%v: row %d (%v), feature %d is %s with %v, %s alone", a, i, rows[i], w, together[i][col+w], aggs, alone[i][w])
					}
				}
			}
			col += len(alone[0])
			checked++
		}
		if col != len(together[0]) {
			t.Fatalf("%v: %d features alone, %d together", aggs, col, len(together[0]))
		}
	}
	if checked < 20 {
		t.Fatalf("only %d features checked", checked)
	}
}

// randomLeftRows returns n left rows over pathStore's groups u0-u11 (some
// with no records), at times around its versions' periods, a quarter of them
// reading at a past transaction time up to last.
func randomLeftRows(rng *rand.Rand, n int, last int64) []query.LeftRow {
	rows := make([]query.LeftRow, n)
	for i := range rows {
		rows[i] = query.LeftRow{Group: store.Key{fmt.Sprint("u", rng.IntN(12))}, TS: (rng.Int64N(80) - 5) * pathMinute}
		if rng.IntN(4) == 0 {
			rows[i].Tx = 1 + rng.Int64N(last)
		}
	}
	return rows
}

// TestBackfillLongGroupHistoriesMatchesAggregate backfills rows whose times
// lie in narrow spans of long group histories (keys of a hundred writes each,
// some moving between groups), at the newest transaction time and at past
// ones, and checks every row against Aggregate: the group scan seeks past the
// entries of a key that start after the rows' span and past the rest of a key
// once its current entries end before it, and must skip no member a row needs.
func TestBackfillLongGroupHistoriesMatchesAggregate(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 37))
	db := groupedStore(t)
	txs := randstore.Write(t, db, rng, randstore.History{
		Table: "c", Commits: 200, MaxOps: 3,
		Ops: []randstore.Op{randstore.Upsert, randstore.Upsert, randstore.Upsert, randstore.Put, randstore.Delete},
		Key: func(int) store.Key { return store.Key{rng.Int64N(4)} },
		Attrs: func() store.Attrs {
			return store.Attrs{
				"user": fmt.Sprint("u", min(rng.IntN(12), 1)), // mostly u1
				"i":    rng.Int64N(100),
				"s":    []string{"a", "b", "c"}[rng.IntN(3)],
				"when": rng.Int64N(400) * pathMinute,
			}
		},
		Valid: 400, Unit: pathMinute, PutLen: 6, DeleteLen: 4,
	})
	var aggs []query.Agg
	for _, spec := range []string{"count", "sum(i):5m,30m", "max(i)", "exists@when:10m", "count_distinct(s)", "latest(i)"} {
		a, err := query.ParseAgg(spec)
		if err != nil {
			t.Fatal(err)
		}
		aggs = append(aggs, a)
	}
	for round := range 30 {
		var tx int64 // the newest
		if round%3 == 1 {
			tx = txs[rng.IntN(len(txs))]
		}
		at := rng.Int64N(420) - 10
		rows := make([]query.LeftRow, 1+rng.IntN(40))
		for i := range rows {
			rows[i] = query.LeftRow{Group: store.Key{fmt.Sprint("u", rng.IntN(2))}, TS: (at + rng.Int64N(1+rng.Int64N(12))) * pathMinute, Tx: tx}
		}
		got := backfillValues(t, db, rows, aggs)
		for i, r := range rows {
			f, err := query.Aggregate(db, "c", r.Group, query.AsOf{Valid: r.TS, Tx: r.Tx}, aggs)
			if err != nil {
				t.Fatal(err)
			}
			if want := fmt.Sprintf("%v", f.Values); got[i] != want {
				t.Fatalf("round %d: row %d (%v) is %s, Aggregate says %s", round, i, r, got[i], want)
			}
		}
	}
}

// backfillValues backfills rows and returns each row's features, formatted.
func backfillValues(t *testing.T, db *store.DB, rows []query.LeftRow, aggs []query.Agg) []string {
	t.Helper()
	out := make([]string, len(rows))
	for row, err := range query.BackfillRows(db, "c", rows, aggs, query.BackfillOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		values := make([]any, row.Len())
		for k := range values {
			values[k] = row.Value(k)
		}
		out[row.Index] = fmt.Sprintf("%v", values)
	}
	return out
}
