package query

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/bitempo/bitempo/store"
)

// probeTables returns a snapshot of an empty in-memory store with one table
// per key type, keyed by one column of that type; the test closes both.
func probeTables(t testing.TB, keyTypes ...store.KeyType) (*store.Snapshot, []*store.Table) {
	db, err := store.Open("db", store.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	tables := make([]*store.Table, len(keyTypes))
	for i, kt := range keyTypes {
		def := store.TableDef{Name: fmt.Sprintf("t%d", i), Key: []store.KeyColumn{{Name: "id", Type: kt}}}
		if tables[i], err = db.CreateTable(def); err != nil {
			t.Fatal(err)
		}
	}
	s, err := db.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, tables
}

// TestSortProbesAsSortFunc checks the probes' specialised sort against
// slices.SortFunc with compare on keys of every length around the prefixes'
// 16 bytes (long keys tying on them included), keys that are prefixes of
// others, integer keys, many facts of one key at one time, input already in
// order or reversed, and with the partitions' depth exhausted at once, so the
// fallback sorts too.
func TestSortProbesAsSortFunc(t *testing.T) {
	s, tables := probeTables(t, store.String, store.Int64)
	strs, ints := tables[0], tables[1]
	rng := rand.New(rand.NewPCG(3, 4))
	randomKey := func() store.Key {
		switch rng.IntN(4) {
		case 0: // 12 to 15 characters: 15 to 18 encoded bytes
			return store.Key{fmt.Sprintf("c%0*d", 11+rng.IntN(4), rng.IntN(50))}
		case 1: // long keys tying on their first 16 bytes
			return store.Key{"customer-account-" + strings.Repeat("x", rng.IntN(3)) + fmt.Sprint(rng.IntN(40))}
		case 2: // keys that are prefixes of others
			return store.Key{strings.Repeat("ab", 1+rng.IntN(10))}
		}
		return store.Key{fmt.Sprint(rng.IntN(1000))}
	}
	shapes := map[string]func(n int) (*store.Table, []Fact){
		"strings": func(n int) (*store.Table, []Fact) {
			facts := make([]Fact, n)
			for i := range facts {
				facts[i] = Fact{Key: randomKey(), At: int64(rng.IntN(20))}
			}
			return strs, facts
		},
		"one fact repeated": func(n int) (*store.Table, []Fact) {
			facts := make([]Fact, n)
			for i := range facts {
				facts[i] = Fact{Key: store.Key{"k"}, At: 7}
			}
			return strs, facts
		},
		"integers in order": func(n int) (*store.Table, []Fact) {
			facts := make([]Fact, n)
			for i := range facts {
				facts[i] = Fact{Key: store.Key{int64(i / 3)}, At: int64(-i)}
			}
			return ints, facts
		},
		"integers reversed": func(n int) (*store.Table, []Fact) {
			facts := make([]Fact, n)
			for i := range facts {
				facts[i] = Fact{Key: store.Key{int64(n - i)}, At: int64(i % 5)}
			}
			return ints, facts
		},
	}
	for name, shape := range shapes {
		for _, n := range []int{0, 1, 2, 3, insertionMax, insertionMax + 1, 100, 5000} {
			for _, depth := range []int{-1, 0, 1} {
				tb, facts := shape(n)
				bt := newBatch(s, tb, facts, 1)
				if err := bt.encode(0); err != nil {
					t.Fatal(err)
				}
				got := bt.deal(nil)[0]
				want := slices.Clone(got)
				if depth < 0 {
					bt.sortProbes(got)
				} else {
					quicksortProbes(got, depth)
					bt.sortLongRuns(got)
				}
				slices.SortFunc(want, bt.compare)
				for i := range got {
					if bt.compare(got[i], want[i]) != 0 {
						t.Fatalf("%s, %d facts, depth %d: probe %d is fact %d (key %q at %d), want fact %d (key %q at %d)", name, n, depth, i,
							got[i].index, bt.tuple(&got[i]), got[i].valid, want[i].index, bt.tuple(&want[i]), want[i].valid)
					}
				}
				seen := make([]bool, n)
				for _, p := range got {
					seen[p.index] = true
				}
				if i := slices.Index(seen, false); i >= 0 {
					t.Fatalf("%s, %d facts, depth %d: fact %d lost in the sort", name, n, depth, i)
				}
			}
		}
	}
}

// BenchmarkProbeSort sorts one key range of 65,536 probes of the peer
// harness's key shape (zero-padded identifiers, ten facts per key) with the
// specialised sort and with slices.SortFunc.
func BenchmarkProbeSort(b *testing.B) {
	s, tables := probeTables(b, store.String)
	tb := tables[0]
	rng := rand.New(rand.NewPCG(1, 2))
	facts := make([]Fact, rangeSize)
	for i := range facts {
		facts[i] = Fact{Key: store.Key{fmt.Sprintf("c%09d", rng.IntN(rangeSize/10))}, At: rng.Int64N(1 << 40)}
	}
	bt := newBatch(s, tb, facts, 1)
	if err := bt.encode(0); err != nil {
		b.Fatal(err)
	}
	probes := bt.deal(nil)[0]
	work := make([]probe, len(probes))
	for _, sorter := range []struct {
		name string
		sort func([]probe)
	}{
		{"specialised", bt.sortProbes},
		{"SortFunc", func(ps []probe) { slices.SortFunc(ps, bt.compare) }},
	} {
		b.Run(sorter.name, func(b *testing.B) {
			for b.Loop() {
				copy(work, probes)
				sorter.sort(work)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(facts)), "ns/probe")
		})
	}
}

