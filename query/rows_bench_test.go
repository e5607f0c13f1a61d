package query_test

import (
	"fmt"
	"iter"
	"math/rand/v2"
	"runtime"
	"sync"
	"syscall"
	"testing"

	"github.com/bitempo/bitempo/engine/pebble"
	"github.com/bitempo/bitempo/internal/storetest"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// rowsBenchFacts is how many facts BenchmarkResolveRows resolves: the peer
// harness's medium batch, ten per key.
const rowsBenchFacts = benchFacts

// mallocs returns the heap allocations the process has made so far.
func mallocs() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.Mallocs
}

// reportPer reports the time and heap allocations per item of a benchmark
// that handles n items per iteration.
func reportPer(b *testing.B, n int, unit string, before uint64) {
	allocs := float64(mallocs()-before) / float64(b.N*n)
	b.ReportMetric(perOp(b)/float64(n), "ns/"+unit)
	b.ReportMetric(allocs, "allocs/"+unit)
}

// BenchmarkResolveRows resolves 1M facts with their city and tier against
// the 100k keys x 10 versions of BenchmarkResolve, through the map API
// (Resolution.Attrs), the raw API (Resolution.RawAttrs walked) and the row
// view (ResolveRows), reporting time and heap allocations per fact.
func BenchmarkResolveRows(b *testing.B) {
	env := benchSetup(b)
	facts := benchFactSet()[:rowsBenchFacts]
	s, err := env.db.Snapshot()
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	project := []string{"city", "tier"}
	b.Run("map", func(b *testing.B) {
		before := mallocs()
		for b.Loop() {
			res, err := query.Resolve(s, "dim", facts, query.ResolveOptions{Miss: query.MissNull, Attrs: true, Project: project})
			if err != nil {
				b.Fatal(err)
			}
			for i := range res {
				_, _ = res[i].Attrs["tier"].(int64)
			}
		}
		reportPer(b, len(facts), "fact", before)
	})
	b.Run("raw", func(b *testing.B) {
		before := mallocs()
		for b.Loop() {
			res, err := query.Resolve(s, "dim", facts, query.ResolveOptions{Miss: query.MissNull, Attrs: true, RawAttrs: true, Project: project})
			if err != nil {
				b.Fatal(err)
			}
			for i := range res {
				if err := res[i].RawAttrs().Walk(func(string, *encoding.Value) error { return nil }); err != nil {
					b.Fatal(err)
				}
			}
		}
		reportPer(b, len(facts), "fact", before)
	})
	tiers := make([]int64, len(facts))
	tier := store.NewAttrRef("tier")
	b.Run("rows", func(b *testing.B) {
		before := mallocs()
		for b.Loop() {
			err := query.ResolveRows(s, "dim", facts, query.ResolveOptions{Miss: query.MissNull, Attrs: true, Project: project},
				func(row *query.ResolvedRow) error {
					if !row.Found() {
						return nil
					}
					tiers[row.Index], _ = row.Int64(tier)
					return nil
				})
			if err != nil {
				b.Fatal(err)
			}
		}
		reportPer(b, len(facts), "fact", before)
	})
}

// rowsAggBench is the shape of the peer harness's backfill (workload 8) at a
// fifth of its medium scale: users with ten contracts of ten versions each
// (100 versions per group), and twenty left rows per user.
const (
	rowsAggUsers = 1_000
	rowsAggRows  = 20_000
	rowsAggDay   = int64(86_400_000_000)
)

var rowsAggSpecs = []string{"count", "sum(amount)", "sum(amount):30d", "max(amount)", "count_distinct(status)"}

var (
	rowsAggOnce sync.Once
	rowsAggDB   *store.DB
	rowsAggErr  error
	rowsAggIn   []query.LeftRow
)

func rowsAggSetup(b *testing.B) (*store.DB, []query.LeftRow, []query.Agg) {
	rowsAggOnce.Do(func() { rowsAggDB, rowsAggIn, rowsAggErr = buildRowsAgg() })
	if rowsAggErr != nil {
		b.Fatal(rowsAggErr)
	}
	var aggs []query.Agg
	for _, spec := range rowsAggSpecs {
		a, err := query.ParseAgg(spec)
		if err != nil {
			b.Fatal(err)
		}
		aggs = append(aggs, a)
	}
	return rowsAggDB, rowsAggIn, aggs
}

