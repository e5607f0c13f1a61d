package query

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestDistinctSetCountsAsAMap adds and removes random values, from few
// distinct ones (the list) to many (the map, after the move), and checks the
// count after every step against a map of counts; reset empties the set.
func TestDistinctSetCountsAsAMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	var d distinctSet
	for _, kinds := range []int{3, maxListed, maxListed + 1, 40} {
		d.reset()
		want := map[distinctKey]int32{}
		var in []distinctKey // values added and not yet removed
		for step := range 5000 {
			if len(in) > 0 && rng.IntN(2) == 0 {
				i := rng.IntN(len(in))
				k := in[i]
				in[i], in = in[len(in)-1], in[:len(in)-1]
				d.remove(k)
				if want[k]--; want[k] == 0 {
					delete(want, k)
				}
			} else {
				k := distinctKey{kind: dkString, s: fmt.Sprint("v", rng.IntN(kinds))}
				in = append(in, k)
				d.add(k)
				want[k]++
			}
			if d.len() != len(want) {
				t.Fatalf("%d kinds, step %d: %d distinct, want %d", kinds, step, d.len(), len(want))
			}
		}
	}
	d.reset()
	if d.len() != 0 {
		t.Fatalf("after reset: %d distinct", d.len())
	}
}
