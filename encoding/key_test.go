package encoding

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"
)

func TestKeyRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		key  []any
		want []any // decoded form: widened integers, non-nil []byte
	}{
		{"string", []any{"customer-42"}, []any{"customer-42"}},
		{"empty string", []any{""}, []any{""}},
		{"string 0x00", []any{"a\x00b"}, []any{"a\x00b"}},
		{"string only 0x00", []any{"\x00\x00"}, []any{"\x00\x00"}},
		{"string 0xFF", []any{"\xff\xff"}, []any{"\xff\xff"}},
		{"string escape lookalikes", []any{"\x00\xff\x00\x01\x01"}, []any{"\x00\xff\x00\x01\x01"}},
		{"bytes", []any{[]byte{1, 2, 3}}, []any{[]byte{1, 2, 3}}},
		{"empty bytes", []any{[]byte{}}, []any{[]byte{}}},
		{"nil bytes", []any{[]byte(nil)}, []any{[]byte{}}},
		{"bytes 0x00 0xFF", []any{[]byte{0, 0xff, 0, 1, 0}}, []any{[]byte{0, 0xff, 0, 1, 0}}},
		{"int64 min", []any{int64(math.MinInt64)}, []any{int64(math.MinInt64)}},
		{"int64 -1", []any{int64(-1)}, []any{int64(-1)}},
		{"int64 0", []any{int64(0)}, []any{int64(0)}},
		{"int64 max", []any{int64(math.MaxInt64)}, []any{int64(math.MaxInt64)}},
		{"uint64 0", []any{uint64(0)}, []any{uint64(0)}},
		{"uint64 max", []any{uint64(math.MaxUint64)}, []any{uint64(math.MaxUint64)}},
		{"int widens", []any{int(-7)}, []any{int64(-7)}},
		{"int32 widens", []any{int32(math.MinInt32)}, []any{int64(math.MinInt32)}},
		{"uint32 widens", []any{uint32(math.MaxUint32)}, []any{uint64(math.MaxUint32)}},
		{
			"mixed",
			[]any{"tenant\x00", int64(-3), []byte{0xff}, uint64(9), ""},
			[]any{"tenant\x00", int64(-3), []byte{0xff}, uint64(9), ""},
		},
	}
	suffix := []byte{0x00, 0xff, 0x01} // key bytes that follow a tuple, e.g. a time
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			enc, err := AppendKey([]byte("pfx"), tt.key)
			if err != nil {
				t.Fatalf("AppendKey: %v", err)
			}
			if !bytes.HasPrefix(enc, []byte("pfx")) {
				t.Fatalf("AppendKey dropped dst: %x", enc)
			}
			enc = enc[len("pfx"):]

			got, err := DecodeKey(enc)
			if err != nil {
				t.Fatalf("DecodeKey(%x): %v", enc, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("DecodeKey(%x) = %#v, want %#v", enc, got, tt.want)
			}
			again, err := AppendKey(nil, got)
			if err != nil || !bytes.Equal(again, enc) {
				t.Fatalf("re-encoding %#v = %x, %v; want %x", got, again, err, enc)
			}

			full := append(bytes.Clone(enc), suffix...)
			prefix, rest, err := DecodeKeyPrefix(full, len(tt.key))
			if err != nil || !reflect.DeepEqual(prefix, tt.want) || !bytes.Equal(rest, suffix) {
				t.Fatalf("DecodeKeyPrefix = %#v, %x, %v; want %#v, %x", prefix, rest, err, tt.want, suffix)
			}
			rest, err = SkipKey(full, len(tt.key))
			if err != nil || !bytes.Equal(rest, suffix) {
				t.Fatalf("SkipKey = %x, %v; want %x", rest, err, suffix)
			}

			b := enc
			for i, want := range tt.want {
				var c any
				c, b, err = DecodeComponent(b)
				if err != nil || !reflect.DeepEqual(c, want) {
					t.Fatalf("DecodeComponent %d = %#v, %v; want %#v", i, c, err, want)
				}
			}
			if len(b) != 0 {
				t.Fatalf("%d bytes left after the last component", len(b))
			}
		})
	}
}

