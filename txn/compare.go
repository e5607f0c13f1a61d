package txn

import (
	"bytes"
	"math"
	"strconv"
	"strings"

	"github.com/bitempo/bitempo/store"
)

// trackedEqual reports whether a and b agree on every tracked attribute of t,
// under the table's comparison options. An absent attribute equals null.
func trackedEqual(t *store.Table, a, b store.Attrs) bool {
	for name, x := range a {
		if t.Tracked(name) && !valuesEqual(x, b[name], t.Compare[name]) {
			return false
		}
	}
	for name, y := range b {
		if _, seen := a[name]; !seen && t.Tracked(name) && !valuesEqual(nil, y, t.Compare[name]) {
			return false
		}
	}
	return true
}

// valuesEqual is null-safe equality of two canonical attribute values: null
// equals null and nothing else; numbers compare by value across int64, uint64 and
// float64 (after rounding to the scale when opt.Round); strings optionally trimmed
// and case-folded.
func valuesEqual(x, y any, opt store.CompareOptions) bool {
	if x == nil || y == nil {
		return x == nil && y == nil
	}
	if xs, ok := x.(string); ok {
		ys, ok := y.(string)
		return ok && normString(xs, opt) == normString(ys, opt)
	}
	if xb, ok := x.([]byte); ok {
		yb, ok := y.([]byte)
		return ok && bytes.Equal(xb, yb)
	}
	if xb, ok := x.(bool); ok {
		yb, ok := y.(bool)
		return ok && xb == yb
	}
	return numbersEqual(x, y, opt)
}

func normString(s string, opt store.CompareOptions) string {
	if opt.Trim {
		s = strings.TrimSpace(s)
	}
	if opt.FoldCase {
		s = strings.ToLower(strings.ToUpper(s))
	}
	return s
}

func numbersEqual(x, y any, opt store.CompareOptions) bool {
	xi, xInt := x.(int64)
	yi, yInt := y.(int64)
	if xInt && yInt {
		return xi == yi
	}
	xu, xUint := x.(uint64)
	yu, yUint := y.(uint64)
	if xUint && yUint {
		return xu == yu
	}
	xf, okx := toFloat(x)
	yf, oky := toFloat(y)
	if !okx || !oky {
		return false
	}
	if opt.Round {
		return roundString(xf, opt.Scale) == roundString(yf, opt.Scale)
	}
	return xf == yf || (math.IsNaN(xf) && math.IsNaN(yf))
}

// roundString renders f rounded to scale decimals; equal strings mean equal at
// that scale. Formatting rounds the exact binary value correctly, which repeated
// float multiplication would not.
func roundString(f float64, scale int) string {
	s := strconv.FormatFloat(f, 'f', scale, 64)
	if strings.Trim(s, "-0.") == "" {
		return "0" // -0.00 equals 0.00
	}
	return s
}

func toFloat(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case uint64:
		return float64(n), true
	case float64:
		return n, true
	}
	return 0, false
}

// overwriteUntracked returns the attributes of a version after a tracked-equal
// upsert: tracked attributes keep the stored values, untracked ones take the new.
func overwriteUntracked(t *store.Table, stored, incoming store.Attrs) store.Attrs {
	out := make(store.Attrs, len(incoming))
	for name, v := range incoming {
		if !t.Tracked(name) {
			out[name] = v
		}
	}
	for name, v := range stored {
		if t.Tracked(name) {
			out[name] = v
		}
	}
	return out
}
