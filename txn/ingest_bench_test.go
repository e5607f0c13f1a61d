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
	noFilters := func(o *pebble.Options) {
		for i := range o.Levels {
			o.Levels[i].FilterPolicy = pebble.NoFilterPolicy
		}
	}
	dim := store.TableDef{Name: "dim", Key: []store.KeyColumn{{Name: "id", Type: store.String}}}
	benchIngestPair(b, [2]ingestSide{{name: "filters", def: dim}, {name: "nofilters", def: dim, tune: noFilters}})
}

// BenchmarkUpsertIngestDeclared is BenchmarkUpsertIngest's load into two
// stores with filters, one whose table declares its columns (city string,
// tier int64, both not null) and one whose table declares none, so the ratio
// is the cost of holding every write to a declaration.
//
//	go test ./txn -run '^$' -bench BenchmarkUpsertIngestDeclared -benchtime 8x
func BenchmarkUpsertIngestDeclared(b *testing.B) {
	plain := store.TableDef{Name: "dim", Key: []store.KeyColumn{{Name: "id", Type: store.String}}}
	declared := plain
	declared.Columns = []store.Column{{Name: "city", Type: store.ColumnType{Kind: store.TypeString}}, {Name: "tier", Type: store.ColumnType{Kind: store.TypeInt64}}}
	benchIngestPair(b, [2]ingestSide{{name: "declared", def: declared}, {name: "undeclared", def: plain}})
}

// ingestSide is one of the two stores a benchIngestPair loads.
type ingestSide struct {
	name string
	def  store.TableDef
	tune func(*pebble.Options)
}

// benchIngestPair loads two stores side by side, a round each in turn, and
// reports ns per upsert of each side and the first's over the second's.
func benchIngestPair(b *testing.B, sides [2]ingestSide) {
	const keys = 50_000
	var dbs [2]*store.DB
	for i, side := range sides {
		db, err := storetest.Open(b.TempDir(), bpebble.Options{Tune: side.tune}, store.Options{NoSync: true})
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		if _, err := db.CreateTable(side.def); err != nil {
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
	b.ReportMetric(per(spent[0]), "ns/upsert-"+sides[0].name)
	b.ReportMetric(per(spent[1]), "ns/upsert-"+sides[1].name)
	b.ReportMetric(per(spent[0])/per(spent[1]), "ratio")
}
