package query_test

import (
	"bytes"
	"cmp"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/bitempo/bitempo/internal/sealed"

	"github.com/cockroachdb/pebble/v2"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
)

// The benchmark data: benchKeys keys x benchVersions versions (1M versions), each
// version benchStep ticks long and the last one open, in a bitempo store and, for
// the floor, in a raw Pebble store with the minimal as-of layout: key tuple |
// desc(valid_from) -> valid_to | sk | attributes, with the same cache size (64
// MiB, less than either store). Both are built once per process in a temporary
// directory and reopened, so neither reads from a fresh memtable.
const (
	benchKeys     = 100_000
	benchVersions = 10
	benchStep     = 1_000
	benchFacts    = 1_000_000
)

type benchEnv struct {
	dir string
	db  *store.DB
	raw *pebble.DB
	tb  *store.Table
}

// TestMain removes the benchmark stores, if a benchmark built them, when the
// tests and benchmarks of the package are done.
func TestMain(m *testing.M) {
	code := m.Run()
	removeBenchDirs()
	if bench != nil {
		_ = bench.db.Close()
		_ = bench.raw.Close()
		_ = os.RemoveAll(bench.dir)
	}
	os.Exit(code)
}

var (
	benchOnce sync.Once
	bench     *benchEnv
	benchErr  error
)

func benchSetup(b *testing.B) *benchEnv {
	if f := flag.Lookup("test.bench"); f == nil || f.Value.String() == "" {
		b.Skip("the benchmark store is built only with -bench")
	}
	benchOnce.Do(func() { bench, benchErr = buildBench() })
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return bench
}

func benchKey(i int) store.Key { return store.Key{int64(i)} }

func buildBench() (*benchEnv, error) {
	dir, err := os.MkdirTemp("", "bitempo-query-bench-*")
	if err != nil {
		return nil, err
	}
	env, err := loadBench(dir)
	if err != nil {
		_ = os.RemoveAll(dir)
	}
	return env, err
}

func loadBench(dir string) (*benchEnv, error) {
	db, err := store.Open(filepath.Join(dir, "bitempo"), store.Options{NoSync: true})
	if err != nil {
		return nil, err
	}
	tb, err := db.CreateTable(store.TableDef{Name: "dim", Key: []store.KeyColumn{{Name: "id", Type: store.Int64}}})
	if err != nil {
		return nil, err
	}
	raw, err := pebble.Open(filepath.Join(dir, "raw"), rawOptions())
	if err != nil {
		return nil, err
	}
	for lo := 0; lo < benchKeys; lo += 10_000 {
		w, err := db.BeginWrite(sealed.Key{})
		if err != nil {
			return nil, err
		}
		batch := raw.NewBatch()
		for i := lo; i < min(lo+10_000, benchKeys); i++ {
			key := benchKey(i)
			tuple, _ := tb.AppendKey(nil, key)
			for v := range benchVersions {
				from, to := int64(v*benchStep), int64((v+1)*benchStep)
				if v == benchVersions-1 {
					to = store.Infinity
				}
				attrs := store.Attrs{"city": fmt.Sprintf("city-%d", (i+v)%97), "tier": int64(v), "score": float64(i) / 7}
				sk := w.AllocSK(tb)
				if err := w.Assert(tb, tb.NewVersion(key, tuple, from, to, sk, attrs)); err != nil {
					w.Abort()
					return nil, err
				}
				// The raw value carries the attributes too, so that both stores hold
				// about the same bytes and the floor pays the same block reads.
				value := encoding.AppendUint64(encoding.AppendTimeAsc(nil, to), sk)
				if value, err = encoding.AppendAttrs(value, attrs); err != nil {
					return nil, err
				}
				if err := batch.Set(encoding.AppendTimeDesc(bytes.Clone(tuple), from), value, nil); err != nil {
					return nil, err
				}
			}
		}
		if err := w.Commit(); err != nil {
			return nil, err
		}
		if err := batch.Commit(pebble.NoSync); err != nil {
			return nil, err
		}
	}
	if err := db.Close(); err != nil {
		return nil, err
	}
	if err := raw.Close(); err != nil {
		return nil, err
	}
	env := &benchEnv{dir: dir}
	if env.db, err = store.Open(filepath.Join(dir, "bitempo"), store.Options{NoSync: true}); err != nil {
		return nil, err
	}
	if env.raw, err = pebble.Open(filepath.Join(dir, "raw"), rawOptions()); err != nil {
		return nil, err
	}
	env.tb, err = env.db.Table("dim")
	return env, err
}

