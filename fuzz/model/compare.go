package model

import (
	"bytes"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/bitempo/bitempo/encoding"
)

// checkAttrs returns a copy of attrs after checking every value's type and that
// no name repeats a key column.
func checkAttrs(def *Table, attrs Attrs) (Attrs, error) {
	out := make(Attrs, len(attrs))
	for name, v := range attrs {
		for _, col := range def.Key {
			if col == name {
				return nil, fmt.Errorf("%w: %q repeats a key column", ErrInvalidAttr, name)
			}
		}
		switch x := v.(type) {
		case nil, bool, int64, float64, string:
		case uint64:
			if x <= math.MaxInt64 {
				return nil, fmt.Errorf("%w: %q: uint64 %d fits int64 (not canonical)", ErrInvalidAttr, name, x)
			}
		case []byte:
			v = bytes.Clone(x)
		case encoding.Decimal:
		case time.Time:
			v = time.UnixMicro(x.UnixMicro()).UTC() // stored in UTC to the microsecond
		default:
			return nil, fmt.Errorf("%w: %q: type %T", ErrInvalidAttr, name, v)
		}
		out[name] = v
	}
	return out, nil
}

// Identical reports whether two attribute records would be stored as the same
// bytes: the same names, each with a value of the same type and the same value
// (floats bit for bit; an empty and a nil []byte are the same).
func Identical(a, b Attrs) bool {
	if len(a) != len(b) {
		return false
	}
	for name, x := range a {
		y, ok := b[name]
		if !ok || !identicalValue(x, y) {
			return false
		}
	}
	return true
}

func identicalValue(x, y any) bool {
	switch x := x.(type) {
	case nil:
		return y == nil
	case float64:
		yf, ok := y.(float64)
		return ok && math.Float64bits(x) == math.Float64bits(yf)
	case []byte:
		yb, ok := y.([]byte)
		return ok && bytes.Equal(x, yb)
	case bool, int64, uint64, string:
		return x == y
	case encoding.Decimal: // the same coefficient and scale: 1.5 and 1.50 are stored apart
		yd, ok := y.(encoding.Decimal)
		return ok && x == yd
	case time.Time:
		yt, ok := y.(time.Time)
		return ok && x.UnixMicro() == yt.UnixMicro()
	}
	return false
}

// TrackedEqual reports whether a and b agree on every tracked attribute of the
// table, an absent attribute counting as null.
func (t *Table) TrackedEqual(a, b Attrs) bool {
	for _, name := range unionNames(a, b) {
		if t.Tracked(name) && !ValuesEqual(a[name], b[name], t.Compare[name]) {
			return false
		}
	}
	return true
}

func unionNames(a, b Attrs) []string {
	var names []string
	for n := range a {
		names = append(names, n)
	}
	for n := range b {
		if _, ok := a[n]; !ok {
			names = append(names, n)
		}
	}
	return names
}

// ValuesEqual is change detection's equality of two attribute values under opt
// (rule 5 of the package doc).
func ValuesEqual(x, y any, opt Options) bool {
	if x == nil || y == nil {
		return x == nil && y == nil
	}
	switch x := x.(type) {
	case bool:
		yb, ok := y.(bool)
		return ok && x == yb
	case string:
		ys, ok := y.(string)
		return ok && stringsEqual(x, ys, opt)
	case []byte:
		yb, ok := y.([]byte)
		return ok && bytes.Equal(x, yb)
	case time.Time: // an instant, whatever the options; never equal to a number
		yt, ok := y.(time.Time)
		return ok && x.Equal(yt)
	}
	xn, okx := number(x)
	yn, oky := number(y)
	return okx && oky && numbersEqual(xn, yn, opt)
}

func stringsEqual(x, y string, opt Options) bool {
	if opt.Trim {
		x, y = strings.TrimSpace(x), strings.TrimSpace(y)
	}
	if opt.FoldCase {
		return strings.EqualFold(x, y)
	}
	return x == y
}

// num is a number as an exact rational, or a non-finite float. A finite float is
// the decimal its shortest representation reads (1.005, not the binary
// 1.00499999999999989...), which is how PostgreSQL and Spark turn a float into a
// NUMERIC before rounding it; distinct floats stay distinct.
type num struct {
	finite  bool
	rat     *big.Rat
	special float64 // NaN or ±Inf when !finite
}

func number(v any) (num, bool) {
	switch x := v.(type) {
	case int64:
		return num{finite: true, rat: new(big.Rat).SetInt64(x)}, true
	case uint64:
		return num{finite: true, rat: new(big.Rat).SetUint64(x)}, true
	case encoding.Decimal: // its exact value, whatever its scale
		den := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(x.Scale())), nil)
		return num{finite: true, rat: new(big.Rat).SetFrac(big.NewInt(x.Coef()), den)}, true
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return num{special: x}, true
		}
		r, ok := new(big.Rat).SetString(strconv.FormatFloat(x, 'g', -1, 64))
		return num{finite: true, rat: r}, ok
	}
	return num{}, false
}

func numbersEqual(x, y num, opt Options) bool {
	if !x.finite || !y.finite {
		if x.finite || y.finite {
			return false
		}
		return (math.IsNaN(x.special) && math.IsNaN(y.special)) || x.special == y.special
	}
	a, b := x.rat, y.rat
	if opt.Round {
		a, b = roundHalfAway(a, opt.Scale), roundHalfAway(b, opt.Scale)
	}
	return a.Cmp(b) == 0
}

// roundHalfAway rounds r to scale decimal places, ties away from zero.
func roundHalfAway(r *big.Rat, scale int) *big.Rat {
	pow := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil)
	scaled := new(big.Rat).Mul(r, new(big.Rat).SetInt(pow))
	abs := new(big.Rat).Abs(scaled)
	// floor(|scaled| + 1/2) = round half away from zero of |scaled|.
	abs.Add(abs, big.NewRat(1, 2))
	q := new(big.Int).Quo(abs.Num(), abs.Denom())
	if scaled.Sign() < 0 {
		q.Neg(q)
	}
	return new(big.Rat).SetFrac(q, pow)
}
