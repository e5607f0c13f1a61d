package pebble

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/layout"
)

// Pebble's contract for Split (base.Comparer's docs), on prefixes and
// suffixes of the layout's shapes, and on random bytes: bytewise order is the
// order of (prefix, suffix) pairs, and a prefix splits as itself.
// (pebble.CheckComparer also requires that removing leading bytes from a
// prefix leaves a prefix, for Pebble's synthetic prefixes, which bitempo does
// not use and which no keyspace-dependent split can satisfy.)
func TestLayoutComparer(t *testing.T) {
	var prefixes [][]byte
	for _, c := range []any{"a", "a\x00", "", "ab", int64(1), uint64(1 << 40), []byte{0, 0xff}} {
		tuple, err := encoding.AppendKey(nil, []any{c})
		if err != nil {
			t.Fatal(err)
		}
		prefixes = append(prefixes, layout.CurrentKeys.KeyPrefix(nil, 1, tuple), layout.HistoryKeys.KeyPrefix(nil, 2, tuple), layout.EventKeys.KeyPrefix(nil, 1, tuple),
			layout.CurrentKeys.KeyPrefix(nil, 300, tuple), layout.HistoryKeys.KeyPrefix(nil, 1<<20, tuple), layout.EventKeys.KeyPrefix(nil, 1<<32-1, tuple))
	}
	var suffixes [][]byte
	for _, v := range []int64{1 << 62, 1, 0, -1, -1 << 62} { // newest first: ascending bytes
		suffixes = append(suffixes, encoding.AppendTimeDesc(nil, v))
	}
	for _, p := range prefixes {
		if n := layoutComparer.Split(p); n != len(p) {
			t.Fatalf("prefix %x splits at %d", p, n)
		}
		for i, s := range suffixes {
			k := append(bytes.Clone(p), s...)
			if n := layoutComparer.Split(k); n != len(p) {
				t.Fatalf("%x (prefix %x, suffix %x) splits at %d", k, p, s, n)
			}
			if layoutComparer.Compare(p, k) >= 0 {
				t.Fatalf("prefix %x does not sort before %x", p, k)
			}
			if i > 0 && layoutComparer.Compare(append(bytes.Clone(p), suffixes[i-1]...), k) >= 0 {
				t.Fatalf("suffixes out of order under prefix %x", p)
			}
		}
	}
	for _, p := range append(prefixes, layout.SKIndexKeys.Prefix(nil, 1, 1<<40-1), layout.SKIndexKeys.Prefix(nil, 1, 255), layout.SKIndexKeys.Prefix(nil, 1<<32-1, 1<<64-1), []byte{layout.Meta, 'x'}) {
		succ := layoutComparer.ImmediateSuccessor(nil, p)
		if n := layoutComparer.Split(succ); n != len(succ) || bytes.Compare(p, succ) >= 0 {
			t.Fatalf("successor %x of prefix %x: split %d, order %d", succ, p, n, bytes.Compare(p, succ))
		}
		if layoutComparer.Split(p) == len(p) && len(p) > 5 && layout.Split(append(bytes.Clone(p), 0)) == len(p) {
			for _, sfx := range suffixes {
				if k := append(bytes.Clone(p), sfx...); bytes.Compare(k, succ) >= 0 {
					t.Fatalf("successor %x of prefix %x sorts before its key %x", succ, p, k)
				}
			}
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte{0x00, 0x01, 0x10, 0x11, 0x12, 0x20, 0x21, 0x30, 0x31, 0xf8, 0xf9, 0xff, 'a'}
	// Table ids of every width, and byte strings that are no table id.
	tids := [][]byte{{0}, {1}, {layout.OrderedOneByte - 1}, {0xf8, 0xf8}, {0xf8, 0xff}, {0xf9, 0x01, 0x00},
		{0xfb, 0xff, 0xff, 0xff, 0xff}, {0xf8, 0x05}, {0xf9, 0x00, 0x01}, {0xf9}, {0xfa, 0x01}, {0xfc, 1, 2, 3, 4, 5}}
	gen := func() []byte {
		k := append([]byte{[]byte{layout.Current, layout.History, layout.SKIndex, layout.Events, layout.Meta}[r.IntN(5)]}, tids[r.IntN(len(tids))]...)
		for range r.IntN(24) {
			k = append(k, alphabet[r.IntN(len(alphabet))])
		}
		return k
	}
	for range 200_000 {
		a, b := gen(), gen()
		an, bn := layout.Split(a), layout.Split(b)
		pair := bytes.Compare(a[:an], b[:bn])
		if pair == 0 {
			pair = bytes.Compare(a[an:], b[bn:])
		}
		if pair != bytes.Compare(a, b) {
			t.Fatalf("order of %x (split %d) and %x (split %d): bytewise %d, by (prefix, suffix) %d", a, an, b, bn, bytes.Compare(a, b), pair)
		}
		if layout.Split(a[:an]) != an {
			t.Fatalf("prefix %x of %x splits at %d", a[:an], a, layout.Split(a[:an]))
		}
		// The successor of a's prefix is a prefix key after a.
		if succ := layout.ImmediateSuccessor(nil, a[:an]); layout.Split(succ) != len(succ) || (an < len(a) && bytes.Compare(a, succ) >= 0) {
			t.Fatalf("successor %x of the prefix of %x (split %d)", succ, a, an)
		}
	}
}
