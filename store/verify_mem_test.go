package store

import (
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkVerifyMemory reports the peak heap of one Verify (legacy: the
// map-based Verify kept in verify_legacy_test.go; streaming: Verify; grouped:
// Verify of the same versions in a table with a group index) on a store of
// verifyMemKeys keys x verifyMemRounds versions built the way in-order SCD2 loads
// build them, as bytes per version above the heap before the call. Run it alone:
//
//	go test ./store/ -run '^$' -bench VerifyMemory -benchtime 1x
const (
	verifyMemKeys   = 50_000
	verifyMemRounds = 6
)

// verifyMemStores are the benchmark's stores: plain, and with the table
// grouped by its city attribute (97 groups), whose group index Verify checks
// too. Each is built once per process and left in the temporary directory.
var verifyMemStores = map[bool]func() (*DB, error){false: verifyMemBuilder(nil), true: verifyMemBuilder([]string{"city"})}

func verifyMemBuilder(groupBy []string) func() (*DB, error) {
	return sync.OnceValues(func() (*DB, error) {
		dir, err := os.MkdirTemp("", "bitempo-verifymem-*")
		if err != nil {
			return nil, err
		}
		db, err := Open(dir, Options{})
		if err != nil {
			return nil, err
		}
		tb, err := db.CreateTable(TableDef{Name: "dim", Key: []KeyColumn{{Name: "id", Type: String}}, GroupBy: groupBy})
		if err != nil {
			return nil, err
		}
		for round := range verifyMemRounds {
			for lo := 0; lo < verifyMemKeys; lo += 10_000 {
				if err := benchRound(db, tb, round, lo, min(lo+10_000, verifyMemKeys)); err != nil {
					return nil, err
				}
			}
		}
		return db, nil
	})
}

func verifyMemStore(b *testing.B, grouped bool) *DB {
	db, err := verifyMemStores[grouped]()
	if err != nil {
		b.Fatal(err)
	}
	return db
}

// peakHeap runs fn and returns the largest HeapAlloc seen while it ran (sampled
// every millisecond, and at its end) minus HeapAlloc after a GC before it.
func peakHeap(fn func()) uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	var peak atomic.Uint64
	sample := func() {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		if ms.HeapAlloc > peak.Load() {
			peak.Store(ms.HeapAlloc)
		}
	}
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				sample()
			}
		}
	}()
	fn()
	sample()
	close(stop)
	<-done
	if p := peak.Load(); p > base {
		return p - base
	}
	return 0
}

func BenchmarkVerifyMemory(b *testing.B) {
	for _, c := range []struct {
		name    string
		grouped bool
		verify  func(Reader) (*Report, error)
	}{{"legacy", false, legacyVerify}, {"streaming", false, Verify}, {"grouped", true, Verify}} {
		b.Run(c.name, func(b *testing.B) {
			db := verifyMemStore(b, c.grouped)
			var peak uint64
			var versions int
			for b.Loop() {
				peak = max(peak, peakHeap(func() {
					rep, err := c.verify(db)
					if err != nil || !rep.OK() {
						b.Fatalf("%v %v", rep, err)
					}
					versions = rep.Records
				}))
			}
			b.ReportMetric(float64(peak)/float64(versions), "peak-B/version")
			b.ReportMetric(float64(peak)/(1<<20), "peak-MiB")
			b.ReportMetric(float64(versions), "versions")
		})
	}
}
