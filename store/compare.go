package store

import (
	"bytes"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/bitempo/bitempo/encoding"
)

// trackedEqual reports whether a and b agree on every tracked attribute of t,
// under the table's comparison options. An absent attribute equals null.
func TrackedEqual(t *Table, a, b Attrs) bool {
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
// and case-folded; times as instants, equal only to times (never to a number of
// microseconds or a text that would name the same instant: a column that changes
// type changes). The string and number options do not apply to times.
func valuesEqual(x, y any, opt CompareOptions) bool {
	if x == nil || y == nil {
		return x == nil && y == nil
	}
	if xt, ok := x.(time.Time); ok {
		yt, ok := y.(time.Time)
		return ok && xt.Equal(yt)
	}
	if xs, ok := x.(string); ok {
		ys, ok := y.(string)
		return ok && stringsEqual(xs, ys, opt)
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

func normString(s string, opt CompareOptions) string {
	if opt.Trim {
		s = strings.TrimSpace(s)
	}
	return s
}

func stringsEqual(x, y string, opt CompareOptions) bool {
	x, y = normString(x, opt), normString(y, opt)
	if opt.FoldCase {
		return strings.EqualFold(x, y) // Unicode simple folding, as CompareOptions says
	}
	return x == y
}

// numbersEqual compares two numbers by exact value: integers and decimals as they are, a
// float as the decimal its shortest representation reads (as PostgreSQL and
// Spark convert a float to NUMERIC). With opt.Round both are rounded to
// opt.Scale decimals, half away from zero (SQL ROUND), first.
func numbersEqual(x, y any, opt CompareOptions) bool {
	if !opt.Round { // fast paths for same-typed values, the common case on ingest
		switch xv := x.(type) {
		case int64:
			if yv, ok := y.(int64); ok {
				return xv == yv
			}
		case float64:
			if yv, ok := y.(float64); ok {
				return xv == yv || (math.IsNaN(xv) && math.IsNaN(yv))
			}
		case encoding.Decimal:
			if yv, ok := y.(encoding.Decimal); ok {
				return xv.Cmp(yv) == 0
			}
		}
	}
	xr, xok := exact(x)
	yr, yok := exact(y)
	if xr == nil || yr == nil { // NaN or ±Inf: equal only to the same
		xf, _ := x.(float64)
		yf, _ := y.(float64)
		return xok && yok && xr == nil && yr == nil && (xf == yf || (math.IsNaN(xf) && math.IsNaN(yf)))
	}
	if !xok || !yok {
		return false
	}
	if opt.Round {
		xr, yr = roundHalfAway(xr, opt.Scale), roundHalfAway(yr, opt.Scale)
	}
	return xr.Cmp(yr) == 0
}

// exact returns a number as a rational (nil for NaN and ±Inf) and whether v is a
// number at all.
func exact(v any) (*big.Rat, bool) {
	switch n := v.(type) {
	case int64:
		return new(big.Rat).SetInt64(n), true
	case uint64:
		return new(big.Rat).SetUint64(n), true
	case encoding.Decimal:
		return new(big.Rat).SetFrac(big.NewInt(n.Coef()), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n.Scale())), nil)), true
	case float64:
		if math.IsNaN(n) || math.IsInf(n, 0) {
			return nil, true
		}
		r, _ := new(big.Rat).SetString(strconv.FormatFloat(n, 'g', -1, 64))
		return r, true
	}
	return nil, false
}

func roundHalfAway(r *big.Rat, scale int) *big.Rat {
	pow := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil)
	v := new(big.Rat).Mul(r, new(big.Rat).SetInt(pow))
	neg := v.Sign() < 0
	v.Abs(v).Add(v, big.NewRat(1, 2))
	q := new(big.Int).Quo(v.Num(), v.Denom())
	if neg {
		q.Neg(q)
	}
	return new(big.Rat).SetFrac(q, pow)
}

// overwriteUntracked returns the attributes of a version after a tracked-equal
// upsert: tracked attributes keep the stored values, untracked ones take the new.
func OverwriteUntracked(t *Table, stored, incoming Attrs) Attrs {
	out := make(Attrs, len(incoming))
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