// TestKeyLayout pins the byte layout package doc describes; stored keys depend on it.
func TestKeyLayout(t *testing.T) {
	tests := []struct {
		c    any
		want []byte
	}{
		{int64(math.MinInt64), []byte{0x20, 0, 0, 0, 0, 0, 0, 0, 0}},
		{int64(-1), []byte{0x20, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}},
		{int64(0), []byte{0x20, 0x80, 0, 0, 0, 0, 0, 0, 0}},
		{uint64(1), []byte{0x21, 0, 0, 0, 0, 0, 0, 0, 1}},
		{"", []byte{0x30, 0x00, 0x01}},
		{"a\x00b", []byte{0x30, 'a', 0x00, 0xff, 'b', 0x00, 0x01}},
		{[]byte{0x00}, []byte{0x31, 0x00, 0xff, 0x00, 0x01}},
		{[]byte{0xff}, []byte{0x31, 0xff, 0x00, 0x01}},
	}
	for _, tt := range tests {
		got, err := AppendComponent(nil, tt.c)
		if err != nil || !bytes.Equal(got, tt.want) {
			t.Errorf("AppendComponent(%#v) = %x, %v; want %x", tt.c, got, err, tt.want)
		}
	}
}

func TestDecodeKeyEmpty(t *testing.T) {
	key, err := DecodeKey(nil)
	if err != nil || len(key) != 0 {
		t.Fatalf("DecodeKey(nil) = %#v, %v; want no components", key, err)
	}
	enc, err := AppendKey(nil, nil)
	if err != nil || len(enc) != 0 {
		t.Fatalf("AppendKey(nil, nil) = %x, %v; want no bytes", enc, err)
	}
}

func TestKeyNonPositiveCount(t *testing.T) {
	b := []byte{0x20, 0x80, 0, 0, 0, 0, 0, 0, 0}
	for _, n := range []int{0, -1, math.MinInt} {
		key, rest, err := DecodeKeyPrefix(b, n)
		if err != nil || len(key) != 0 || !bytes.Equal(rest, b) {
			t.Errorf("DecodeKeyPrefix(b, %d) = %#v, %x, %v; want nothing decoded", n, key, rest, err)
		}
		rest, err = SkipKey(b, n)
		if err != nil || !bytes.Equal(rest, b) {
			t.Errorf("SkipKey(b, %d) = %x, %v; want nothing skipped", n, rest, err)
		}
	}
}

// componentKind names the types a key schema is built from.
type componentKind int

const (
	kindString componentKind = iota
	kindBytes
	kindInt64
	kindUint64
)

// randomComponent draws from small value sets so that equal values, common
// prefixes, embedded 0x00 / 0x01 / 0xFF bytes and integer extremes are frequent.
func randomComponent(rng *rand.Rand, k componentKind) any {
	switch k {
	case kindString:
		return string(randomBytes(rng))
	case kindBytes:
		return randomBytes(rng)
	case kindInt64:
		edges := []int64{math.MinInt64, math.MinInt64 + 1, -256, -1, 0, 1, 255, 256, math.MaxInt64 - 1, math.MaxInt64}
		if rng.IntN(4) == 0 {
			return rng.Int64() - rng.Int64()
		}
		return edges[rng.IntN(len(edges))]
	default:
		edges := []uint64{0, 1, 255, 256, math.MaxInt64, 1 << 63, math.MaxUint64 - 1, math.MaxUint64}
		if rng.IntN(4) == 0 {
			return rng.Uint64()
		}
		return edges[rng.IntN(len(edges))]
	}
}

func randomBytes(rng *rand.Rand) []byte {
	alphabet := []byte{0x00, 0x01, 0x02, 'a', 'b', 0xfe, 0xff}
	b := make([]byte, rng.IntN(5))
	for i := range b {
		b[i] = alphabet[rng.IntN(len(alphabet))]
	}
	return b
}

// compareTuples is the order the tuple encoding must preserve: component-wise, with
// a tuple sorting before its extensions.
func compareTuples(a, b []any) int {
	for i := range min(len(a), len(b)) {
		if c := compareComponents(a[i], b[i]); c != 0 {
			return c
		}
	}
	return cmp.Compare(len(a), len(b))
}

func compareComponents(a, b any) int {
	switch x := a.(type) {
	case string:
		return cmp.Compare(x, b.(string))
	case []byte:
		return bytes.Compare(x, b.([]byte))
	case int64:
		return cmp.Compare(x, b.(int64))
	case uint64:
		return cmp.Compare(x, b.(uint64))
	}
	panic(fmt.Sprintf("component of type %T", a))
}

