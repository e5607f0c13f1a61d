package encoding

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"
)

// valueEqual reports whether two decoded attribute values are identical, floats
// compared by their bits so that NaN equals itself and -0 differs from +0.
func valueEqual(a, b any) bool {
	switch x := a.(type) {
	case float64:
		y, ok := b.(float64)
		return ok && math.Float64bits(x) == math.Float64bits(y)
	case []byte:
		y, ok := b.([]byte)
		return ok && bytes.Equal(x, y) && (x == nil) == (y == nil)
	}
	return a == b
}

func attrsEqual(a, b Attrs) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		w, ok := b[k]
		if !ok || !valueEqual(v, w) {
			return false
		}
	}
	return true
}

func mustAppendAttrs(t testing.TB, a Attrs) []byte {
	t.Helper()
	b, err := AppendAttrs(nil, a)
	if err != nil {
		t.Fatalf("AppendAttrs(%#v): %v", a, err)
	}
	return b
}

// msgp builds raw msgpack input with the encoder's primitives, for inputs that
// AppendAttrs would never write.
func msgp(t testing.TB, write func(enc *msgpack.Encoder) error) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := write(msgpack.NewEncoder(&buf)); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestAttrsRoundTrip(t *testing.T) {
	long := strings.Repeat("x\x00", 40000) // str32 / bin32 sized
	tests := []struct {
		name string
		in   any
		want any // canonical decoded value
	}{
		{"nil", nil, nil},
		{"true", true, true},
		{"false", false, false},
		{"int64 min", int64(math.MinInt64), int64(math.MinInt64)},
		{"int64 -33", int64(-33), int64(-33)},
		{"int64 -32", int64(-32), int64(-32)},
		{"int64 -1", int64(-1), int64(-1)},
		{"int64 0", int64(0), int64(0)},
		{"int64 127", int64(127), int64(127)},
		{"int64 128", int64(128), int64(128)},
		{"int64 65536", int64(65536), int64(65536)},
		{"int64 max", int64(math.MaxInt64), int64(math.MaxInt64)},
		{"int", int(-5), int64(-5)},
		{"int8", int8(math.MinInt8), int64(math.MinInt8)},
		{"int16", int16(math.MinInt16), int64(math.MinInt16)},
		{"int32", int32(math.MaxInt32), int64(math.MaxInt32)},
		{"uint", uint(7), int64(7)},
		{"uint8", uint8(math.MaxUint8), int64(math.MaxUint8)},
		{"uint16", uint16(math.MaxUint16), int64(math.MaxUint16)},
		{"uint32", uint32(math.MaxUint32), int64(math.MaxUint32)},
		{"uint64 small", uint64(3), int64(3)},
		{"uint64 MaxInt64", uint64(math.MaxInt64), int64(math.MaxInt64)},
		{"uint64 2^63", uint64(1 << 63), uint64(1 << 63)},
		{"uint64 max", uint64(math.MaxUint64), uint64(math.MaxUint64)},
		{"uint above MaxInt64", uint(math.MaxUint64), uint64(math.MaxUint64)},
		{"float32", float32(1.5), float64(1.5)},
		{"float32 inexact", float32(0.1), float64(float32(0.1))},
		{"float64", 0.1, 0.1},
		{"float64 -0", math.Copysign(0, -1), math.Copysign(0, -1)},
		{"float64 +inf", math.Inf(1), math.Inf(1)},
		{"float64 -inf", math.Inf(-1), math.Inf(-1)},
		{"float64 NaN", math.NaN(), math.NaN()},
		{"float64 NaN payload", math.Float64frombits(0x7ff8_dead_beef_0001), math.Float64frombits(0x7ff8_dead_beef_0001)},
		{"float64 smallest", math.SmallestNonzeroFloat64, math.SmallestNonzeroFloat64},
		{"empty string", "", ""},
		{"string", "Oslo", "Oslo"},
		{"string 0x00 0xFF", "\x00\xff", "\x00\xff"},
		{"string invalid utf8", "\xc3\x28", "\xc3\x28"},
		{"string str8", strings.Repeat("a", 200), strings.Repeat("a", 200)},
		{"string str16", strings.Repeat("a", 300), strings.Repeat("a", 300)},
		{"string str32", long, long},
		{"bytes", []byte{0, 1, 0xff}, []byte{0, 1, 0xff}},
		{"empty bytes", []byte{}, []byte{}},
		{"nil bytes", []byte(nil), []byte{}},
		{"bytes bin16", bytes.Repeat([]byte{7}, 300), bytes.Repeat([]byte{7}, 300)},
		{"bytes bin32", []byte(long), []byte(long)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, name := range []string{"v", "", "\x00name\xff"} {
				in := Attrs{name: tt.in, "z": int64(1)}
				enc := mustAppendAttrs(t, in)
				got, err := DecodeAttrs(enc)
				if err != nil {
					t.Fatalf("DecodeAttrs(%x): %v", enc, err)
				}
				want := Attrs{name: tt.want, "z": int64(1)}
				if !attrsEqual(got, want) {
					t.Fatalf("round trip of %#v = %#v, want %#v", in, got, want)
				}
				if again := mustAppendAttrs(t, got); !bytes.Equal(again, enc) {
					t.Fatalf("re-encoding the decoded value changed its bytes:\n%x\n%x", enc, again)
				}
			}
		})
	}
}

