package store

import (
	"testing"
	"time"

	"github.com/bitempo/bitempo/engine"
)

// BenchmarkScanSkip measures the snapshot scan (ScanAt at the latest
// transaction) over benchStore's 100k keys x 10 versions, with a key's
// remaining versions skipped by NextPrefix (where keySkipper chooses it)
// and, in the same iteration, by the SeekGE it replaced (the same store read
// through iterators that hide NextPrefix), each first in every other
// iteration, so that a busy machine slows both alike: at the newest valid time
// (every key's first record is the answer) and in the middle of the keys'
// histories (a seek per key to the version in effect). Reported: ns per key
// of each and their ratio (ns/op is both scans together).
func BenchmarkScanSkip(b *testing.B) {
	db := benchStore(b)
	tb, _ := db.Table("dim")
	seekDB := newDB(seekOnlyEngine{db.engine}, db.opts, db.dir)
	if err := seekDB.load(); err != nil {
		b.Fatal(err)
	}
	var snaps [2]*Snapshot // NextPrefix, SeekGE
	for i, d := range []*DB{db, seekDB} {
		s, err := d.Snapshot()
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		snaps[i] = s
	}
	scan := func(s *Snapshot, valid int64) {
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
			var spent [2]time.Duration // NextPrefix, SeekGE
			for i := 0; b.Loop(); i++ {
				for k := range 2 {
					j := (i + k) % 2 // alternate which path runs first
					start := time.Now()
					scan(snaps[j], tc.valid)
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

// seekOnlyEngine is an engine whose iterators hide NextPrefix, so that a scan
// skips a key's remaining versions with SeekGE (keySkipper).
type seekOnlyEngine struct{ engine.Engine }

func (e seekOnlyEngine) View() (engine.View, error) {
	v, err := e.Engine.View()
	if err != nil {
		return nil, err
	}
	return seekOnlyView{v}, nil
}

type seekOnlyView struct{ engine.View }

func (v seekOnlyView) NewIter(lower, upper []byte) (engine.Iter, error) {
	it, err := v.View.NewIter(lower, upper)
	if err != nil {
		return nil, err
	}
	return seekOnlyIter{it}, nil
}

// seekOnlyIter has only engine.Iter's methods.
type seekOnlyIter struct{ engine.Iter }