func TestKeyOrder(t *testing.T) {
	schemas := [][]componentKind{
		{kindString},
		{kindBytes},
		{kindInt64},
		{kindUint64},
		{kindString, kindInt64},
		{kindBytes, kindString, kindUint64},
		{kindInt64, kindString, kindString},
	}
	const seed = 20260101
	rng := rand.New(rand.NewPCG(seed, seed))
	for _, schema := range schemas {
		t.Run(fmt.Sprint(schema), func(t *testing.T) {
			tuples := make([][]any, 300)
			for i := range tuples {
				// Shorter tuples of the same schema are prefixes (extension order).
				n := len(schema)
				if rng.IntN(4) == 0 {
					n = rng.IntN(len(schema) + 1)
				}
				for _, k := range schema[:n] {
					tuples[i] = append(tuples[i], randomComponent(rng, k))
				}
			}
			encs := make([][]byte, len(tuples))
			for i, tup := range tuples {
				var err error
				if encs[i], err = AppendKey(nil, tup); err != nil {
					t.Fatalf("AppendKey(%#v): %v", tup, err)
				}
			}
			for i := range tuples {
				for j := range tuples {
					want := compareTuples(tuples[i], tuples[j])
					if got := bytes.Compare(encs[i], encs[j]); got != want {
						t.Fatalf("seed %d: bytes.Compare(%x, %x) = %d, tuple order of %#v and %#v is %d",
							seed, encs[i], encs[j], got, tuples[i], tuples[j], want)
					}
				}
			}
		})
	}
}

func TestKeyMalformed(t *testing.T) {
	validInt := []byte{0x20, 0x80, 0, 0, 0, 0, 0, 0, 5}
	tests := []struct {
		name string
		b    []byte
	}{
		{"tag only int64", []byte{0x20}},
		{"truncated int64", []byte{0x20, 0x80, 0, 0}},
		{"truncated uint64", []byte{0x21, 0, 0, 0, 0, 0, 0, 0}},
		{"bad tag", []byte{0x99, 'a', 0x00, 0x01}},
		{"tag 0x00", []byte{0x00}},
		{"tag 0xFF", []byte{0xff}},
		{"tag only string", []byte{0x30}},
		{"unterminated string", []byte{0x30, 'a', 'b'}},
		{"unterminated bytes", []byte{0x31, 0xff, 0xff}},
		{"escape at end", []byte{0x30, 'a', 0x00}},
		{"escaped 0x00 then end", []byte{0x30, 0x00, 0xff}},
		{"bad escape", []byte{0x30, 'a', 0x00, 0x02, 0x00, 0x01}},
		{"bad escape 0x00 0x00", []byte{0x31, 0x00, 0x00, 0x00, 0x01}},
		{"bad escape after escaped 0x00", []byte{0x30, 0x00, 0xff, 0x00, 0x7f}},
		{"valid then bad tag", append(bytes.Clone(validInt), 0x42)},
		{"valid then truncated", append(bytes.Clone(validInt), 0x21, 1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key, err := DecodeKey(tt.b)
			checkCorrupt(t, "DecodeKey", err)
			if key != nil {
				t.Errorf("DecodeKey returned %#v with its error", key)
			}
			// The malformed component is the first one, or the second after validInt.
			n := 1
			if bytes.HasPrefix(tt.b, validInt) {
				n = 2
			} else {
				_, _, err = DecodeComponent(tt.b)
				checkCorrupt(t, "DecodeComponent", err)
			}
			_, _, err = DecodeKeyPrefix(tt.b, n)
			checkCorrupt(t, "DecodeKeyPrefix", err)
			_, err = SkipKey(tt.b, n)
			checkCorrupt(t, "SkipKey", err)
		})
	}
}

func TestKeyTooFewComponents(t *testing.T) {
	enc, err := AppendKey(nil, []any{"a", int64(1)})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = DecodeKeyPrefix(enc, 3)
	checkCorrupt(t, "DecodeKeyPrefix", err)
	_, err = SkipKey(enc, 3)
	checkCorrupt(t, "SkipKey", err)
	_, _, err = DecodeComponent(nil)
	checkCorrupt(t, "DecodeComponent(nil)", err)
}

