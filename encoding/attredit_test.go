package encoding

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// scalarOf returns the stored value of x as AppendAttrsPositional writes it.
func scalarOf(t *testing.T, x any) []byte {
	t.Helper()
	b, err := AppendAttrsPositional(nil, Attrs{"x": x}, func(string) (uint32, bool) { return 0, true })
	if err != nil {
		t.Fatal(err)
	}
	return b[2:] // count 1, gap 0
}

// A key component turns back into exactly the stored value of the attribute
// it was made from, for every width of integer and length of string.
func TestComponentScalarMatchesAttribute(t *testing.T) {
	var values []any
	for _, n := range []int64{0, 1, 127, 128, 255, 256, 65535, 65536, math.MaxUint32, math.MaxUint32 + 1, math.MaxInt64,
		-1, -32, -33, -128, -129, -32768, -32769, math.MinInt32, math.MinInt32 - 1, math.MinInt64} {
		values = append(values, n)
	}
	values = append(values, uint64(math.MaxInt64)+1, uint64(math.MaxUint64))
	for _, n := range []int{0, 1, 31, 32, 255, 256, 65535, 65536} {
		values = append(values, strings.Repeat("s", n), bytes.Repeat([]byte{7}, n))
	}
	values = append(values, "a\x00b", []byte{0, 0, 0xff}, "\x00", "ünïcode")
	for _, x := range values {
		c, err := Canonical(x)
		if err != nil {
			t.Fatal(err)
		}
		comp, err := AppendComponent(nil, c)
		if err != nil {
			t.Fatal(err)
		}
		got, rest, err := AppendComponentScalar([]byte("pre"), append(comp, 0x42))
		if err != nil {
			t.Fatalf("%T %v: %v", x, x, err)
		}
		if want := append([]byte("pre"), scalarOf(t, c)...); !bytes.Equal(got, want) {
			t.Errorf("%T %.20v: scalar %x, want %x", x, x, got, want)
		}
		if !bytes.Equal(rest, []byte{0x42}) {
			t.Errorf("%T %.20v: rest %x", x, x, rest)
		}
	}
	if _, _, err := AppendComponentScalar(nil, []byte{0x09, 1}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("unknown tag: %v, want ErrCorrupt", err)
	}
}

// Removing an attribute and adding it back gives the original bytes, for
// random records and every ordinal position; removing one whose value
// differs, or adding one the record holds, leaves the record as it is.
func TestAttrsWithAndWithoutRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	ordinal := func(name string) (uint32, bool) { return uint32(name[0]), true }
	for range 500 {
		a := Attrs{}
		for range rng.IntN(6) {
			name := string(rune('a' + rng.IntN(20)))
			switch rng.IntN(3) {
			case 0:
				a[name] = rng.Int64N(1<<40) - 1<<39
			case 1:
				a[name] = strings.Repeat("v", rng.IntN(40))
			default:
				a[name] = bytes.Repeat([]byte{1}, rng.IntN(300))
			}
		}
		full, err := AppendAttrsPositional(nil, a, ordinal)
		if err != nil {
			t.Fatal(err)
		}
		for name, x := range a {
			ord, _ := ordinal(name)
			val := scalarOf(t, x)
			without, removed, err := AppendAttrsWithout([]byte("pre"), full, ord, val)
			if err != nil || !removed {
				t.Fatalf("%v without %s: %v, removed %t", a, name, err, removed)
			}
			less := Attrs{}
			for n, v := range a {
				if n != name {
					less[n] = v
				}
			}
			if want, _ := AppendAttrsPositional([]byte("pre"), less, ordinal); !bytes.Equal(without, want) {
				t.Fatalf("%v without %s: %x, want %x", a, name, without, want)
			}
			back, added, err := AppendAttrsWith(nil, without[3:], ord, val)
			if err != nil || !added || !bytes.Equal(back, full) {
				t.Fatalf("%v: %s put back: %x (%t, %v), want %x", a, name, back, added, err, full)
			}
			if same, added, err := AppendAttrsWith(nil, full, ord, val); err != nil || added || !bytes.Equal(same, full) {
				t.Fatalf("%v: adding held %s: %x (%t, %v)", a, name, same, added, err)
			}
			if same, removed, err := AppendAttrsWithout(nil, full, ord, scalarOf(t, "not the value")); err != nil || removed || !bytes.Equal(same, full) {
				t.Fatalf("%v: removing %s by another value: %x (%t, %v)", a, name, same, removed, err)
			}
		}
	}
}

// Corrupt attributes are an error wrapping ErrCorrupt, with dst unchanged.
func TestAttrsEditCorrupt(t *testing.T) {
	full, err := AppendAttrsPositional(nil, Attrs{"a": int64(1), "b": "x"}, func(n string) (uint32, bool) { return uint32(n[0] - 'a'), true })
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range [][]byte{nil, {5}, full[:len(full)-1], append(bytes.Clone(full), 0), {1, 0, 0xc1}} {
		for _, edit := range []func() ([]byte, bool, error){
			func() ([]byte, bool, error) { return AppendAttrsWith([]byte("dst"), b, 7, []byte{1}) },
			func() ([]byte, bool, error) { return AppendAttrsWithout([]byte("dst"), b, 0, []byte{1}) },
		} {
			out, changed, err := edit()
			if !errors.Is(err, ErrCorrupt) || changed || string(out) != "dst" {
				t.Errorf("%x: %x, %t, %v; want ErrCorrupt and dst unchanged", b, out, changed, err)
			}
		}
	}
	if _, _, err := AppendAttrsWith(nil, full, 7, nil); !errors.Is(err, ErrCorrupt) {
		t.Errorf("empty value: %v, want ErrCorrupt", err)
	}
}
