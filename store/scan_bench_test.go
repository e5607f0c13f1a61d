package store

import (
	"testing"
	"time"
)

// BenchmarkScanSkip measures the snapshot scan (ScanAt at the latest
// transaction) over benchStore's 100k keys x 10 versions, with a key's
// remaining versions skipped by NextPrefix (where skipKey chooses it) and,
// in the same iteration, by the SeekGE it replaced (skipWithNextPrefix
// false), each first in every other iteration, so that a busy machine slows
// both alike: at the newest valid time
// (every key's first record is the answer) and in the middle of the keys'
// histories (a seek per key to the version in effect). Reported: ns per key
// of each and their ratio (ns/op is both scans together).
func BenchmarkScanSkip(b *testing.B) {
	db := benchStore(b)
	tb, _ := db.Table("dim")
	s, err := db.Snapshot()
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	scan := func(valid int64) {
		n := 0
		for _, err := range s.ScanAt(tb, Span{}, valid, Infinity) {
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		if n != benchKeys {
			b.Fatalf("%d keys, want %d", n, benchKeys)
		}
	}
	for _, tc := range []struct {
		name  string
		valid int64
	}{{"valid-now", benchVersions * benchStep}, {"valid-mid", benchVersions*benchStep/2 + 1}} {
		b.Run(tc.name, func(b *testing.B) {
			defer func() { skipWithNextPrefix = true }()
			var spent [2]time.Duration // NextPrefix, SeekGE
			for i := 0; b.Loop(); i++ {
				for k := range 2 {
					j := (i + k) % 2 // alternate which path runs first
					skipWithNextPrefix = j == 0
					start := time.Now()
					scan(tc.valid)
					spent[j] += time.Since(start)
				}
			}
			per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(b.N*benchKeys) }
			b.ReportMetric(per(spent[0]), "ns/key-nextprefix")
			b.ReportMetric(per(spent[1]), "ns/key-seekge")
			b.ReportMetric(per(spent[0])/per(spent[1]), "ratio")
		})
	}
}