// buildRowsAgg loads the contracts as the harness does (Puts of explicit
// periods in commits of 1,000) into an in-memory store and reopens it.
func buildRowsAgg() (*store.DB, []query.LeftRow, error) {
	fs := vfs.NewMem()
	db, err := storetest.Open("rows", pebble.Options{FS: fs}, store.Options{NoSync: true})
	if err != nil {
		return nil, nil, err
	}
	def := store.TableDef{Name: "contracts", Key: []store.KeyColumn{{Name: "contract_id", Type: store.String}}, GroupBy: []string{"user_id"}}
	if _, err := db.CreateTable(def); err != nil {
		return nil, nil, err
	}
	rng := rand.New(rand.NewPCG(8, 8))
	statuses := []string{"active", "pending", "suspended", "closed"}
	epoch := 19_723 * rowsAggDay
	type put struct {
		id    string
		attrs store.Attrs
		from  int64
		to    int64
	}
	var puts []put
	for u := range rowsAggUsers {
		user := fmt.Sprintf("u%09d", u)
		for c := range 10 {
			id := fmt.Sprintf("k%09d-%d", u, c)
			t := epoch + rng.Int64N(30*rowsAggDay)
			for v := range 10 {
				next := t + rowsAggDay + rng.Int64N(60*rowsAggDay)
				to := next
				if v == 9 && rng.IntN(5) != 0 {
					to = store.Infinity
				}
				puts = append(puts, put{id: id, from: t, to: to,
					attrs: store.Attrs{"user_id": user, "amount": 1 + rng.Int64N(1000), "status": statuses[rng.IntN(len(statuses))]}})
				t = next
			}
		}
	}
	for lo := 0; lo < len(puts); lo += 1_000 {
		_, err := txn.Update(db, func(tx *txn.Tx) error {
			for _, p := range puts[lo:min(lo+1_000, len(puts))] {
				if err := tx.Put("contracts", store.Key{p.id}, p.attrs, p.from, p.to); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return nil, nil, err
		}
	}
	if err := db.Close(); err != nil {
		return nil, nil, err
	}
	if db, err = storetest.Open("rows", pebble.Options{FS: fs}, store.Options{}); err != nil {
		return nil, nil, err
	}
	rows := make([]query.LeftRow, rowsAggRows)
	for i := range rows {
		rows[i] = query.LeftRow{Group: store.Key{fmt.Sprintf("u%09d", rng.IntN(rowsAggUsers))}, TS: epoch + rng.Int64N(730*rowsAggDay)}
	}
	return db, rows, nil
}

// BenchmarkBackfillRows backfills the harness's features over the harness's
// shape through Backfill (a []any per row), reporting time and heap
// allocations per left row.
func BenchmarkBackfillRows(b *testing.B) {
	db, rows, aggs := rowsAggSetup(b)
	s, err := db.Snapshot()
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	b.Run("values", func(b *testing.B) {
		before := mallocs()
		for b.Loop() {
			for r, err := range query.Backfill(s, "contracts", rows, aggs, query.BackfillOptions{}) {
				if err != nil {
					b.Fatal(err)
				}
				_ = r.Values[0]
			}
		}
		reportPer(b, len(rows), "row", before)
	})
	b.Run("rows", func(b *testing.B) {
		before := mallocs()
		sums := make([]int64, len(rows))
		for b.Loop() {
			for r, err := range query.BackfillRows(s, "contracts", rows, aggs, query.BackfillOptions{}) {
				if err != nil {
					b.Fatal(err)
				}
				sums[r.Index], _ = r.Int(1)
			}
		}
		reportPer(b, len(rows), "row", before)
	})
}

// BenchmarkBackfillEval backfills the shape of BenchmarkBackfillRows through
// BackfillRows evaluating every run of rows by a sweep, directly, and by the
// run's shape (as BackfillRows does), reporting time and heap allocations
// per left row.
func BenchmarkBackfillEval(b *testing.B) {
	db, rows, aggs := rowsAggSetup(b)
	s, err := db.Snapshot()
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	for _, c := range []struct {
		name string
		eval query.EvalRule
	}{{"sweep", query.EvalSweep}, {"direct", query.EvalDirect}, {"byshape", query.EvalByShape}} {
		b.Run(c.name, func(b *testing.B) {
			benchFeatureRows(b, len(rows), func() iter.Seq2[*query.FeatureRow, error] {
				return query.BackfillRowsEval(c.eval, s, "contracts", rows, aggs, query.BackfillOptions{})
			})
		})
	}
}

// processCPU returns the CPU time the process has used, in nanoseconds: on
// a loaded machine a steadier measure of work than the wall clock.
func processCPU(b *testing.B) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// BenchmarkBackfillWorkers backfills the shape of BenchmarkBackfillRows
// through BackfillRows with its groups computed on one goroutine and on one
// per core (as BackfillRows chooses for a batch this large), reporting wall
// time and CPU time per left row.
func BenchmarkBackfillWorkers(b *testing.B) {
	db, rows, aggs := rowsAggSetup(b)
	s, err := db.Snapshot()
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	for _, workers := range []int{1, runtime.GOMAXPROCS(0)} {
		b.Run(fmt.Sprintf("goroutines=%d", workers), func(b *testing.B) {
			benchFeatureRows(b, len(rows), func() iter.Seq2[*query.FeatureRow, error] {
				return query.BackfillRowsWorkers(workers, s, "contracts", rows, aggs, query.BackfillOptions{})
			})
		})
	}
}

// benchFeatureRows times the backfill backfill returns, reading one feature
// of each of its n rows, and reports heap allocations and CPU time per row.
func benchFeatureRows(b *testing.B, n int, backfill func() iter.Seq2[*query.FeatureRow, error]) {
	before, cpu := mallocs(), processCPU(b)
	sums := make([]int64, n)
	for b.Loop() {
		for r, err := range backfill() {
			if err != nil {
				b.Fatal(err)
			}
			sums[r.Index], _ = r.Int(1)
		}
	}
	reportPer(b, n, "row", before)
	b.ReportMetric(float64(processCPU(b)-cpu)/float64(b.N*n), "cpu-ns/row")
}
