package txn

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	bpebble "github.com/bitempo/bitempo/engine/pebble"
	"github.com/bitempo/bitempo/internal/storetest"

	"github.com/cockroachdb/pebble/v2"

	"github.com/bitempo/bitempo/store"
)

// BenchmarkUpsertIngest measures an SCD2 ingest through Upsert: every
// iteration is one round that gives each of the keys a new version (a later
// valid time, a changed attribute), in a shuffled key order, in transactions
// of 10,000 changes. Each Upsert reads the key's versions first
// (docs/design/upsert-tail-read.md), from a store that keeps growing under the
// load (memtable, level 0 and deeper levels), so rounds later in the run read
// more. One round before the timer
// gives every key a version. Two stores are loaded side by side, one round
// each in turn, so that a busy machine slows both alike: one with the
// store's prefix bloom filters, one with Tune turning them off. Reported:
// ns/op per round of both, ns/upsert of each and their ratio.
//
//	go test ./txn -run '^$' -bench BenchmarkUpsertIngest -benchtime 8x
func BenchmarkUpsertIngest(b *testing.B) {
	const keys = 50_000
	noFilters := func(o *pebble.Options) {
		for i := range o.Levels {
			o.Levels[i].FilterPolicy = pebble.NoFilterPolicy
		}
	}
	var dbs [2]*store.DB
	for i, tune := range []func(*pebble.Options){nil, noFilters} {
		db, err := storetest.Open(b.TempDir(), bpebble.Options{Tune: tune}, store.Options{NoSync: true})
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		if _, err := db.CreateTable(store.TableDef{Name: "dim", Key: []store.KeyColumn{{Name: "id", Type: store.String}}}); err != nil {
			b.Fatal(err)
		}
		dbs[i] = db
	}
	order := make([]int, keys)
	for i := range order {
		order[i] = i
	}
	round := func(db *store.DB, r int) {
		rng := rand.New(rand.NewPCG(1, uint64(r)))
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
	for _, db := range dbs {
		round(db, 0)
	}
	b.ResetTimer()
	var spent [2]time.Duration
	for i := range b.N {
		for k := range 2 {
			j := (i + k) % 2 // alternate which store goes first
			start := time.Now()
			round(dbs[j], i+1)
			spent[j] += time.Since(start)
		}
	}
	per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(b.N*keys) }
	b.ReportMetric(per(spent[0]), "ns/upsert-filters")
	b.ReportMetric(per(spent[1]), "ns/upsert-nofilters")
	b.ReportMetric(per(spent[0])/per(spent[1]), "ratio")
}