func TestAttrsEmpty(t *testing.T) {
	for _, in := range []Attrs{nil, {}} {
		enc := mustAppendAttrs(t, in)
		if !bytes.Equal(enc, []byte{0x80}) {
			t.Errorf("AppendAttrs(%#v) = %x, want 80 (empty fixmap)", in, enc)
		}
		got, err := DecodeAttrs(enc)
		if err != nil || got == nil || len(got) != 0 {
			t.Errorf("DecodeAttrs(%x) = %#v, %v; want an empty, non-nil Attrs", enc, got, err)
		}
	}
}

func TestAppendAttrsAppends(t *testing.T) {
	dst := []byte("head")
	enc, err := AppendAttrs(dst[:len(dst):len(dst)], Attrs{"a": int64(1)})
	if err != nil {
		t.Fatal(err)
	}
	if want := []byte("head\x81\xa1a\x01"); !bytes.Equal(enc, want) {
		t.Fatalf("AppendAttrs = %q, want %q", enc, want)
	}
}

// TestAttrsLayout pins the deterministic form: names sorted, integers in their
// smallest msgpack form whatever their Go type, floats always as float64.
func TestAttrsLayout(t *testing.T) {
	tests := []struct {
		in   Attrs
		want []byte
	}{
		{Attrs{"b": true, "a": int64(1)}, []byte{0x82, 0xa1, 'a', 0x01, 0xa1, 'b', 0xc3}},
		{Attrs{"ab": nil, "a": nil, "": nil}, []byte{0x83, 0xa0, 0xc0, 0xa1, 'a', 0xc0, 0xa2, 'a', 'b', 0xc0}},
		{Attrs{"n": int64(-1)}, []byte{0x81, 0xa1, 'n', 0xff}},
		{Attrs{"n": int64(200)}, []byte{0x81, 0xa1, 'n', 0xcc, 0xc8}},
		{Attrs{"n": uint64(200)}, []byte{0x81, 0xa1, 'n', 0xcc, 0xc8}},
		{Attrs{"n": int8(-100)}, []byte{0x81, 0xa1, 'n', 0xd0, 0x9c}},
		{Attrs{"n": int64(-200)}, []byte{0x81, 0xa1, 'n', 0xd1, 0xff, 0x38}},
		{Attrs{"n": uint64(math.MaxUint64)}, []byte{0x81, 0xa1, 'n', 0xcf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}},
		{Attrs{"f": float32(1.5)}, []byte{0x81, 0xa1, 'f', 0xcb, 0x3f, 0xf8, 0, 0, 0, 0, 0, 0}},
		{Attrs{"s": "hi", "b": []byte("hi")}, []byte{0x82, 0xa1, 'b', 0xc4, 0x02, 'h', 'i', 0xa1, 's', 0xa2, 'h', 'i'}},
		{Attrs{"b": []byte(nil)}, []byte{0x81, 0xa1, 'b', 0xc4, 0x00}},
	}
	for _, tt := range tests {
		if got := mustAppendAttrs(t, tt.in); !bytes.Equal(got, tt.want) {
			t.Errorf("AppendAttrs(%#v) = %x, want %x", tt.in, got, tt.want)
		}
	}
}