func rawOptions() *pebble.Options {
	return &pebble.Options{
		Cache:              pebble.NewCache(64 << 20),
		FormatMajorVersion: pebble.FormatFlushableIngestExcises,
		Logger:             quietLogger{},
	}
}

type quietLogger struct{}

func (quietLogger) Infof(string, ...any)           {}
func (quietLogger) Errorf(string, ...any)          {}
func (quietLogger) Fatalf(format string, a ...any) { panic(fmt.Sprintf(format, a...)) }

// timeOnce runs fn once and returns its duration in nanoseconds.
func timeOnce(fn func()) float64 {
	start := time.Now()
	fn()
	return float64(time.Since(start).Nanoseconds())
}

func perOp(b *testing.B) float64 { return float64(b.Elapsed().Nanoseconds()) / float64(b.N) }

// BenchmarkSnapshotScan reads one version of each of the 100k keys, at the
// newest valid time (each key's first record is the answer) and in the middle of
// the keys' histories (a seek per key), beside the floor: the same walk on the
// raw Pebble layout, without decoding anything.
func BenchmarkSnapshotScan(b *testing.B) {
	env := benchSetup(b)
	for _, tc := range []struct {
		name  string
		valid int64
	}{{"valid-now", benchVersions * benchStep}, {"valid-mid", benchVersions*benchStep/2 + 1}} {
		floor := timeOnce(func() { rawScan(b, env.raw, tc.valid) })
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				n := 0
				for _, err := range query.Snapshot(env.db, "dim", query.AsOf{Valid: tc.valid}, query.KeyRange{}, query.SnapshotOptions{}) {
					if err != nil {
						b.Fatal(err)
					}
					n++
				}
				if n != benchKeys {
					b.Fatalf("%d keys, want %d", n, benchKeys)
				}
			}
			b.ReportMetric(benchKeys/(perOp(b)/1e9), "keys/s")
			b.ReportMetric(perOp(b)/floor, "ratio-to-floor")
		})
		b.Run(tc.name+"/floor-raw", func(b *testing.B) {
			for b.Loop() {
				rawScan(b, env.raw, tc.valid)
			}
			b.ReportMetric(benchKeys/(perOp(b)/1e9), "keys/s")
		})
	}
}

// rawScan walks every key of the raw store: at the key's newest record, take it
// if it starts at or before valid, else seek to the one that does; then seek to
// the next key.
func rawScan(b *testing.B, raw *pebble.DB, valid int64) {
	it, err := raw.NewIter(nil)
	if err != nil {
		b.Fatal(err)
	}
	defer it.Close()
	n := 0
	var seek []byte
	for ok := it.First(); ok; {
		k := it.Key()
		tuple := k[:len(k)-8]
		if from, _, _ := encoding.DecodeTimeDesc(k[len(k)-8:]); from > valid {
			seek = encoding.AppendTimeDesc(append(seek[:0], tuple...), valid)
			if ok = it.SeekGE(seek); !ok || !bytes.HasPrefix(it.Key(), tuple) {
				continue
			}
		}
		if to, _, _ := encoding.DecodeTimeAsc(it.Value()); valid < to {
			n++
		}
		ok = it.SeekGE(encoding.PrefixEnd(it.Key()[:len(it.Key())-8]))
	}
	if n != benchKeys {
		b.Fatalf("raw scan found %d keys", n)
	}
}

