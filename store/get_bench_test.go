package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"testing"

	"github.com/bitempo/bitempo/internal/sealed"

	bpebble "github.com/bitempo/bitempo/engine/pebble"

	"github.com/bitempo/bitempo/layout"
)

// The benchmark store: benchKeys keys x benchVersions versions, built through the
// Writer the way in-order SCD2 loads build them (each round closes every key's open
// version and opens the next, in commits of 10k keys), so the history keyspace
// holds the retired records a real store would. Built once per process, on disk.
const (
	benchKeys     = 100_000
	benchVersions = 10
	benchStep     = 1_000 // valid-time distance between versions
)

var (
	benchOnce sync.Once
	benchDB   *DB
	benchTxs  []int64 // tx of each round's last commit
	benchErr  error
)

func benchStore(b *testing.B) *DB {
	benchOnce.Do(func() { benchDB, benchTxs, benchErr = buildBenchStore(benchKeys, benchVersions) })
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return benchDB
}

// Long histories: longKeys keys x longVersions versions, the same number of
// versions as benchStore's in a tenth of the keys, built the same way.
const (
	longKeys     = 10_000
	longVersions = 100
)

var (
	longOnce sync.Once
	longDB   *DB
	longErr  error
)

func longHistoryStore(b *testing.B) *DB {
	longOnce.Do(func() { longDB, _, longErr = buildBenchStore(longKeys, longVersions) })
	if longErr != nil {
		b.Fatal(longErr)
	}
	return longDB
}

// buildBenchStore builds a store of keys keys x versions versions on disk
// and returns it with the tx of each round's last commit.
func buildBenchStore(keys, versions int) (*DB, []int64, error) {
	dir, err := os.MkdirTemp("", "bitempo-bench-*")
	if err != nil {
		return nil, nil, err
	}
	db, err := Open(dir, Options{})
	if err != nil {
		return nil, nil, err
	}
	txs, err := loadBenchStore(db, keys, versions)
	if err != nil {
		return nil, nil, errors.Join(err, db.Close())
	}
	return db, txs, nil
}

// loadBenchStore writes buildBenchStore's table into db and compacts it.
func loadBenchStore(db *DB, keys, versions int) ([]int64, error) {
	tb, err := db.CreateTable(TableDef{Name: "dim", Key: []KeyColumn{{Name: "id", Type: String}}})
	if err != nil {
		return nil, err
	}
	var txs []int64
	for round := range versions {
		for lo := 0; lo < keys; lo += 10_000 {
			if err := benchRound(db, tb, round, lo, min(lo+10_000, keys)); err != nil {
				return nil, err
			}
		}
		txs = append(txs, db.LastTx())
	}
	// Read a settled store, as a service does, not one with a fresh pile of
	// L0 files from the load.
	return txs, db.Compact(context.Background())
}

func benchKey(i int) Key { return Key{fmt.Sprintf("customer-%07d", i)} }

// benchRound closes the open version of keys [lo, hi) at round*benchStep and opens
// the next one.
func benchRound(db *DB, tb *Table, round, lo, hi int) error {
	w, err := db.BeginWrite(sealed.Key{})
	if err != nil {
		return err
	}
	at := int64(round * benchStep)
	for i := lo; i < hi; i++ {
		key := benchKey(i)
		tuple, _ := tb.AppendKey(nil, key)
		attrs := Attrs{"city": fmt.Sprintf("city-%d", (i+round)%97), "tier": int64(round), "score": float64(i) / 7}
		if round > 0 {
			prev, reason, err := w.Snapshot().VersionAt(tb, tuple, at, Infinity)
			if err != nil || reason != Found {
				w.Abort()
				return fmt.Errorf("round %d key %d: %v %v", round, i, reason, err)
			}
			closed := prev
			closed.ValidTo = at
			if err := firstErr(w.Retire(tb, prev), w.Assert(tb, closed)); err != nil {
				w.Abort()
				return err
			}
		}
		if err := w.Assert(tb, tb.NewVersion(key, tuple, at, Infinity, w.AllocSK(tb), attrs)); err != nil {
			w.Abort()
			return err
		}
	}
	return w.Commit()
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// BenchmarkGet measures an as-of point read (what query.Get does: table lookup,
// then KeyVersionAt on a reused snapshot) beside the floor: a raw Pebble
// SeekGE on the same current-index key with a prefix check and the value bytes,
// on the same snapshot. ratio-to-floor is each read's time over the floor's, from
// the floor sub-benchmark run just before it in the same process. (A floor timed
// with testing.Benchmark inside the benchmark would deadlock on the testing
// package's benchmark lock.)
func BenchmarkGet(b *testing.B) {
	db := benchStore(b)
	s, err := db.Snapshot()
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	tb, _ := db.Table("dim")
	rng := rand.New(rand.NewPCG(1, 2))
	const n = 1 << 16
	keys := make([]Key, n)
	valids := make([]int64, n)
	for i := range keys {
		keys[i] = benchKey(rng.IntN(benchKeys))
		valids[i] = rng.Int64N(benchVersions * benchStep)
	}
	var floor float64 // ns per read of the floor sub-benchmark, which runs first
	read := func(tx int64) func(b *testing.B) {
		return func(b *testing.B) {
			b.ReportAllocs()
			blocks := blockReads(db)
			defer func() { reportBlockReads(b, db, blocks) }()
			for i := 0; b.Loop(); i++ {
				t, err := s.Table("dim")
				if err != nil {
					b.Fatal(err)
				}
				_, reason, err := s.KeyVersionAt(t, keys[i%n], valids[i%n], tx)
				if err != nil || reason != Found {
					b.Fatal(reason, err)
				}
			}
			if floor > 0 {
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/floor, "ratio-to-floor")
			}
		}
	}
	b.Run("floor-raw-seekge", func(b *testing.B) {
		b.ReportAllocs()
		it, _ := s.iter(layout.Current)
		var buf []byte
		blocks := blockReads(db)
		defer func() { reportBlockReads(b, db, blocks) }()
		for i := 0; b.Loop(); i++ {
			tuple, _ := tb.AppendKey(nil, keys[i%n])
			buf = layout.CurrentKeys.Key(buf[:0], tb.ID, tuple, valids[i%n], 0)
			if !it.SeekGE(buf) || !bytes.HasPrefix(it.Key(), buf[:len(buf)-8]) || len(it.Value()) == 0 {
				b.Fatal("floor read missed")
			}
		}
		floor = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	})
	b.Run("latest-tx", read(Infinity))
	b.Run("old-tx", read(benchTxs[benchVersions/2]))
}

