package encoding

import (
	"bytes"
	"math"
	"testing"
)

// TestAttrsEqualMatchesEncoding checks that Attrs.Equal answers exactly what
// comparing the two encodings answers, for every pair drawn from canonical and
// non-canonical values, including NaN, negative zero and large uint64s.
func TestAttrsEqualMatchesEncoding(t *testing.T) {
	values := []any{
		nil, true, false, int64(0), int64(1), int(1), int32(1), uint8(1), uint64(1),
		uint64(math.MaxUint64), uint64(math.MaxInt64 + 1), float64(1), float32(1),
		math.NaN(), math.Copysign(0, -1), 0.0, "", "a", "1", []byte{}, []byte("a"),
	}
	records := []Attrs{{}, {"x": nil}, {"y": int64(1)}}
	for _, v := range values {
		records = append(records, Attrs{"x": v}, Attrs{"x": v, "y": int64(1)})
	}
	for _, a := range records {
		for _, b := range records {
			ea, err1 := AppendAttrs(nil, a)
			eb, err2 := AppendAttrs(nil, b)
			if err1 != nil || err2 != nil {
				t.Fatal(err1, err2)
			}
			if got, want := a.Equal(b), bytes.Equal(ea, eb); got != want {
				t.Errorf("%#v.Equal(%#v) = %v, encodings equal: %v", a, b, got, want)
			}
		}
	}
}
