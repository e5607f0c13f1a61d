package query

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestDistinctDictNumbersValues numbers random values, from few distinct
// ones (the list) to many (the map, after the move), and checks that equal
// keys get one id, different keys different ids, and that ids are dense from
// 0 in the order values were first seen; reset starts the numbering again.
func TestDistinctDictNumbersValues(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	var d distinctDict
	for _, kinds := range []int{1, 3, maxListed, maxListed + 1, 40, 3} {
		d.reset()
		want := map[distinctKey]int32{}
		for step := range 2000 {
			k := distinctKey{kind: dkString, s: fmt.Sprint("v", rng.IntN(kinds))}
			if rng.IntN(3) == 0 {
				k = distinctKey{kind: dkInt, n: uint64(rng.IntN(kinds))}
			}
			id, seen := want[k]
			if !seen {
				id = int32(len(want))
				want[k] = id
			}
			if got := d.id(k); got != id {
				t.Fatalf("%d kinds, step %d: %v has id %d, want %d", kinds, step, k, got, id)
			}
			if int(d.n) != len(want) {
				t.Fatalf("%d kinds, step %d: %d ids given, want %d", kinds, step, d.n, len(want))
			}
		}
	}
}

// TestDistinctSetCountsAsAMap adds and removes random value ids, few or
// many, and checks the count after every step against a map of counts;
// reset empties the set, whether it counted few ids or all of them.
func TestDistinctSetCountsAsAMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	var d distinctSet
	for _, ids := range []int{3, maxListed, 40, 1000} {
		d.resize(ids)
		for round := range 4 {
			want := map[int32]int32{}
			var in []int32 // ids added and not yet removed
			for step := range 1000 + round*1000 {
				if len(in) > 0 && rng.IntN(2) == 0 {
					i := rng.IntN(len(in))
					k := in[i]
					in[i], in = in[len(in)-1], in[:len(in)-1]
					d.remove(k)
					if want[k]--; want[k] == 0 {
						delete(want, k)
					}
				} else {
					k := int32(rng.IntN(ids))
					in = append(in, k)
					d.add(k)
					want[k]++
				}
				if d.len() != len(want) {
					t.Fatalf("%d ids, round %d, step %d: %d distinct, want %d", ids, round, step, d.len(), len(want))
				}
			}
			d.reset()
			if d.len() != 0 {
				t.Fatalf("%d ids, round %d: %d distinct after reset", ids, round, d.len())
			}
			for k, c := range d.counts {
				if c != 0 {
					t.Fatalf("%d ids, round %d: id %d counts %d after reset", ids, round, k, c)
				}
			}
		}
	}
}