// blockReads is how many blocks the store's reads have asked Pebble's block
// cache for (hits and misses): the blocks a read touched, a measure of its
// work that a busy machine does not change, unlike its time.
func blockReads(db *DB) int64 {
	m := db.engine.(*bpebble.Engine).Metrics()
	return m.BlockCache.Hits + m.BlockCache.Misses
}

// reportBlockReads reports the blocks per op since blockReads returned since.
func reportBlockReads(b *testing.B, db *DB, since int64) {
	b.ReportMetric(float64(blockReads(db)-since)/float64(b.N), "blocks/op")
}

// BenchmarkGetCorrections reads one key with 0 and one with 1,000 corrections (a
// correction rewrites the middle of the key's timeline), at the latest and at an
// old transaction time, before which none of the corrections was made. At the
// latest transaction the cost must not grow; at the old one it must stay a
// small multiple of the latest read's: ratio-to-latest is each old-time read's
// time over the latest read of the same key and stage, run just before it.
func BenchmarkGetCorrections(b *testing.B) {
	db, err := Open(b.TempDir(), Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	tb, _ := db.CreateTable(TableDef{Name: "dim", Key: []KeyColumn{{Name: "id", Type: String}}})
	for _, id := range []string{"clean", "corrected"} {
		w, _ := db.BeginWrite(sealed.Key{})
		tuple, _ := tb.AppendKey(nil, Key{id})
		for v := 0; v < 10; v++ {
			ver := tb.NewVersion(Key{id}, tuple, int64(v*100), int64(v*100+100), w.AllocSK(tb), Attrs{"v": int64(v)})
			if err := w.Assert(tb, ver); err != nil {
				b.Fatal(err)
			}
		}
		if err := w.Commit(); err != nil {
			b.Fatal(err)
		}
	}
	tb, _ = db.Table("dim")
	tuple, _ := tb.AppendKey(nil, Key{"corrected"})
	firstTx := db.LastTx()
	for c := 0; c < 1000; c++ { // rewrite the version at [500, 600) a thousand times
		w, _ := db.BeginWrite(sealed.Key{})
		cur, _, err := w.Snapshot().VersionAt(tb, tuple, 550, Infinity)
		if err != nil {
			b.Fatal(err)
		}
		next := cur
		next.Attrs = Attrs{"v": int64(5), "correction": int64(c)}
		if err := firstErr(w.Retire(tb, cur), w.Assert(tb, next)); err != nil {
			b.Fatal(err)
		}
		if err := w.Commit(); err != nil {
			b.Fatal(err)
		}
	}
	// "memtable": the corrections are all in the memtable, which keeps every
	// overwrite of the corrected version's current-index record, so a read
	// whose iterator stepped past that record would step over them all.
	// "compacted": after a flush and a compaction, as a service's store is
	// once its memtable has been flushed.
	for _, stage := range []string{"memtable", "compacted"} {
		if stage == "compacted" {
			if err := db.Compact(context.Background()); err != nil {
				b.Fatal(err)
			}
		}
		s, _ := db.Snapshot()
		for _, id := range []string{"clean", "corrected"} {
			var latest float64 // ns per latest read of this key and stage
			for _, tc := range []struct {
				name string
				tx   int64
			}{{"latest-tx", Infinity}, {"first-tx", firstTx}} {
				b.Run(stage+"/"+id+"/"+tc.name, func(b *testing.B) {
					b.ReportAllocs()
					tuple, _ := tb.AppendKey(nil, Key{id})
					blocks := blockReads(db)
					defer func() { reportBlockReads(b, db, blocks) }()
					for i := 0; b.Loop(); i++ {
						_, reason, err := s.VersionAt(tb, tuple, int64(i%1000), tc.tx)
						if err != nil || reason != Found {
							b.Fatal(reason, err)
						}
					}
					perOp := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
					if tc.tx == Infinity {
						latest = perOp
					} else if latest > 0 {
						b.ReportMetric(perOp/latest, "ratio-to-latest")
					}
				})
			}
		}
		s.Close()
	}
}