// TestKeyTruncated cuts a valid tuple at every offset: a cut inside a component
// must be an error for every decoder, never a shorter or different tuple.
func TestKeyTruncated(t *testing.T) {
	key := []any{"a\x00\xff", int64(-1), []byte{0, 0}, uint64(math.MaxUint64), ""}
	var bounds []int // encoded length after each component
	var enc []byte
	for _, c := range key {
		var err error
		if enc, err = AppendComponent(enc, c); err != nil {
			t.Fatal(err)
		}
		bounds = append(bounds, len(enc))
	}
	for cut := range len(enc) {
		b := enc[:cut]
		if _, _, err := DecodeKeyPrefix(b, len(key)); !errors.Is(err, ErrCorrupt) {
			t.Errorf("DecodeKeyPrefix(enc[:%d]) = %v, want ErrCorrupt", cut, err)
		}
		if _, err := SkipKey(b, len(key)); !errors.Is(err, ErrCorrupt) {
			t.Errorf("SkipKey(enc[:%d]) = %v, want ErrCorrupt", cut, err)
		}
		got, err := DecodeKey(b)
		if at := slices.Index(bounds, cut); cut == 0 || at >= 0 {
			// A cut on a boundary is a valid shorter tuple.
			if err != nil || len(got) != at+1 {
				t.Errorf("DecodeKey(enc[:%d]) = %#v, %v; want %d components", cut, got, err, at+1)
			}
		} else if !errors.Is(err, ErrCorrupt) {
			t.Errorf("DecodeKey(enc[:%d]) = %#v, %v; want ErrCorrupt", cut, got, err)
		}
	}
}

func TestKeyUnsupportedType(t *testing.T) {
	for _, c := range []any{nil, true, int8(1), int16(1), uint(1), uint8(1), uint16(1), 1.5, float32(1), time.Time{}, struct{}{}, []int{1}, new(int64)} {
		if _, err := AppendComponent(nil, c); !errors.Is(err, ErrUnsupportedType) {
			t.Errorf("AppendComponent(%T) = %v, want ErrUnsupportedType", c, err)
		}
		if _, err := AppendKey(nil, []any{"ok", c}); !errors.Is(err, ErrUnsupportedType) {
			t.Errorf("AppendKey with a %T = %v, want ErrUnsupportedType", c, err)
		}
	}
}

var timeEdges = []int64{math.MinInt64, math.MinInt64 + 1, -1 << 32, -2, -1, 0, 1, 2, 1 << 32, math.MaxInt64 - 1, math.MaxInt64}

func TestTimeOrder(t *testing.T) {
	for _, a := range timeEdges {
		for _, b := range timeEdges {
			want := cmp.Compare(a, b)
			if got := bytes.Compare(AppendTimeAsc(nil, a), AppendTimeAsc(nil, b)); got != want {
				t.Errorf("asc: compare(%d, %d) = %d, want %d", a, b, got, want)
			}
			if got := bytes.Compare(AppendTimeDesc(nil, a), AppendTimeDesc(nil, b)); got != -want {
				t.Errorf("desc: compare(%d, %d) = %d, want %d", a, b, got, -want)
			}
		}
	}
}

func TestTimeRoundTrip(t *testing.T) {
	tail := []byte{0xab}
	for _, v := range timeEdges {
		b := append(AppendTimeAsc([]byte{0x01}, v), tail...)
		got, rest, err := DecodeTimeAsc(b[1:])
		if err != nil || got != v || !bytes.Equal(rest, tail) {
			t.Errorf("DecodeTimeAsc(AppendTimeAsc(%d)) = %d, %x, %v", v, got, rest, err)
		}
		b = append(AppendTimeDesc([]byte{0x01}, v), tail...)
		got, rest, err = DecodeTimeDesc(b[1:])
		if err != nil || got != v || !bytes.Equal(rest, tail) {
			t.Errorf("DecodeTimeDesc(AppendTimeDesc(%d)) = %d, %x, %v", v, got, rest, err)
		}
	}
	if got := AppendTimeAsc(nil, 0); !bytes.Equal(got, []byte{0x80, 0, 0, 0, 0, 0, 0, 0}) {
		t.Errorf("AppendTimeAsc(0) = %x", got)
	}
	if got := AppendTimeDesc(nil, math.MaxInt64); !bytes.Equal(got, make([]byte, 8)) {
		t.Errorf("AppendTimeDesc(MaxInt64) = %x, want all zero (first in newest-first order)", got)
	}
}

