package query_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// TestBackfillRowsAllocatePerBatch checks that BackfillRows allocates per
// batch, not per group or row: a batch of twenty times the rows over twenty
// times the groups may allocate more only for the growth of its buffers
// (each doubling is one allocation), not for each of its groups.
func TestBackfillRowsAllocatePerBatch(t *testing.T) {
	if raceEnabled {
		t.Skip("allocations are not counted under the race detector (race_test.go)")
	}
	const users = 2_000
	db, err := store.Open("db", store.Options{InMemory: true, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	def := store.TableDef{Name: "contracts", Key: []store.KeyColumn{{Name: "id", Type: store.String}}, GroupBy: []string{"user"}}
	if _, err := db.CreateTable(def); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 5))
	for lo := 0; lo < users; lo += 500 {
		_, err := txn.Update(db, func(tx *txn.Tx) error {
			for u := lo; u < lo+500; u++ {
				for c := range 2 {
					for v := range int64(3) {
						attrs := store.Attrs{"user": fmt.Sprintf("u%05d", u), "amount": rng.Int64N(100), "status": []string{"a", "b"}[rng.IntN(2)]}
						if err := tx.Put("contracts", store.Key{fmt.Sprintf("k%05d-%d", u, c)}, attrs, 10*v, 10*v+10); err != nil {
							return err
						}
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	aggs := parseAggs(t, "count", "sum(amount)", "count_distinct(status)")
	s, err := db.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rows := func(groups int) []query.LeftRow {
		out := make([]query.LeftRow, 2*groups)
		for i := range out {
			out[i] = query.LeftRow{Group: store.Key{fmt.Sprintf("u%05d", rng.IntN(groups))}, TS: rng.Int64N(30)}
		}
		return out
	}
	allocs := func(in []query.LeftRow) float64 {
		return testing.AllocsPerRun(3, func() {
			n := 0
			for _, err := range query.BackfillRows(s, "contracts", in, aggs, query.BackfillOptions{}) {
				if err != nil {
					t.Fatal(err)
				}
				n++
			}
			if n != len(in) {
				t.Fatalf("backfill yielded %d rows of %d", n, len(in))
			}
		})
	}
	small, large := allocs(rows(users/20)), allocs(rows(users))
	t.Logf("%.0f allocations for %d groups, %.0f for %d", small, users/20, large, users)
	if perGroup := (large - small) / (users - users/20); perGroup > 0.1 {
		t.Errorf("%.0f allocations for %d groups, %.0f for %d: %.2f per extra group, want a constant per batch",
			small, users/20, large, users, perGroup)
	}
}

// parseAggs parses specs with query.ParseAgg, failing t on an error.
func parseAggs(t testing.TB, specs ...string) []query.Agg {
	t.Helper()
	aggs := make([]query.Agg, len(specs))
	for i, spec := range specs {
		a, err := query.ParseAgg(spec)
		if err != nil {
			t.Fatal(err)
		}
		aggs[i] = a
	}
	return aggs
}
