package query_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/bitempo/bitempo/internal/testlong"
	"github.com/bitempo/bitempo/internal/testutil/randstore"
	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
)

// intStore returns a grouped table whose amounts are int64s (with mixed,
// sometimes floats, nulls and uint64s) and whose big values are huge int64s,
// whose sums overflow int64 (to a uint64 result or an *AggValueError).
func intStore(t *testing.T, rng *rand.Rand, mixed bool) *store.DB {
	db := groupedStore(t)
	amount := func() any {
		if mixed {
			switch rng.IntN(60) {
			case 0, 1, 2, 3, 4:
				return nil
			case 5, 6:
				return float64(rng.IntN(100)) + 0.5
			case 7:
				return uint64(math.MaxInt64) + 1 + rng.Uint64N(3)
			}
		}
		return rng.Int64N(2000) - 1000
	}
	big := func() int64 {
		switch rng.IntN(4) {
		case 0, 1:
			return math.MaxInt64/3 - rng.Int64N(3)
		case 2:
			return math.MinInt64/3 + rng.Int64N(3)
		}
		return rng.Int64N(100)
	}
	randstore.Write(t, db, rng, randstore.History{
		Table: "c", Commits: 40, MaxOps: 5, Ops: []randstore.Op{randstore.Upsert, randstore.Put},
		Key: func(int) store.Key { return store.Key{rng.Int64N(30)} },
		Attrs: func() store.Attrs {
			a := store.Attrs{"user": fmt.Sprint("u", rng.IntN(4)), "amount": amount(), "big": big(), "note": "x", "status": []string{"a", "b"}[rng.IntN(2)]}
			if rng.IntN(6) == 0 {
				delete(a, "amount")
			}
			return a
		},
		Valid: 60, PutLen: 20,
	})
	return db
}

// TestBackfillIntPathMatchesGeneric runs the same backfills on the integer
// path and on the generic one: every row's values and their types, or the
// error, must be the same.
func TestBackfillIntPathMatchesGeneric(t *testing.T) {
	for _, seed := range testlong.Size([]uint64{1, 2, 3, rand.Uint64()}, []uint64{1, rand.Uint64()}) {
		for _, mixed := range []bool{false, true} {
			rng := rand.New(rand.NewPCG(seed, 11))
			db := intStore(t, rng, mixed)
			parse := func(specs ...string) []query.Agg {
				var aggs []query.Agg
				for _, spec := range specs {
					a, err := query.ParseAgg(spec)
					if err != nil {
						t.Fatal(err)
					}
					aggs = append(aggs, a)
				}
				return aggs
			}
			sets := [][]query.Agg{
				parse("count", "sum(amount)", "avg(amount)", "min(amount)", "max(amount)", "sum(amount):5d", "max(amount):5d",
					"count_distinct(status)", "latest(amount)", "min(big)", "max(big)", "avg(big)"),
				parse("sum(big)"), // overflows: a uint64, or an error
			}
			last := db.LastTx()
			rows := make([]query.LeftRow, 500)
			for i := range rows {
				rows[i] = query.LeftRow{Group: store.Key{fmt.Sprint("u", rng.IntN(5))}, TS: rng.Int64N(80) - 5}
				if rng.IntN(3) == 0 {
					rows[i].Tx = 1 + rng.Int64N(last)
				}
			}
			run := func(aggs []query.Agg, ints bool) string {
				path := query.GenericPath
				if ints {
					path = query.IntPath
				}
				out := ""
				for r, err := range query.BackfillOn(path, db, "c", rows, aggs, query.BackfillOptions{}) {
					if err != nil {
						return out + "error: " + err.Error()
					}
					out += fmt.Sprintf("%d %v %T\n", r.Index, r.Values, r.Values)
					for _, v := range r.Values {
						out += fmt.Sprintf("%T ", v)
					}
				}
				return out
			}
			for k, aggs := range sets {
				a, b := run(aggs, true), run(aggs, false)
				if testing.Verbose() {
					t.Logf("seed %d mixed %v set %d: %d bytes, error: %v, uint64: %v", seed, mixed, k, len(a), strings.Contains(a, "error"), strings.Contains(a, "uint64 "))
				}
				if a != b {
					t.Fatalf("seed %d mixed %v set %d: integer path\n%s\ngeneric\n%s", seed, mixed, k, a, b)
				}
			}
		}
	}
}

// groupedStore opens an in-memory store with one table, "c", keyed by an
// int64 "id" and grouped by "user"; it is closed when the test ends.
func groupedStore(t *testing.T) *store.DB {
	t.Helper()
	db, err := store.Open("db", store.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.CreateTable(store.TableDef{Name: "c", Key: []store.KeyColumn{{Name: "id", Type: store.Int64}}, GroupBy: []string{"user"}, MixedTypes: true}); err != nil {
		t.Fatal(err)
	}
	return db
}