func TestFixedWidthTruncated(t *testing.T) {
	for n := range 8 {
		b := bytes.Repeat([]byte{0xff}, n)
		if _, _, err := DecodeTimeAsc(b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("DecodeTimeAsc(%d bytes) = %v, want ErrCorrupt", n, err)
		}
		if _, _, err := DecodeTimeDesc(b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("DecodeTimeDesc(%d bytes) = %v, want ErrCorrupt", n, err)
		}
		if _, _, err := DecodeUint64(b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("DecodeUint64(%d bytes) = %v, want ErrCorrupt", n, err)
		}
		if _, _, err := DecodeUint32(b); n < 4 && !errors.Is(err, ErrCorrupt) {
			t.Errorf("DecodeUint32(%d bytes) = %v, want ErrCorrupt", n, err)
		}
	}
}

func TestFixedWidthUint(t *testing.T) {
	u32 := []uint32{0, 1, 255, 256, math.MaxUint32}
	for i, v := range u32 {
		b := AppendUint32(nil, v)
		got, rest, err := DecodeUint32(b)
		if err != nil || got != v || len(rest) != 0 || len(b) != 4 {
			t.Errorf("uint32 %d: got %d, %x, %v", v, got, rest, err)
		}
		if i > 0 && bytes.Compare(AppendUint32(nil, u32[i-1]), b) >= 0 {
			t.Errorf("uint32 %d does not sort after %d", v, u32[i-1])
		}
	}
	u64 := []uint64{0, 1, math.MaxUint32, 1 << 63, math.MaxUint64}
	for i, v := range u64 {
		b := AppendUint64(nil, v)
		got, rest, err := DecodeUint64(b)
		if err != nil || got != v || len(rest) != 0 || len(b) != 8 {
			t.Errorf("uint64 %d: got %d, %x, %v", v, got, rest, err)
		}
		if i > 0 && bytes.Compare(AppendUint64(nil, u64[i-1]), b) >= 0 {
			t.Errorf("uint64 %d does not sort after %d", v, u64[i-1])
		}
	}
}

func TestPrefixEnd(t *testing.T) {
	tests := []struct {
		prefix, want []byte
	}{
		{nil, nil},
		{[]byte{}, nil},
		{[]byte{0xff}, nil},
		{[]byte{0xff, 0xff, 0xff}, nil},
		{[]byte{0x00}, []byte{0x01}},
		{[]byte{0xfe}, []byte{0xff}},
		{[]byte{0x01, 0x02}, []byte{0x01, 0x03}},
		{[]byte{0x01, 0xff}, []byte{0x02}},
		{[]byte{0x01, 0xfe, 0xff, 0xff}, []byte{0x01, 0xff}},
		{[]byte{0xff, 0x00}, []byte{0xff, 0x01}},
	}
	for _, tt := range tests {
		in := bytes.Clone(tt.prefix)
		got := PrefixEnd(in)
		if !bytes.Equal(got, tt.want) || (got == nil) != (tt.want == nil) {
			t.Errorf("PrefixEnd(%x) = %x, want %x", tt.prefix, got, tt.want)
		}
		if !bytes.Equal(in, tt.prefix) {
			t.Errorf("PrefixEnd modified its input: %x, was %x", in, tt.prefix)
		}
	}
}

// TestPrefixEndBound checks the contract directly: every extension of the prefix
// sorts below PrefixEnd, and PrefixEnd itself does not start with the prefix.
func TestPrefixEndBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		prefix := randomBytes(rng)
		end := PrefixEnd(prefix)
		if end == nil {
			if len(bytes.Trim(prefix, "\xff")) != 0 {
				t.Fatalf("PrefixEnd(%x) = nil, but the prefix has an upper bound", prefix)
			}
			continue
		}
		if bytes.HasPrefix(end, prefix) || bytes.Compare(end, prefix) <= 0 {
			t.Fatalf("PrefixEnd(%x) = %x is not above the prefix range", prefix, end)
		}
		key := append(bytes.Clone(prefix), randomBytes(rng)...)
		key = append(key, 0xff, 0xff)
		if bytes.Compare(key, end) >= 0 {
			t.Fatalf("key %x with prefix %x is not below PrefixEnd %x", key, prefix, end)
		}
	}
}

func checkCorrupt(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, ErrCorrupt) {
		t.Errorf("%s: err = %v, want one wrapping ErrCorrupt", what, err)
	}
}