func TestAttrsDeterministic(t *testing.T) {
	type entry struct {
		name  string
		value any
	}
	entries := []entry{
		{"name", "Oslo"}, {"zip", int64(150)}, {"active", true}, {"score", 0.25},
		{"raw", []byte{0, 1}}, {"missing", nil}, {"big", uint64(math.MaxUint64)},
		{"", int64(-1)}, {"Name", "case differs"}, {"name2", int32(7)},
	}
	for i := range 40 {
		entries = append(entries, entry{fmt.Sprintf("k%03d", i), int64(i * i)})
	}
	want := mustAppendAttrs(t, func() Attrs {
		a := Attrs{}
		for _, e := range entries {
			a[e.name] = e.value
		}
		return a
	}())
	rng := rand.New(rand.NewPCG(7, 7))
	for i := range 200 {
		rng.Shuffle(len(entries), func(i, j int) { entries[i], entries[j] = entries[j], entries[i] })
		a := make(Attrs) // no size hint: a different growth history each time
		for _, e := range entries {
			a[e.name] = e.value
		}
		if got := mustAppendAttrs(t, a); !bytes.Equal(got, want) {
			t.Fatalf("insertion order %d changed the encoding:\n%x\n%x", i, got, want)
		}
	}
}

// TestAttrsWidenedEqualBytes checks that values which are equal after widening
// encode identically, so records can be compared as bytes.
func TestAttrsWidenedEqualBytes(t *testing.T) {
	groups := [][]any{
		{int64(5), int(5), int8(5), int16(5), int32(5), uint(5), uint8(5), uint16(5), uint32(5), uint64(5)},
		{int64(-5), int(-5), int8(-5), int16(-5), int32(-5)},
		{int64(math.MaxInt64), uint64(math.MaxInt64), int(math.MaxInt64)},
		{1.5, float32(1.5)},
		{[]byte{}, []byte(nil)},
	}
	for _, g := range groups {
		want := mustAppendAttrs(t, Attrs{"v": g[0]})
		for _, v := range g[1:] {
			if got := mustAppendAttrs(t, Attrs{"v": v}); !bytes.Equal(got, want) {
				t.Errorf("%T(%v) encodes as %x, %T(%v) as %x", v, v, got, g[0], g[0], want)
			}
		}
	}
}

func TestAttrsUnsupportedType(t *testing.T) {
	for _, v := range []any{
		struct{}{}, new(time.Time), time.Date(300000, 1, 1, 0, 0, 0, 0, time.UTC), time.Second, []int{1}, []string{"a"}, map[string]any{},
		Attrs{}, []any{1}, complex(1, 2), new(int64), func() {}, make(chan int),
	} {
		dst := []byte("keep")
		got, err := AppendAttrs(dst, Attrs{"ok": int64(1), "bad": v})
		if !errors.Is(err, ErrUnsupportedType) {
			t.Errorf("AppendAttrs with a %T = %v, want ErrUnsupportedType", v, err)
		}
		if !bytes.Equal(got, dst) {
			t.Errorf("AppendAttrs with a %T returned %q, want dst unchanged", v, got)
		}
		ordinal := func(string) (uint32, bool) { return 0, true }
		if _, err := AppendRecordPositional(nil, &RecordValue{ValidTo: math.MaxInt64, TxCommit: 1, TxTo: math.MaxInt64, Attrs: Attrs{"bad": v}}, ordinal); !errors.Is(err, ErrUnsupportedType) {
			t.Errorf("AppendRecordPositional with a %T = %v, want ErrUnsupportedType", v, err)
		}
		if _, err := Canonical(v); !errors.Is(err, ErrUnsupportedType) {
			t.Errorf("Canonical(%T) = %v, want ErrUnsupportedType", v, err)
		}
	}
}

func TestAttrsTooMany(t *testing.T) {
	a := make(Attrs, MaxAttrs+1)
	for i := range MaxAttrs + 1 {
		a[fmt.Sprint(i)] = nil
	}
	if _, err := AppendAttrs(nil, a); !errors.Is(err, ErrUnsupportedType) {
		t.Errorf("AppendAttrs of %d attributes = %v, want ErrUnsupportedType", len(a), err)
	}
	delete(a, "0")
	enc := mustAppendAttrs(t, a)
	if got, err := DecodeAttrs(enc); err != nil || len(got) != MaxAttrs {
		t.Errorf("DecodeAttrs of MaxAttrs attributes = %d, %v", len(got), err)
	}
}

