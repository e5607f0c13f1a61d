package layout

import (
	"bytes"
	"cmp"
	"math/rand/v2"
	"testing"

	"github.com/bitempo/bitempo/encoding"
)

// The layout's keys split where go says: a record or event key after
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
	for _, tid := range []uint32{7, OrderedOneByte - 1, OrderedOneByte, 300, 1 << 20, 1<<32 - 1} {
		h := len(AppendTablePrefix(nil, Current, tid)) // ks | tid: 2 to 6 bytes
		cases := []struct {
			key    []byte
			prefix int
		}{
			{CurrentKeys.Key(nil, tid, one, 10, 0), h + len(one)},
			{CurrentKeys.KeyPrefix(nil, tid, one), h + len(one)},
			{CurrentKeys.AppendValid(CurrentKeys.KeyPrefix(nil, tid, one), 3), h + len(one)},
			{HistoryKeys.Key(nil, tid, one, 10, 20), h + len(one)},
			{HistoryKeys.Key(nil, tid, two, 10, 20), h + 9},
			{CurrentKeys.KeyPrefix(nil, tid, two), h + 9},
			{EventKeys.Key(nil, tid, one, 1, 2), h + len(one)},
			{SKIndexKeys.Key(nil, tid, 99, 5), h + 1},
			{SKIndexKeys.Prefix(nil, tid, 99), h + 1},
			{SKIndexKeys.Key(nil, tid, 1<<40, 5), h + 7},
			{SKIndexKeys.Key(nil, tid, 1<<64-1, 5), h + 9},
			{SKIndexKeys.Prefix(nil, tid, 300), h + 3},
			{SKIndexKeys.Prefix(nil, tid, 300)[:h+2], h + 2}, // truncated sk: all prefix
			{TxLogKeys.Key(nil, tid, 5, 1), h + 8 + 1},
			{TxLogKeys.Key(nil, tid, 5, 1<<20), h + 8 + 4},
			{CheckpointKey(tid, one), h + len(one)},
			{CurrentKeys.TablePrefix(nil, tid), h},
			{[]byte{Current}, 1},
			{append(CurrentKeys.TablePrefix(nil, tid), 0x30, 'a', 0x00), h + 3},        // unterminated: all prefix
			{append(CurrentKeys.TablePrefix(nil, tid), 0x30, 0x00, 0x05, 0x01), h + 4}, // bad escape
			{append(CurrentKeys.TablePrefix(nil, tid), 0x20, 1, 2, 3), h + 4},          // short integer
			{append(CurrentKeys.TablePrefix(nil, tid), 0x99, 1, 2, 3), h + 4},          // unknown tag
		}
		for _, c := range cases {
			if got := Split(c.key); got != c.prefix {
				t.Errorf("tid %d: Split(%x) = %d, want %d", tid, c.key, got, c.prefix)
			}
		}
	}
	// A table id that is not an ordered uvarint in its only form makes the
	// whole key its prefix.
	for _, bad := range [][]byte{
		{Current, 0xf8, 0x05, 0x20, 0, 0, 0, 0, 0, 0, 0, 1, 1},    // 5 in a long form
		{Current, 0xf9, 0x00, 0xff, 0x20, 0, 0, 0, 0, 0, 0, 0, 1}, // leading zero byte
		{Current, 0xfb},                      // truncated
		{Current, 0xfc, 1, 2, 3, 4, 5, 0x20}, // over 32 bits
		{SKIndex, 0xf9, 0x01},
	} {
		if got := Split(bad); got != len(bad) {
			t.Errorf("Split(%x) = %d, want all prefix", bad, got)
		}
	}
}

// The ordered uvarint has one form per value, its forms sort as their values,
// none is a prefix of another, and a decoder refuses every other byte string.
func TestOrderedUvarint(t *testing.T) {
	vals := []uint64{0, 1, OrderedOneByte - 1, OrderedOneByte, 255, 256, 1<<16 - 1, 1 << 16, 1<<32 - 1, 1 << 32, 1<<56 - 1, 1 << 56, 1<<64 - 1}
	r := rand.New(rand.NewPCG(3, 4))
	for range 10_000 {
		vals = append(vals, r.Uint64()>>r.IntN(64))
	}
	for i, v := range vals {
		b := AppendOrdered(nil, v)
		got, n := DecodeOrdered(append(bytes.Clone(b), 0x42))
		if got != v || n != len(b) {
			t.Fatalf("%d: form %x decodes as %d (%d bytes)", v, b, got, n)
		}
		if _, n := DecodeOrdered(b[:len(b)-1]); n != 0 {
			t.Fatalf("%d: truncated form %x decodes", v, b[:len(b)-1])
		}
		for _, w := range vals[max(0, i-20):i] {
			c := AppendOrdered(nil, w)
			if bytes.Compare(b, c) != cmp.Compare(v, w) {
				t.Fatalf("forms %x (%d) and %x (%d) out of order", b, v, c, w)
			}
			if v != w && (bytes.HasPrefix(b, c) || bytes.HasPrefix(c, b)) {
				t.Fatalf("form %x (%d) and %x (%d): one is a prefix of the other", b, v, c, w)
			}
		}
	}
	// Every two-byte string either decodes to a value whose form it is, or
	// is refused.
	for x := range 1 << 16 {
		b := []byte{byte(x >> 8), byte(x)}
		v, n := DecodeOrdered(b)
		if n != 0 && !bytes.Equal(AppendOrdered(nil, v), b[:n]) {
			t.Fatalf("%x decodes as %d, whose form is %x", b, v, AppendOrdered(nil, v))
		}
	}
}