// TestDealKeepsEachKeyInOneRange deals batches of facts, cut into 1 to 3
// chunks, into 1 to 40 key ranges and checks that every fact lands once, with
// the probe its chunk builds for it, that a key's facts share one range, and
// that the ranges lie in key order.
func TestDealKeepsEachKeyInOneRange(t *testing.T) {
	s, tables := probeTables(t, store.String)
	rng := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{0, 1, 50, 3000} {
		facts := make([]Fact, n)
		for i := range facts {
			key := fmt.Sprintf("k%d", rng.IntN(max(1, n/4)))
			if rng.IntN(3) == 0 {
				key = "customer-account-" + key // longer than the prefixes
			}
			facts[i] = Fact{Key: store.Key{key}, At: rng.Int64N(100)}
		}
		for _, chunks := range []int{1, 2, 3} {
			for _, nranges := range []int{1, 2, 7, 40} {
				bt := newBatch(s, tables[0], facts, chunks)
				for c := range chunks {
					if err := bt.encode(c); err != nil {
						t.Fatal(err)
					}
				}
				ranges := bt.deal(bt.splitters(nranges))
				want := nranges
				if n == 0 {
					want = 1 // no sample to cut at
				}
				if len(ranges) != want {
					t.Fatalf("%d facts, %d chunks: %d ranges, want %d", n, chunks, len(ranges), want)
				}
				rangeOf := map[string]int{}
				seen := make([]bool, n)
				var last []byte
				for r, probes := range ranges {
					slices.SortFunc(probes, bt.compare)
					for _, p := range probes {
						key := bt.tuple(&p)
						if seen[p.index] {
							t.Fatalf("%d facts, %d chunks, %d ranges: fact %d dealt twice", n, chunks, nranges, p.index)
						}
						seen[p.index] = true
						c := slices.IndexFunc(bt.starts[1:], func(start int) bool { return int(p.index) < start })
						if want := bt.probe(c, int(p.index)-bt.starts[c]); p != want {
							t.Fatalf("%d facts, %d chunks, %d ranges: fact %d dealt as %+v, want %+v", n, chunks, nranges, p.index, p, want)
						}
						if got, ok := rangeOf[string(key)]; ok && got != r {
							t.Fatalf("%d facts, %d chunks, %d ranges: key %q in ranges %d and %d", n, chunks, nranges, key, got, r)
						}
						rangeOf[string(key)] = r
						if bytes.Compare(last, key) > 0 {
							t.Fatalf("%d facts, %d chunks, %d ranges: key %q in range %d after %q", n, chunks, nranges, key, r, last)
						}
						last = key
					}
				}
				if i := slices.Index(seen, false); i >= 0 {
					t.Fatalf("%d facts, %d chunks, %d ranges: fact %d not dealt", n, chunks, nranges, i)
				}
			}
		}
	}
}

// TestEncodeSizesKeyBuffers encodes a chunk of facts whose first keys are
// long and the rest short, and one of short keys only: each chunk's key buffer
// holds every key, in order, and reserves memory for the rest from the first
// keys' length only up to maxSizedKeyBytes a key, so long keys at the start of
// a batch cannot make it reserve a long key's room for every short one.
func TestEncodeSizesKeyBuffers(t *testing.T) {
	s, tables := probeTables(t, store.String)
	const short = 100_000
	long := strings.Repeat("k", 10_000)
	for _, tc := range []struct {
		name  string
		first string // the first sizingKeys keys' prefix
	}{{"long keys first", long}, {"short keys", "s"}} {
		t.Run(tc.name, func(t *testing.T) {
			facts := make([]Fact, sizingKeys+short)
			for i := range facts {
				key := fmt.Sprint(i)
				if i < sizingKeys {
					key = tc.first + key
				}
				facts[i] = Fact{Key: store.Key{key}, At: 1}
			}
			bt := newBatch(s, tables[0], facts, 1)
			bt.keys[0], bt.ends[0] = nil, nil // fresh memory, not an earlier batch's
			if err := bt.encode(0); err != nil {
				t.Fatal(err)
			}
			var want []byte
			for i, f := range facts {
				var err error
				if want, err = tables[0].AppendKey(want, f.Key); err != nil {
					t.Fatal(err)
				}
				if got := bt.ends[0][i]; got != uint32(len(want)) {
					t.Fatalf("key %d ends at %d, want %d", i, got, len(want))
				}
			}
			if !bytes.Equal(bt.keys[0], want) {
				t.Fatal("the encoded keys differ from AppendKey's")
			}
			// The short keys take at most 8 bytes each: a buffer sized from the
			// long keys' mean would reserve about 10 kB for each of them.
			if limit := len(want) + short*maxSizedKeyBytes*9/8; cap(bt.keys[0]) > limit {
				t.Errorf("the key buffer reserves %d bytes for %d bytes of keys, want at most %d", cap(bt.keys[0]), len(want), limit)
			}
		})
	}
}
