package query

import (
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
				bt := &batch{s: s, t: tb, facts: facts, keys: make([][]byte, 1), chunks: make([][]probe, 1)}
				if err := bt.encode(0, 0, n); err != nil {
					t.Fatal(err)
				}
				got, want := slices.Clone(bt.chunks[0]), slices.Clone(bt.chunks[0])
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
	bt := &batch{s: s, t: tb, facts: facts, keys: make([][]byte, 1), chunks: make([][]probe, 1)}
	if err := bt.encode(0, 0, len(facts)); err != nil {
		b.Fatal(err)
	}
	work := make([]probe, len(facts))
	for _, sorter := range []struct {
		name string
		sort func([]probe)
	}{
		{"specialised", bt.sortProbes},
		{"SortFunc", func(ps []probe) { slices.SortFunc(ps, bt.compare) }},
	} {
		b.Run(sorter.name, func(b *testing.B) {
			for b.Loop() {
				copy(work, bt.chunks[0])
				sorter.sort(work)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(facts)), "ns/probe")
		})
	}
}
