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
// map-based Verify kept in verify_legacy_test.go; streaming: Verify) on a store of
// verifyMemKeys keys x verifyMemRounds versions built the way in-order SCD2 loads
// build them, as bytes per version above the heap before the call. Run it alone:
//
//	go test ./store/ -run '^$' -bench VerifyMemory -benchtime 1x
const (
	verifyMemKeys   = 50_000
	verifyMemRounds = 6
)

var (
	verifyMemOnce sync.Once
	verifyMemDB   *DB
	verifyMemErr  error
)

func verifyMemStore(b *testing.B) *DB {
	verifyMemOnce.Do(func() {
		dir, err := os.MkdirTemp("", "bitempo-verifymem-*")
		if err != nil {
			verifyMemErr = err
			return
		}
		if verifyMemDB, verifyMemErr = Open(dir, Options{}); verifyMemErr != nil {
			return
		}
		tb, err := verifyMemDB.CreateTable(TableDef{Name: "dim", Key: []KeyColumn{{Name: "id", Type: String}}})
		if err != nil {
			verifyMemErr = err
			return
		}
		for round := 0; round < verifyMemRounds && verifyMemErr == nil; round++ {
			for lo := 0; lo < verifyMemKeys && verifyMemErr == nil; lo += 10_000 {
				verifyMemErr = benchRound(verifyMemDB, tb, round, lo, min(lo+10_000, verifyMemKeys))
			}
		}
	})
	if verifyMemErr != nil {
		b.Fatal(verifyMemErr)
	}
	return verifyMemDB
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
	db := verifyMemStore(b)
	for _, c := range []struct {
		name   string
		verify func(Reader) (*Report, error)
	}{{"legacy", legacyVerify}, {"streaming", Verify}} {
		b.Run(c.name, func(b *testing.B) {
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
