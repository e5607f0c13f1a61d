package encoding

import (
	"bytes"
	"errors"
	"math"
	"testing"
)

func TestParseAndPrintDecimal(t *testing.T) {
	for _, tc := range []struct {
		in, out string
		coef    int64
		scale   int
	}{
		{"232.10", "232.10", 23210, 2},
		{"11.00", "11.00", 1100, 2},
		{"-0.05", "-0.05", -5, 2},
		{"+7", "7", 7, 0},
		{".25", "0.25", 25, 2},
		{"0", "0", 0, 0},
		{"-0.0", "0.0", 0, 1},
		{"000123.4500", "123.4500", 1234500, 4},
		{"999999999999999999", "999999999999999999", 999_999_999_999_999_999, 0},
		{"-0.999999999999999999", "-0.999999999999999999", -999_999_999_999_999_999, 18},
	} {
		d, err := ParseDecimal(tc.in)
		if err != nil {
			t.Fatalf("ParseDecimal(%q): %v", tc.in, err)
		}
		if d.Coef() != tc.coef || d.Scale() != tc.scale || d.String() != tc.out {
			t.Errorf("ParseDecimal(%q) = %d scale %d %q, want %d scale %d %q", tc.in, d.Coef(), d.Scale(), d, tc.coef, tc.scale, tc.out)
		}
	}
	for _, bad := range []string{"", "-", ".", "1.", "1e3", "1,5", " 1", "1 ", "0x10", "NaN", "1234567890123456789", "0.1234567890123456789", "1..2"} {
		if _, err := ParseDecimal(bad); !errors.Is(err, ErrUnsupportedType) {
			t.Errorf("ParseDecimal(%q) = %v, want ErrUnsupportedType", bad, err)
		}
	}
}

func TestDecimalRescaleAndCompare(t *testing.T) {
	d, _ := ParseDecimal("232.1")
	up, ok := d.Rescale(2)
	if !ok || up.String() != "232.10" {
		t.Fatalf("Rescale(2) = %v %v", up, ok)
	}
	if down, ok := up.Rescale(1); !ok || down != d {
		t.Fatalf("Rescale back = %v %v", down, ok)
	}
	if _, ok := up.Rescale(0); ok {
		t.Fatal("232.10 rescaled to 0 digits must fail")
	}
	big, _ := NewDecimal(maxDecimalCoef, 0)
	if _, ok := big.Rescale(1); ok {
		t.Fatal("rescale past 18 digits must fail")
	}
	if up.Cmp(d) != 0 || d.Cmp(up) != 0 {
		t.Fatal("232.1 and 232.10 must compare equal")
	}
	small, _ := ParseDecimal("232.09")
	if small.Cmp(d) != -1 || d.Cmp(small) != 1 {
		t.Fatal("232.09 < 232.1")
	}
	if _, err := NewDecimal(1, 19); !errors.Is(err, ErrUnsupportedType) {
		t.Fatal("scale 19 accepted")
	}
	if _, err := NewDecimal(maxDecimalCoef+1, 0); !errors.Is(err, ErrUnsupportedType) {
		t.Fatal("19 digits accepted")
	}
	for _, tc := range []struct {
		f     float64
		scale int
		want  string
		ok    bool
	}{{232.1, 2, "232.10", true}, {0.125, 2, "", false}, {-3, 2, "-3.00", true}, {math.NaN(), 2, "", false}, {1e30, 2, "", false}} {
		d, ok := DecimalFromFloat(tc.f, tc.scale)
		if ok != tc.ok || (ok && d.String() != tc.want) {
			t.Errorf("DecimalFromFloat(%v, %d) = %v %v, want %q %v", tc.f, tc.scale, d, ok, tc.want, tc.ok)
		}
	}
}

func TestDecimalAttributeRoundTrip(t *testing.T) {
	for _, s := range []string{"0", "1.5", "-1.5", "127", "128", "-128", "-129", "232.10", "999999999999999999", "-999999999999999999", "0.000000000000000001"} {
		d, err := ParseDecimal(s)
		if err != nil {
			t.Fatal(err)
		}
		b, err := AppendAttrs(nil, Attrs{"price": d, "n": int64(1)})
		if err != nil {
			t.Fatal(err)
		}
		a, err := DecodeAttrs(b)
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		if got, ok := a["price"].(Decimal); !ok || got != d {
			t.Fatalf("%s round-tripped to %#v", s, a["price"])
		}
		var walked Decimal
		if err := WalkAttrs(b, func(name []byte, v *Value) error {
			if string(name) == "price" {
				if v.Kind != KindDecimal {
					t.Fatalf("kind %d", v.Kind)
				}
				walked = v.Decimal()
			}
			return nil
		}); err != nil || walked != d {
			t.Fatalf("walk %s: %v %v", s, walked, err)
		}
		if !(Attrs{"price": d}).Equal(Attrs{"price": d}) {
			t.Fatal("equal decimals differ")
		}
		other, _ := d.Rescale(d.Scale() + 1)
		if d.Scale() < MaxDecimalDigits && other.Coef() != 0 && (Attrs{"price": d}).Equal(Attrs{"price": other}) {
			t.Fatalf("%s and %s are different values", d, other)
		}
	}
}

func TestCorruptDecimalIsAnError(t *testing.T) {
	d, _ := ParseDecimal("1.5")
	good, _ := AppendAttrs(nil, Attrs{"x": d})
	i := bytes.IndexByte(good, 0xc7)
	for name, mutate := range map[string]func(b []byte) []byte{
		"scale 19":    func(b []byte) []byte { b[i+3] = 19; return b },
		"long form":   func(b []byte) []byte { return append(append(b[:i:i], 0xc7, 3, decimalExt, 1, 0, 15), b[i+5:]...) },
		"zero length": func(b []byte) []byte { return append(b[:i:i], 0xc7, 1, decimalExt, 1) },
		"truncated":   func(b []byte) []byte { return b[:len(b)-1] },
		"nine bytes":  func(b []byte) []byte { return append(b[:i:i], 0xc7, 10, decimalExt, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1) },
		"19 digits": func(b []byte) []byte {
			return append(b[:i:i], 0xc7, 9, decimalExt, 0, 0x0d, 0xe0, 0xb6, 0xb3, 0xa7, 0x64, 0x00, 0x00)
		},
		"other ext length": func(b []byte) []byte { return append(b[:i:i], 0xc7, 20, decimalExt) },
	} {
		b := mutate(bytes.Clone(good))
		if _, err := DecodeAttrs(b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: DecodeAttrs = %v, want ErrCorrupt", name, err)
		}
		if err := WalkAttrs(b, func([]byte, *Value) error { return nil }); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: WalkAttrs = %v, want ErrCorrupt", name, err)
		}
	}
}
