package store

import (
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"testing"
	"time"

	bpebble "github.com/bitempo/bitempo/engine/pebble"

	"github.com/cockroachdb/pebble/v2"
)

// The filter benchmark's stores: the same 100k keys x 5 versions, written
// through the Writer as benchStore writes them, into two stores that differ
// only in their bloom filters (one built with them, one with Tune turning
// them off), with a 4 MiB memtable and no compaction after the load, so both
// keep the shape of a store under a write load: level 0 and several levels
// below it.
const (
	filterBenchKeys     = 100_000
	filterBenchVersions = 5
)

var (
	filterBenchOnce sync.Once
	filterBenchDBs  [2]*DB // with filters, without
	filterBenchErr  error
)

func filterBenchStores(b *testing.B) [2]*DB {
	filterBenchOnce.Do(func() {
		noFilters := func(o *pebble.Options) {
			for i := range o.Levels {
				o.Levels[i].FilterPolicy = pebble.NoFilterPolicy
			}
		}
		for i, tune := range []func(*pebble.Options){nil, noFilters} {
			dir, err := os.MkdirTemp("", "bitempo-filters-*")
			if err != nil {
				filterBenchErr = err
				return
			}
			db, err := openOn(dir, bpebble.Options{MemTableSize: 4 << 20, Tune: tune}, Options{NoSync: true})
			if err != nil {
				filterBenchErr = err
				return
			}
			filterBenchDBs[i] = db
			tb, err := db.CreateTable(TableDef{Name: "dim", Key: []KeyColumn{{Name: "id", Type: String}}})
			if err != nil {
				filterBenchErr = err
				return
			}
			for round := range filterBenchVersions {
				for lo := 0; lo < filterBenchKeys; lo += 10_000 {
					if err := benchRound(db, tb, round, lo, min(lo+10_000, filterBenchKeys)); err != nil {
						filterBenchErr = err
						return
					}
				}
			}
		}
	})
	if filterBenchErr != nil {
		b.Fatal(filterBenchErr)
	}
	return filterBenchDBs
}

// BenchmarkFilters measures reads of one key on the two stores of
// filterBenchStores, interleaved (each iteration reads the same key from
// both), so that a busy machine slows both alike: a latest Get of a key that
// exists, a Get of a key that does not, and KeyVersions (the read every
// Upsert makes first). Reported: ns per read with filters and without
// (ns/op is both together) and their ratio.
func BenchmarkFilters(b *testing.B) {
	dbs := filterBenchStores(b)
	var snaps [2]*Snapshot
	var tables [2]*Table
	for i, db := range dbs {
		s, err := db.Snapshot()
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		snaps[i] = s
		tables[i], _ = db.Table("dim")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	const n = 1 << 16
	keys := make([][]byte, n)
	missing := make([][]byte, n)
	for i := range keys {
		keys[i], _ = tables[0].AppendKey(nil, benchKey(rng.IntN(filterBenchKeys)))
		missing[i], _ = tables[0].AppendKey(nil, Key{fmt.Sprintf("absent-%07d", rng.IntN(filterBenchKeys))})
	}
	reads := []struct {
		name string
		read func(s *Snapshot, t *Table, i int) error
	}{
		{"get-latest", func(s *Snapshot, t *Table, i int) error {
			_, reason, err := s.VersionAt(t, keys[i%n], int64(i%(filterBenchVersions*benchStep)), Infinity)
			if err == nil && reason != Found {
				err = fmt.Errorf("miss: %v", reason)
			}
			return err
		}},
		{"get-absent", func(s *Snapshot, t *Table, i int) error {
			_, reason, err := s.VersionAt(t, missing[i%n], 0, Infinity)
			if err == nil && reason != UnknownKey {
				err = fmt.Errorf("found an absent key: %v", reason)
			}
			return err
		}},
		{"key-versions", func(s *Snapshot, t *Table, i int) error {
			vs, err := s.KeyVersions(t, keys[i%n], Infinity)
			if err == nil && len(vs) != filterBenchVersions {
				err = fmt.Errorf("%d versions", len(vs))
			}
			return err
		}},
	}
	for _, r := range reads {
		b.Run(r.name, func(b *testing.B) {
			var spent [2]time.Duration
			for i := 0; b.Loop(); i++ {
				for k := range 2 {
					j := (i + k) % 2 // alternate which store goes first
					start := time.Now()
					if err := r.read(snaps[j], tables[j], i); err != nil {
						b.Fatal(err)
					}
					spent[j] += time.Since(start)
				}
			}
			with, without := float64(spent[0].Nanoseconds())/float64(b.N), float64(spent[1].Nanoseconds())/float64(b.N)
			b.ReportMetric(with, "ns/read-filters")
			b.ReportMetric(without, "ns/read-nofilters")
			b.ReportMetric(with/without, "ratio")
		})
	}
}
