package encoding

import (
	"errors"
	"fmt"
	"math"
	"testing"
	"time"
)

// walkAll collects what WalkAttrs reports, as canonical values.
func walkAll(b []byte) (Attrs, error) {
	out := Attrs{}
	err := WalkAttrs(b, func(name []byte, v *Value) error {
		out[string(name)] = v.Any()
		return nil
	})
	return out, err
}

// TestWalkAttrsMatchesDecode checks that WalkAttrs reports exactly the values
// DecodeAttrs decodes, for every kind of value.
func TestWalkAttrsMatchesDecode(t *testing.T) {
	a := Attrs{
		"n": nil, "t": true, "f": false, "i": int64(-7), "big": int64(math.MaxInt64), "u": uint64(math.MaxUint64),
		"x": 0.25, "nan": math.NaN(), "s": "Oslo", "e": "", "b": []byte{0, 1}, "eb": []byte{},
		"tm": time.Date(2024, 3, 11, 9, 30, 0, 123456000, time.UTC), "old": time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC),
	}
	enc := mustAppendAttrs(t, a)
	got, err := walkAll(enc)
	if err != nil {
		t.Fatal(err)
	}
	want, err := DecodeAttrs(enc)
	if err != nil {
		t.Fatal(err)
	}
	if !attrsEqual(got, want) {
		t.Fatalf("WalkAttrs: %#v\nDecodeAttrs: %#v", got, want)
	}
	var names []string
	_ = WalkAttrs(enc, func(name []byte, _ *Value) error { names = append(names, string(name)); return nil })
	if fmt.Sprint(names) != fmt.Sprint(a.Names()) {
		t.Fatalf("walk order %v, want %v", names, a.Names())
	}
	stop := errors.New("stop")
	calls := 0
	if err := WalkAttrs(enc, func([]byte, *Value) error { calls++; return stop }); err != stop || calls != 1 {
		t.Fatalf("an error from fn: %v after %d calls", err, calls)
	}
}

// TestWalkAttrsMalformed checks that WalkAttrs refuses every malformed record
// DecodeAttrs refuses, and records whose names are out of order.
func TestWalkAttrsMalformed(t *testing.T) {
	cases := append([]struct {
		name string
		b    []byte
	}{}, malformedAttrs...)
	cases = append(cases,
		struct {
			name string
			b    []byte
		}{"names out of order", []byte{0x82, 0xa1, 'b', 0x01, 0xa1, 'a', 0x02}},
		struct {
			name string
			b    []byte
		}{"repeated name apart", []byte{0x83, 0xa1, 'a', 0x01, 0xa1, 'b', 0x01, 0xa1, 'a', 0x02}},
	)
	for _, tt := range cases {
		if _, err := walkAll(tt.b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: WalkAttrs(%x) = %v, want ErrCorrupt", tt.name, tt.b, err)
		}
	}
}