// benchFactSet draws 1M facts over the 100k keys and 1% unknown ones, at valid
// times from before the first version to after the last version began.
func benchFactSet() []query.Fact {
	rng := rand.New(rand.NewPCG(7, 8))
	facts := make([]query.Fact, benchFacts)
	for i := range facts {
		facts[i] = query.Fact{Key: benchKey(rng.IntN(benchKeys + benchKeys/100)), At: rng.Int64N((benchVersions+1)*benchStep) - benchStep/2}
	}
	return facts
}

// BenchmarkResolve resolves 1M unsorted facts against 100k keys x 10 versions
// with Resolve (sort, split into key ranges, one merge pass per range on every
// core) and with 1M independent Gets on one reused snapshot, beside two raw
// Pebble floors: the same sort and merge on the raw layout, and 1M SeekGEs on one
// reused iterator. Each iteration runs all four, one after the other, and the
// metrics use each one's fastest iteration, so that a machine shared with other
// work skews the ratios as little as it can: x-faster-than-gets is the Gets' time
// over Resolve's, merge-ratio-to-floor and gets-ratio-to-floor compare each with
// its raw floor. Run with -benchtime=3x or more.
func BenchmarkResolve(b *testing.B) {
	env := benchSetup(b)
	facts := benchFactSet()
	s, err := env.db.Snapshot()
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	b.Run("merge-vs-gets", func(b *testing.B) {
		fastest := map[string]float64{}
		note := func(name string, fn func()) {
			if d := timeOnce(fn); fastest[name] == 0 || d < fastest[name] {
				fastest[name] = d
			}
		}
		for b.Loop() {
			note("merge", func() {
				res, err := query.Resolve(s, "dim", facts, query.ResolveOptions{Miss: query.MissNull})
				if err != nil || len(res) != len(facts) {
					b.Fatal(err)
				}
			})
			note("gets", func() { perFactGets(b, s, facts) })
			note("floor-merge", func() { rawResolve(b, env, facts) })
			note("floor-seek", func() { rawSeeks(b, env, facts) })
		}
		for name, ns := range fastest {
			b.ReportMetric(ns/1e9, name+"-s")
		}
		b.ReportMetric(fastest["gets"]/fastest["merge"], "x-faster-than-gets")
		b.ReportMetric(fastest["merge"]/fastest["floor-merge"], "merge-ratio-to-floor")
		b.ReportMetric(fastest["gets"]/fastest["floor-seek"], "gets-ratio-to-floor")
	})
	b.Run("merge-with-attrs", func(b *testing.B) {
		for b.Loop() {
			if _, err := query.Resolve(s, "dim", facts, query.ResolveOptions{Miss: query.MissNull, Attrs: true}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(benchFacts/(perOp(b)/1e9), "facts/s")
	})
}

func perFactGets(b *testing.B, s *store.Snapshot, facts []query.Fact) {
	for _, f := range facts {
		if _, err := query.Get(s, "dim", f.Key, query.AsOf{Valid: f.At}, query.GetOptions{}); err != nil && !isMiss(err) {
			b.Fatal(err)
		}
	}
}

func isMiss(err error) bool {
	_, ok := err.(*query.Miss)
	return ok
}

// rawSeeks answers each fact with one SeekGE on one reused raw iterator.
func rawSeeks(b *testing.B, env *benchEnv, facts []query.Fact) {
	it, err := env.raw.NewIter(nil)
	if err != nil {
		b.Fatal(err)
	}
	defer it.Close()
	var buf []byte
	for _, f := range facts {
		buf, _ = encoding.AppendKey(buf[:0], f.Key)
		tuple := len(buf)
		buf = encoding.AppendTimeDesc(buf, f.At)
		if it.SeekGE(buf) && bytes.HasPrefix(it.Key(), buf[:tuple]) {
			to, _, _ := encoding.DecodeTimeAsc(it.Value())
			_ = f.At < to
		}
	}
}

type rawProbe struct {
	tuple []byte
	at    int64
	index int
}

// rawResolve is the floor of Resolve: encode, split into one key range per
// core, sort each by key and descending time, and merge it with one forward
// pass of one raw iterator (a few Next calls, else a seek), storing each fact's
// sk by input position.
func rawResolve(b *testing.B, env *benchEnv, facts []query.Fact) {
	workers := runtime.GOMAXPROCS(0)
	sks := make([]uint64, len(facts))
	ranges := make([][]rawProbe, workers)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			lo, hi := w*len(facts)/workers, (w+1)*len(facts)/workers
			var buf []byte
			local := make([][]rawProbe, workers)
			for i := lo; i < hi; i++ {
				start := len(buf)
				buf, _ = encoding.AppendKey(buf, facts[i].Key)
				id := facts[i].Key[0].(int64)
				r := int(id * int64(workers) / (benchKeys + benchKeys/100))
				local[r] = append(local[r], rawProbe{tuple: buf[start:len(buf):len(buf)], at: facts[i].At, index: i})
			}
			mu.Lock()
			for r := range local {
				ranges[r] = append(ranges[r], local[r]...)
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	for r := range workers {
		wg.Go(func() { rawMerge(b, env.raw, ranges[r], sks) })
	}
	wg.Wait()
}

func rawMerge(b *testing.B, raw *pebble.DB, probes []rawProbe, sks []uint64) {
	slices.SortFunc(probes, func(x, y rawProbe) int {
		if c := bytes.Compare(x.tuple, y.tuple); c != 0 {
			return c
		}
		return cmp.Compare(y.at, x.at)
	})
	it, err := raw.NewIter(nil)
	if err != nil {
		b.Error(err)
		return
	}
	defer it.Close()
	ok := it.First()
	var seek []byte
	for _, p := range probes {
		seek = encoding.AppendTimeDesc(append(seek[:0], p.tuple...), p.at)
		for steps := 0; ok && bytes.Compare(it.Key(), seek) < 0; steps++ {
			if steps == 4 {
				ok = it.SeekGE(seek)
				break
			}
			ok = it.Next()
		}
		if ok && bytes.HasPrefix(it.Key(), p.tuple) {
			if to, rest, _ := encoding.DecodeTimeAsc(it.Value()); p.at < to {
				sks[p.index], _, _ = encoding.DecodeUint64(rest)
			}
		}
	}
}

// BenchmarkHistoryPaging pages through the history of every key (1M versions)
// 100 versions a page, each page resuming from the previous page's cursor, and
// reads the 10-version history of single keys; versions/s is the throughput.
func BenchmarkHistoryPaging(b *testing.B) {
	env := benchSetup(b)
	b.Run("pages-of-100", func(b *testing.B) {
		opts := query.HistoryOptions{Limit: 100}
		for b.Loop() {
			page, err := query.HistoryPage(env.db, "dim", query.KeyRange{}, store.NegInfinity, store.Infinity, opts)
			if err != nil || len(page.Rows) == 0 {
				b.Fatal(err)
			}
			opts.Cursor = page.Next // "" restarts at the first key after the last page
		}
		b.ReportMetric(100/(perOp(b)/1e9), "versions/s")
	})
	b.Run("one-key", func(b *testing.B) {
		rng := rand.New(rand.NewPCG(3, 4))
		for b.Loop() {
			n := 0
			for _, err := range query.History(env.db, "dim", benchKey(rng.IntN(benchKeys)), store.NegInfinity, store.Infinity, query.HistoryOptions{}) {
				if err != nil {
					b.Fatal(err)
				}
				n++
			}
			if n != benchVersions {
				b.Fatalf("%d versions", n)
			}
		}
		b.ReportMetric(benchVersions/(perOp(b)/1e9), "versions/s")
	})
}
