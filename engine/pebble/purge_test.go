package pebble

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/layout"
)

// TestRangeKeyBoundsArePrefixKeysAroundTheSpan checks the bounds Purge gives
// its range-key tombstones: Pebble accepts only prefix keys there (its
// invariant builds panic on a suffixed one), and the tombstone must still
// cover the span, on the spans erasures and vacuums make (a key of several
// components, whose first component alone is the prefix; one record; a
// transaction's log entries; a surrogate key's index entries) and on random
// keys of every keyspace.
func TestRangeKeyBoundsArePrefixKeysAroundTheSpan(t *testing.T) {
	var spans [][2][]byte
	for _, key := range [][]any{{"a", "b"}, {"a\x00", int64(-1)}, {int64(7), "x", []byte{0, 0xff}}, {"solo"}, {uint64(1<<64 - 1), "z"}} {
		tuple, err := encoding.AppendKey(nil, key)
		if err != nil {
			t.Fatal(err)
		}
		for _, tid := range []uint32{1, 300, 1<<32 - 1} {
			for _, pfx := range [][]byte{layout.CurrentKeys.KeyPrefix(nil, tid, tuple), layout.HistoryKeys.KeyPrefix(nil, tid, tuple), layout.EventKeys.KeyPrefix(nil, tid, tuple)} {
				spans = append(spans, [2][]byte{pfx, encoding.PrefixEnd(pfx)})
			}
			k := layout.CurrentKeys.Key(nil, tid, tuple, 5, 9)
			spans = append(spans, [2][]byte{k, append(bytes.Clone(k), 0)})
		}
	}
	for _, tx := range []int64{-1 << 62, 0, 1 << 50} {
		spans = append(spans, [2][]byte{layout.TxLogKeys.Key(nil, 3, tx, 0), layout.TxLogKeys.Key(nil, 3, tx+1, 0)})
		spans = append(spans, [2][]byte{layout.SKIndexKeys.Key(nil, 3, 42, tx), layout.SKIndexKeys.Key(nil, 3, 43, tx)})
	}
	r := rand.New(rand.NewPCG(3, 4))
	alphabet := []byte{0x00, 0x01, 0x10, 0x20, 0x21, 0x30, 0x31, 0xf8, 0xff, 'a'}
	gen := func() []byte {
		k := []byte{layout.Keyspaces()[r.IntN(len(layout.Keyspaces()))], byte(r.IntN(3))}
		for range r.IntN(24) {
			k = append(k, alphabet[r.IntN(len(alphabet))])
		}
		return k
	}
	for range 50_000 {
		a, b := gen(), gen()
		if c := bytes.Compare(a, b); c > 0 {
			a, b = b, a
		} else if c == 0 {
			continue
		}
		spans = append(spans, [2][]byte{a, b})
	}
	suffixed := 0
	for _, sp := range spans {
		if layout.Split(sp[0]) != len(sp[0]) || layout.Split(sp[1]) != len(sp[1]) {
			suffixed++
		}
		start, end := rangeKeyBounds(sp[0], sp[1])
		if n := layout.Split(start); n != len(start) {
			t.Fatalf("span [%x, %x): start %x splits at %d", sp[0], sp[1], start, n)
		}
		if n := layout.Split(end); n != len(end) {
			t.Fatalf("span [%x, %x): end %x splits at %d", sp[0], sp[1], end, n)
		}
		if bytes.Compare(start, sp[0]) > 0 || bytes.Compare(end, sp[1]) < 0 {
			t.Fatalf("span [%x, %x): bounds [%x, %x) do not cover it", sp[0], sp[1], start, end)
		}
	}
	if suffixed < 100 {
		t.Fatalf("only %d of %d spans had a suffixed bound: the test no longer exercises the widening", suffixed, len(spans))
	}
}
