package store

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/bitempo/bitempo/engine"
)

// stableSortedWrites is sortedWrites' reference: a stable sort of a copy of
// the writes by key, then the last write of each run of equal keys.
func stableSortedWrites(ws []engine.Write) []engine.Write {
	return stableSortInPlace(slices.Clone(ws))
}

// stableSortInPlace is the stable sort sortedWrites replaced, in place.
func stableSortInPlace(ws []engine.Write) []engine.Write {
	slices.SortStableFunc(ws, func(x, y engine.Write) int { return bytes.Compare(x.Key, y.Key) })
	out := ws[:0]
	for i := range ws {
		if len(out) > 0 && bytes.Equal(out[len(out)-1].Key, ws[i].Key) {
			out[len(out)-1] = ws[i]
			continue
		}
		out = append(out, ws[i])
	}
	return out
}

// commitWrites returns n writes shaped like a commit's current-index writes:
// keys of one keyspace and table, a natural key and a descending valid_from,
// shuffled, where about one key in four is written twice (a record retired
// and written again in one commit), once as a deletion or with another value:
// each value is unique, so a wrong pick among a key's writes shows.
func commitWrites(rng *rand.Rand, n int) []engine.Write {
	ws := make([]engine.Write, 0, n)
	for len(ws) < n {
		key := fmt.Appendf([]byte{0x10, 0x01}, "customer-%07d", rng.IntN(1_000_000))
		key = binary.BigEndian.AppendUint64(key, ^uint64(rng.Int64N(1<<40)))
		ws = append(ws, engine.Write{Key: key, Value: fmt.Appendf(nil, "write %d", len(ws))})
		if rng.IntN(4) == 0 && len(ws) < n {
			ws = append(ws, engine.Write{Key: key, Value: fmt.Appendf(nil, "write %d", len(ws)), Delete: rng.IntN(2) == 0})
		}
	}
	rng.Shuffle(len(ws), func(i, j int) { ws[i], ws[j] = ws[j], ws[i] })
	return ws
}

// TestSortedWritesKeepsEachKeysLastWrite checks sortedWrites against the
// stable sort it replaces, on commits of random writes with repeated keys.
func TestSortedWritesKeepsEachKeysLastWrite(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 1, 2, 7, 100, 3_000} {
		for range 20 {
			ws := commitWrites(rng, n)
			if n > 2 && rng.IntN(2) == 0 { // a key written many times
				for i := range ws {
					if rng.IntN(3) == 0 {
						ws[i].Key = ws[0].Key
					}
				}
			}
			want := stableSortedWrites(ws)
			if got := sortedWrites(ws); !slices.EqualFunc(got, want, equalWrite) {
				t.Fatalf("%d writes: sortedWrites kept %d writes, the stable sort %d, or different ones", n, len(got), len(want))
			}
		}
	}
}

func equalWrite(x, y engine.Write) bool {
	return bytes.Equal(x.Key, y.Key) && bytes.Equal(x.Value, y.Value) && x.Delete == y.Delete && bytes.Equal(x.RangeEnd, y.RangeEnd)
}

// BenchmarkSortedWrites sorts a commit's current-index writes (1,000 SCD2
// changes write about 3,000), by sortedWrites and by the stable sort of the
// writes it replaced.
func BenchmarkSortedWrites(b *testing.B) {
	ws := commitWrites(rand.New(rand.NewPCG(5, 6)), 3_000)
	for _, c := range []struct {
		name string
		sort func([]engine.Write) []engine.Write
	}{
		{"positions", sortedWrites},
		{"stable", stableSortInPlace},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			in := make([]engine.Write, len(ws))
			for b.Loop() {
				copy(in, ws) // the caller's fresh slice
				c.sort(in)
			}
		})
	}
}
