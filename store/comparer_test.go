package store

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/bitempo/bitempo/encoding"
)

// The layout's keys split where layout.go says: a record or event key after
// its tuple's first component, an sk-index key after the sk; anything else,
// and any key without a suffix, is all prefix.
func TestSplitKey(t *testing.T) {
	tuple := func(c ...any) []byte {
		b, err := encoding.AppendKey(nil, c)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	one := tuple("k\x00y")
	two := tuple(int64(-3), "b")
	cases := []struct {
		key    []byte
		prefix int
	}{
		{currentKeys.key(nil, 7, one, 10, 0), 5 + len(one)},
		{currentKeys.keyPrefix(nil, 7, one), 5 + len(one)},
		{currentKeys.appendValid(currentKeys.keyPrefix(nil, 7, one), 3), 5 + len(one)},
		{historyKeys.key(nil, 7, one, 10, 20), 5 + len(one)},
		{historyKeys.key(nil, 7, two, 10, 20), 5 + 9},
		{currentKeys.keyPrefix(nil, 7, two), 5 + 9},
		{eventKey.key(nil, 7, one, 1, 2), 5 + len(one)},
		{skIndex.key(nil, 7, 99, 5), 5 + 8},
		{skIndex.prefix(nil, 7, 99), 5 + 8},
		{txLogKey.key(nil, 7, 5, 1), 5 + 8 + 4},
		{checkpointKey(7, one), 5 + len(one)},
		{currentKeys.tablePrefix(nil, 7), 5},
		{[]byte{ksCurrent}, 1},
		{append(currentKeys.tablePrefix(nil, 7), 0x30, 'a', 0x00), 5 + 3},        // unterminated: all prefix
		{append(currentKeys.tablePrefix(nil, 7), 0x30, 0x00, 0x05, 0x01), 5 + 4}, // bad escape
		{append(currentKeys.tablePrefix(nil, 7), 0x20, 1, 2, 3), 5 + 4},          // short integer
		{append(currentKeys.tablePrefix(nil, 7), 0x99, 1, 2, 3), 5 + 4},          // unknown tag
	}
	for _, c := range cases {
		if got := splitKey(c.key); got != c.prefix {
			t.Errorf("splitKey(%x) = %d, want %d", c.key, got, c.prefix)
		}
	}
}

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
		prefixes = append(prefixes, currentKeys.keyPrefix(nil, 1, tuple), historyKeys.keyPrefix(nil, 2, tuple), eventKey.keyPrefix(nil, 1, tuple))
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
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte{0x00, 0x01, 0x10, 0x11, 0x12, 0x20, 0x21, 0x30, 0x31, 0xff, 'a'}
	gen := func() []byte {
		k := []byte{[]byte{ksCurrent, ksHistory, ksSKIndex, ksEvents, ksMeta}[r.IntN(5)], 0, 0, 0, byte(r.IntN(2))}
		for range r.IntN(24) {
			k = append(k, alphabet[r.IntN(len(alphabet))])
		}
		return k
	}
	for range 200_000 {
		a, b := gen(), gen()
		an, bn := splitKey(a), splitKey(b)
		pair := bytes.Compare(a[:an], b[:bn])
		if pair == 0 {
			pair = bytes.Compare(a[an:], b[bn:])
		}
		if pair != bytes.Compare(a, b) {
			t.Fatalf("order of %x (split %d) and %x (split %d): bytewise %d, by (prefix, suffix) %d", a, an, b, bn, bytes.Compare(a, b), pair)
		}
		if splitKey(a[:an]) != an {
			t.Fatalf("prefix %x of %x splits at %d", a[:an], a, splitKey(a[:an]))
		}
	}
}