// TestCanonical checks the canonical type of every accepted Go type directly:
// some wrong answers (uint64(7) for uint(7)) would still encode identically.
func TestCanonical(t *testing.T) {
	tests := []struct {
		in, want any
	}{
		{nil, nil},
		{true, true},
		{int(-1), int64(-1)},
		{int8(-1), int64(-1)},
		{int16(-1), int64(-1)},
		{int32(-1), int64(-1)},
		{int64(-1), int64(-1)},
		{uint(7), int64(7)},
		{uint8(7), int64(7)},
		{uint16(7), int64(7)},
		{uint32(7), int64(7)},
		{uint64(7), int64(7)},
		{uint64(math.MaxInt64), int64(math.MaxInt64)},
		{uint64(math.MaxInt64 + 1), uint64(math.MaxInt64 + 1)},
		{uint(math.MaxUint64), uint64(math.MaxUint64)},
		{float32(0.5), 0.5},
		{0.25, 0.25},
		{"s", "s"},
		{[]byte{1}, []byte{1}},
	}
	for _, tt := range tests {
		got, err := Canonical(tt.in)
		if err != nil || fmt.Sprintf("%T %v", got, got) != fmt.Sprintf("%T %v", tt.want, tt.want) {
			t.Errorf("Canonical(%T(%v)) = %T(%v), %v; want %T(%v)", tt.in, tt.in, got, got, err, tt.want, tt.want)
		}
	}
}

func TestCanonicalCopiesBytes(t *testing.T) {
	in := []byte{1, 2}
	out, err := Canonical(in)
	if err != nil {
		t.Fatal(err)
	}
	in[0] = 9
	if got := out.([]byte); got[0] != 1 {
		t.Fatalf("Canonical shares the caller's slice: %v", got)
	}
}

func TestAttrsCloneAndNames(t *testing.T) {
	var nilAttrs Attrs
	if nilAttrs.Clone() != nil {
		t.Error("Clone of nil Attrs is not nil")
	}
	a := Attrs{"b": int64(1), "a": "x", "c": nil}
	c := a.Clone()
	c["b"] = int64(2)
	if a["b"] != int64(1) || len(c) != 3 {
		t.Errorf("Clone shares its map: a=%v c=%v", a, c)
	}
	if got := fmt.Sprint(a.Names()); got != "[a b c]" {
		t.Errorf("Names = %s", got)
	}
}

// malformedAttrs are inputs DecodeAttrs must reject with ErrCorrupt.
var malformedAttrs = []struct {
	name string
	b    []byte
}{
	{"empty", nil},
	{"nil", []byte{0xc0}},
	{"never used code", []byte{0xc1}},
	{"array", []byte{0x90}},
	{"integer", []byte{0x01}},
	{"string", []byte{0xa1, 'a'}},
	{"map16 truncated header", []byte{0xde, 0x00}},
	{"map32 2^31 entries", []byte{0xdf, 0x80, 0x00, 0x00, 0x00}},
	{"map32 2^32-1 entries", []byte{0xdf, 0xff, 0xff, 0xff, 0xff}},
	{"map16 count beyond input", []byte{0xde, 0xff, 0xff, 0xa1, 'a', 0x01}},
	{"fixmap count beyond input", []byte{0x82, 0xa1, 'a', 0x01}},
	{"name not a string", []byte{0x81, 0x01, 0x01}},
	{"name is bin", []byte{0x81, 0xc4, 0x01, 'a', 0x01}},
	{"name is nil", []byte{0x81, 0xc0, 0x01}},
	{"name truncated", []byte{0x81, 0xa3, 'a', 0x01}},
	{"name str32 2^32-1", []byte{0x81, 0xdb, 0xff, 0xff, 0xff, 0xff}},
	{"name str8 beyond input", []byte{0x81, 0xd9, 0xff, 'a', 0x01}},
	{"value missing", []byte{0x81, 0xa1, 'a'}},
	{"value nested map", []byte{0x81, 0xa1, 'a', 0x80}},
	{"value nested array", []byte{0x81, 0xa1, 'a', 0x91, 0x01}},
	{"value ext", []byte{0x81, 0xa1, 'a', 0xd4, 0x01, 0x00}},
	{"value msgpack timestamp with nanoseconds", []byte{0x81, 0xa1, 'a', 0xd7, 0xff, 0, 0, 0, 4, 0, 0, 0, 1}},
	{"value ext of another type", []byte{0x81, 0xa1, 'a', 0xd6, 0x05, 0, 0, 0, 1}},
	{"value float32 form", []byte{0x81, 0xa1, 'a', 0xca, 0x3f, 0xc0, 0x00, 0x00}},
	{"value never used code", []byte{0x81, 0xa1, 'a', 0xc1}},
	{"value uint16 truncated", []byte{0x81, 0xa1, 'a', 0xcd, 0x01}},
	{"value int64 truncated", []byte{0x81, 0xa1, 'a', 0xd3, 0, 0, 0}},
	{"value double truncated", []byte{0x81, 0xa1, 'a', 0xcb, 0x00}},
	{"value str truncated", []byte{0x81, 0xa1, 'a', 0xa5, 'x'}},
	{"value str32 2^32-1", []byte{0x81, 0xa1, 'a', 0xdb, 0xff, 0xff, 0xff, 0xff}},
	{"value bin32 2^32-1", []byte{0x81, 0xa1, 'a', 0xc6, 0xff, 0xff, 0xff, 0xff}},
	{"value bin16 beyond input", []byte{0x81, 0xa1, 'a', 0xc5, 0x01, 0x00, 0xff}},
	{"duplicate name", []byte{0x82, 0xa1, 'a', 0x01, 0xa1, 'a', 0x02}},
	{"duplicate name, different str forms", []byte{0x82, 0xa1, 'a', 0x01, 0xd9, 0x01, 'a', 0x02}},
	{"trailing byte", []byte{0x80, 0x00}},
	{"trailing map", []byte{0x81, 0xa1, 'a', 0x01, 0x80}},
}

