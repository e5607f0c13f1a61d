package query_test

import (
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
)

// TestResolveBatchesReuseMemory resolves batches of very different sizes
// (a large one first, then smaller ones that land in its memory with stale
// keys and probes beyond their own), one after another and from several
// goroutines at once, and requires every answer to equal the batch's answer
// when it was resolved alone on a fresh store: a batch's memory, reused by
// the next, never leaks into its answers, and two batches at once never
// share it.
func TestResolveBatchesReuseMemory(t *testing.T) {
	keys := 2000
	if testing.Short() {
		keys = 500
	}
	rng := rand.New(rand.NewPCG(5, 6))
	s, txs := dimensionSnapshot(t, keys, rng)
	sizes := []int{60_000, 17, 40_000, 1, 20_000, 0, 33_333}
	batches := make([][]query.Fact, len(sizes))
	want := make([][]string, len(sizes))
	opts := query.ResolveOptions{Miss: query.MissNull, Attrs: true}
	for i, n := range sizes {
		batches[i] = randomFacts(rng, n, keys, txs)
		// The answer a batch must have: one fact at a time, so no batch
		// memory is involved beyond a one-fact batch's.
		for _, f := range batches[i] {
			res, err := query.Resolve(s, "dim", []query.Fact{f}, opts)
			if err != nil {
				t.Fatal(err)
			}
			want[i] = append(want[i], fmtResolution(res[0]))
		}
	}
	check := func(t *testing.T, s *store.Snapshot, i int) {
		got, err := query.Resolve(s, "dim", batches[i], opts)
		if err != nil {
			t.Error(err)
			return
		}
		for j := range got {
			got[j].Index = 0 // the one-fact answers are each at index 0
			if a := fmtResolution(got[j]); a != want[i][j] {
				t.Errorf("batch %d (%d facts), fact %d: %s, want %s", i, sizes[i], j, a, want[i][j])
				return
			}
		}
	}
	t.Run("in turn", func(t *testing.T) {
		for range 2 {
			for i := range batches {
				check(t, s, i)
			}
		}
	})
	t.Run("at once", func(t *testing.T) {
		var wg sync.WaitGroup
		for g := range 4 {
			fork, err := s.Fork() // a snapshot is read by one goroutine at a time
			if err != nil {
				t.Fatal(err)
			}
			defer fork.Close()
			wg.Go(func() {
				for k := range 2 * len(batches) {
					check(t, fork, (g+k)%len(batches))
				}
			})
		}
		wg.Wait()
	})
}
