package txn

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/bitempo/bitempo/store"
)

// BenchmarkUpsertIngest measures an SCD2 ingest through Upsert: every
// iteration is one round that gives each of the keys a new version (a later
// valid time, a changed attribute), in a shuffled key order, in transactions
// of 10,000 changes. Each Upsert reads the key's versions first (the per-key
// read the ingest profile of BENCHMARKS.md puts at 60% of the load), from a
// store that keeps growing under the load (memtable, level 0 and deeper
// levels), so rounds later in the run read more. One round before the timer
// gives every key a version. Reported: ns/op per round and ns/upsert.
//
//	go test ./txn -run '^$' -bench BenchmarkUpsertIngest -benchtime 8x
func BenchmarkUpsertIngest(b *testing.B) {
	const keys = 50_000
	db, err := store.Open(b.TempDir(), store.Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	if _, err := db.CreateTable(store.TableDef{Name: "dim", Key: []store.KeyColumn{{Name: "id", Type: store.String}}}); err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	order := make([]int, keys)
	for i := range order {
		order[i] = i
	}
	round := func(r int) {
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		for lo := 0; lo < keys; lo += 10_000 {
			_, err := Update(db, func(tx *Tx) error {
				for _, k := range order[lo:min(lo+10_000, keys)] {
					attrs := store.Attrs{"city": fmt.Sprintf("city-%d", (k+r)%97), "tier": int64(r)}
					if _, err := tx.Upsert("dim", store.Key{fmt.Sprintf("customer-%07d", k)}, attrs, int64(r*1000)); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	round(0)
	b.ResetTimer()
	for i := range b.N {
		round(i + 1)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*keys), "ns/upsert")
}