func TestAttrsMalformed(t *testing.T) {
	for _, tt := range malformedAttrs {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeAttrs(tt.b)
			checkCorrupt(t, fmt.Sprintf("DecodeAttrs(%x)", tt.b), err)
			if got != nil {
				t.Errorf("DecodeAttrs returned %#v with its error", got)
			}
		})
	}
}

func TestAttrsTooManyOnWire(t *testing.T) {
	b := msgp(t, func(enc *msgpack.Encoder) error {
		if err := enc.EncodeMapLen(MaxAttrs + 1); err != nil {
			return err
		}
		for i := range MaxAttrs + 1 {
			if err := enc.EncodeString(fmt.Sprint(i)); err != nil {
				return err
			}
			if err := enc.EncodeNil(); err != nil {
				return err
			}
		}
		return nil
	})
	_, err := DecodeAttrs(b)
	checkCorrupt(t, "DecodeAttrs of MaxAttrs+1 entries", err)
}

// TestValueTooLarge gives the decoders well-formed values one byte over
// MaxValueSize: a string attribute whose str32 header matches the bytes present.
func TestValueTooLarge(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates MaxValueSize")
	}
	b := make([]byte, MaxValueSize+1)
	oversized := func(header []byte) []byte {
		n := copy(b, header)
		binary.BigEndian.PutUint32(b[n:], uint32(len(b)-n-4))
		return b
	}
	_, err := DecodeAttrs(oversized([]byte{0x81, 0xa1, 's', 0xdb}))
	checkCorrupt(t, "DecodeAttrs", err)
}

func TestAttrsTruncated(t *testing.T) {
	enc := mustAppendAttrs(t, Attrs{
		"a": nil, "b": true, "c": int64(-200), "d": uint64(math.MaxUint64), "e": 2.5,
		"f": "str", "g": []byte{0, 0xff}, "h": strings.Repeat("s", 40), "i": int64(70000),
	})
	for cut := range len(enc) {
		_, err := DecodeAttrs(enc[:cut])
		checkCorrupt(t, fmt.Sprintf("DecodeAttrs(enc[:%d])", cut), err)
	}
}

// TestAttrsGarbage mutates valid encodings at random: whatever DecodeAttrs makes of
// them, it must not panic, must fail only with ErrCorrupt, and anything it accepts
// must re-encode to a fixed point.
func TestAttrsGarbage(t *testing.T) {
	seeds := [][]byte{
		mustAppendAttrs(t, Attrs{"name": "Oslo", "n": int64(-7), "f": 1.5, "b": []byte{1}, "u": uint64(math.MaxUint64)}),
		mustAppendAttrs(t, Attrs{"": nil, "t": true}),
	}
	const seed = 99
	rng := rand.New(rand.NewPCG(seed, seed))
	for i := range 20000 {
		b := bytes.Clone(seeds[i%len(seeds)])
		for range 1 + rng.IntN(3) {
			switch rng.IntN(3) {
			case 0:
				b[rng.IntN(len(b))] = byte(rng.Uint32())
			case 1:
				b = b[:rng.IntN(len(b))+1]
			default:
				b = append(b, byte(rng.Uint32()))
			}
		}
		a, err := DecodeAttrs(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("seed %d input %x: error %v does not wrap ErrCorrupt", seed, b, err)
			}
			continue
		}
		enc := mustAppendAttrs(t, a)
		a2, err := DecodeAttrs(enc)
		if err != nil || !attrsEqual(a, a2) {
			t.Fatalf("seed %d input %x: decoded %#v, re-encoded %x, decoded again %#v, %v", seed, b, a, enc, a2, err)
		}
	}
}

