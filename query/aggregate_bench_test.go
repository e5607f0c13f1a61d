package query_test

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/bitempo/bitempo/engine/pebble"
	"github.com/bitempo/bitempo/internal/storetest"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// aggBench is one size of the backfill benchmark: entities x 10 versions, in
// groups of entities/groups entities, and rows left rows.
type aggBench struct {
	name                   string
	entities, groups, rows int
}

var aggBenchSizes = []aggBench{
	{"entities=1k/rows=10k", 1_000, 100, 10_000},
	{"entities=20k/rows=200k", 20_000, 2_000, 200_000},
	{"entities=100k/rows=1M", 100_000, 10_000, 1_000_000},
}

const (
	aggBenchVersions = 10
	aggBenchStep     = 10 * aggDay // valid-time distance between versions
	aggBenchPerRow   = 20_000      // rows the per-row evaluation is timed on
)

var aggBenchSpecs = []string{"sum(amount):7d,30d", "avg(amount)", "count", "exists", "count_distinct(status)"}

type aggBenchData struct {
	db   *store.DB
	rows []query.LeftRow
	aggs []query.Agg
	err  error
	warm bool
}

var (
	aggBenchMu    sync.Mutex
	aggBenchCache = map[string]*aggBenchData{}
)

// aggBenchStore builds a size's store once per process: contracts with
// a float amount and a status, each entity in one user's group, loaded the way
// an in-order SCD2 load writes them (round r upserts every entity's r-th version,
// closing the previous one, in commits of 10k entities), so the group index also
// holds the retired records a real store would. Left rows are random users
// (including ones never seen) at random times around the versions.
func aggBenchStore(b *testing.B, size aggBench) *aggBenchData {
	aggBenchMu.Lock()
	defer aggBenchMu.Unlock()
	if d, ok := aggBenchCache[size.name]; ok {
		return d
	}
	d := &aggBenchData{}
	aggBenchCache[size.name] = d
	start := time.Now()
	d.err = d.build(size)
	if d.err != nil {
		b.Fatal(d.err)
	}
	b.Logf("%s: store built in %v", size.name, time.Since(start).Round(time.Millisecond))
	return d
}

func (d *aggBenchData) build(size aggBench) error {
	// In memory, so nothing is left behind: the store is built once per process
	// and lives until it exits.
	fs := vfs.NewMem()
	var err error
	if d.db, err = storetest.Open("bench", pebble.Options{FS: fs}, store.Options{NoSync: true}); err != nil {
		return err
	}
	if _, err := d.db.CreateTable(store.TableDef{
		Name: "contracts", Key: []store.KeyColumn{{Name: "id", Type: store.Int64}}, GroupBy: []string{"user"},
	}); err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(1, 1))
	statuses := []string{"active", "paused", "closed"}
	perGroup := size.entities / size.groups
	for round := range aggBenchVersions {
		for lo := 0; lo < size.entities; lo += 10_000 {
			_, err := txn.Update(d.db, func(tx *txn.Tx) error {
				for e := lo; e < min(lo+10_000, size.entities); e++ {
					attrs := store.Attrs{
						"user":   int64(e / perGroup),
						"amount": float64(rng.IntN(100_000)) / 100,
						"status": statuses[rng.IntN(len(statuses))],
					}
					at := int64(round)*aggBenchStep + int64(e%10)*aggDay
					if _, err := tx.Upsert("contracts", store.Key{int64(e)}, attrs, at); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				return err
			}
		}
	}
	// Reopen, so that the benchmark reads sstables as a long-lived store does,
	// not the memtable the load left behind.
	if err := d.db.Close(); err != nil {
		return err
	}
	if d.db, err = storetest.Open("bench", pebble.Options{FS: fs}, store.Options{}); err != nil {
		return err
	}
	d.rows = make([]query.LeftRow, size.rows)
	span := int64(aggBenchVersions+2) * aggBenchStep
	for i := range d.rows {
		d.rows[i] = query.LeftRow{
			Group: store.Key{int64(rng.IntN(size.groups + size.groups/100))},
			TS:    rng.Int64N(span) - aggBenchStep,
		}
	}
	for _, spec := range aggBenchSpecs {
		a, err := query.ParseAgg(spec)
		if err != nil {
			return err
		}
		d.aggs = append(d.aggs, a)
	}
	return nil
}

// BenchmarkBackfill times a backfill sweep against per-row evaluation (one
// Aggregate call per left row, on one snapshot) in the same run and reports both
// per left row and their ratio. Per-row evaluation is timed on the first 20k rows
// (the rows are random, so they are representative) and its results are checked
// against the sweep's. The larger sizes build their stores once per process (the
// 1M-version store takes minutes); -short skips them, and -bench
// 'Backfill/entities=1k' runs only the small one.
func BenchmarkBackfill(b *testing.B) {
	for _, size := range aggBenchSizes {
		b.Run(size.name, func(b *testing.B) {
			if size.rows > 100_000 && testing.Short() {
				b.Skip("large size: skipped with -short")
			}
			d := aggBenchStore(b, size)
			s, err := d.db.Snapshot()
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			sweep := make([][]any, len(d.rows))
			if !d.warm { // one untimed pass, so neither side runs on a cold block cache
				for _, err := range query.Backfill(s, "contracts", d.rows, d.aggs, query.BackfillOptions{}) {
					if err != nil {
						b.Fatal(err)
					}
				}
				d.warm = true
			}
			b.ResetTimer()
			for range b.N {
				for r, err := range query.Backfill(s, "contracts", d.rows, d.aggs, query.BackfillOptions{}) {
					if err != nil {
						b.Fatal(err)
					}
					sweep[r.Index] = r.Values
				}
			}
			b.StopTimer()
			sweepNs := float64(b.Elapsed().Nanoseconds()) / float64(b.N*len(d.rows))

			sample := d.rows[:min(aggBenchPerRow, len(d.rows))]
			perRow := make([][]any, len(sample))
			start := time.Now()
			for i, row := range sample {
				f, err := query.Aggregate(s, "contracts", row.Group, query.AsOf{Valid: row.TS}, d.aggs)
				if err != nil {
					b.Fatal(err)
				}
				perRow[i] = f.Values
			}
			perRowNs := float64(time.Since(start).Nanoseconds()) / float64(len(sample))
			for i := range perRow {
				if fmt.Sprint(perRow[i]) != fmt.Sprint(sweep[i]) {
					b.Fatalf("row %d %+v: per-row %v, sweep %v", i, sample[i], perRow[i], sweep[i])
				}
			}
			b.ReportMetric(sweepNs, "sweep-ns/row")
			b.ReportMetric(perRowNs, "perrow-ns/row")
			b.ReportMetric(perRowNs/sweepNs, "speedup")
		})
	}
}
