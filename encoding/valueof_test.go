package encoding

import (
	"reflect"
	"testing"
	"time"
)

// TestValueOfInvertsAny checks that ValueOf and Value.Any convert every
// attribute type both ways, and that what is not an attribute value is null.
func TestValueOfInvertsAny(t *testing.T) {
	d, err := ParseDecimal("-232.10")
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range []any{true, int64(-7), uint64(1 << 63), 2.5, "s\x00t", []byte{0, 1}, time.Date(2024, 3, 1, 0, 0, 0, 5000, time.UTC), d} {
		v := ValueOf(x)
		if got := v.Any(); !reflect.DeepEqual(got, x) {
			t.Errorf("ValueOf(%#v).Any() = %#v", x, got)
		}
	}
	for _, x := range []any{nil, 3, int32(1), struct{}{}} {
		if v := ValueOf(x); v.Kind != KindNull {
			t.Errorf("ValueOf(%#v) is kind %d, want null", x, v.Kind)
		}
	}
}