// allocSlack is the allocation allowed per decode beyond 10x the input size: room
// for the pooled decoder and map headers, far below what a claimed length of 4 GiB
// (or msgpack's own 1 MiB read chunk) would cost.
const allocSlack = 1 << 20

// TestDecodeAllocationBounded feeds decoders inputs that claim huge lengths and
// checks that they allocate in proportion to the bytes actually present.
func TestDecodeAllocationBounded(t *testing.T) {
	hostileAttrs := map[string][]byte{
		"name str32 2^32-1":     {0x81, 0xdb, 0xff, 0xff, 0xff, 0xff},
		"value str32 2^32-1":    {0x81, 0xa1, 'a', 0xdb, 0xff, 0xff, 0xff, 0xff},
		"value bin32 2^32-1":    {0x81, 0xa1, 'a', 0xc6, 0xff, 0xff, 0xff, 0xff},
		"value bin32 2^31":      {0x81, 0xa1, 'a', 0xc6, 0x80, 0x00, 0x00, 0x00, 0x01},
		"map32 2^32-1":          {0xdf, 0xff, 0xff, 0xff, 0xff},
		"map32 2^31":            {0xdf, 0x80, 0x00, 0x00, 0x00},
		"map16 MaxAttrs":        append([]byte{0xde, 0x10, 0x00}, make([]byte, 2*MaxAttrs)...),
		"map16 MaxAttrs, bare":  {0xde, 0x10, 0x00},
		"str16 beyond input":    {0x81, 0xa1, 'a', 0xda, 0xff, 0xff, 'x'},
		"bin32 1 MiB+1 claimed": append([]byte{0x81, 0xa1, 'a', 0xc6, 0x00, 0x10, 0x00, 0x01}, make([]byte, 100)...),
	}
	type input struct{ b []byte }
	inputs := map[string]input{}
	for name, b := range hostileAttrs {
		inputs["attrs/"+name] = input{b}
	}
	for name, in := range inputs {
		t.Run(name, func(t *testing.T) {
			perCall, err := bytesAllocated(func() error {
				_, err := DecodeAttrs(in.b)
				return err
			})
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("decoding %x: err = %v, want ErrCorrupt", in.b, err)
			}
			limit := uint64(allocSlack + 10*len(in.b))
			if len(in.b) <= 16 {
				// Nothing a tiny input claims may be allocated before the claim is
				// checked against the bytes present.
				limit = 4 << 10
			}
			if perCall > limit {
				t.Fatalf("decoding %d hostile bytes allocated %d bytes per call, limit %d", len(in.b), perCall, limit)
			}
			t.Logf("%d bytes in, %d bytes allocated per call", len(in.b), perCall)
		})
	}
}

// bytesAllocated returns the bytes f allocates per call, averaged over a few
// calls, and f's last error.
func bytesAllocated(f func() error) (uint64, error) {
	const runs = 10
	var before, after runtime.MemStats
	err := f() // warm the decoder pools
	runtime.ReadMemStats(&before)
	for range runs {
		err = f()
	}
	runtime.ReadMemStats(&after)
	return (after.TotalAlloc - before.TotalAlloc) / runs, err
}

// TestInternedNamesUnderConcurrency decodes records whose names collide in the
// intern table, from several goroutines at once, and checks every decode gets
// its own names (run with -race).
func TestInternedNamesUnderConcurrency(t *testing.T) {
	var encs [][]byte
	var want []Attrs
	for i := range 3000 {
		a := Attrs{fmt.Sprintf("n%d", i): int64(i), "shared": "x", strings.Repeat("long", 20) + fmt.Sprint(i%7): true}
		enc, err := AppendAttrs(nil, a)
		if err != nil {
			t.Fatal(err)
		}
		encs, want = append(encs, enc), append(want, a)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for g := range 4 {
		wg.Go(func() {
			for i := range encs {
				j := (i + g*751) % len(encs)
				got, err := DecodeAttrs(encs[j])
				if err != nil || !reflect.DeepEqual(got, want[j]) {
					errs <- fmt.Errorf("record %d: %v, %v; want %v", j, got, err, want[j])
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
