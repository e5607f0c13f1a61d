package encoding

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
)

// Decimal is an exact decimal number, coef × 10^-scale, with a coefficient of at
// most MaxDecimalDigits digits and a scale of 0 to MaxDecimalDigits. It is the
// value type of a decimal(p, s) column: money and other quantities whose digits
// are facts (232.10 stays 232.10, with its scale, and sums are exact). The zero
// value is 0 at scale 0.
//
// Two Decimals are the same attribute value, and encode to the same bytes, only
// when both their coefficients and their scales are equal: 1.5 and 1.50 are
// different values (as a float and an integer are), and a declared column holds
// all its values at its own scale, so within one column equality is numeric. Cmp
// compares numerically across scales.
type Decimal struct {
	coef  int64
	scale uint8
}

// MaxDecimalDigits is the largest precision of a decimal column and the largest
// scale: every 18-digit coefficient fits an int64, so values are stored,
// compared and summed without allocating.
const MaxDecimalDigits = 18

// maxDecimalCoef is the largest coefficient magnitude: 18 nines.
const maxDecimalCoef = 999_999_999_999_999_999

// pow10 holds 10^0 ... 10^18.
var pow10 = func() (p [MaxDecimalDigits + 1]int64) {
	p[0] = 1
	for i := 1; i < len(p); i++ {
		p[i] = p[i-1] * 10
	}
	return p
}()

// NewDecimal returns coef × 10^-scale. It fails, wrapping ErrUnsupportedType,
// when scale is outside [0, MaxDecimalDigits] or coef has more than
// MaxDecimalDigits digits.
func NewDecimal(coef int64, scale int) (Decimal, error) {
	if scale < 0 || scale > MaxDecimalDigits {
		return Decimal{}, fmt.Errorf("%w: decimal scale %d outside 0-%d", ErrUnsupportedType, scale, MaxDecimalDigits)
	}
	if coef > maxDecimalCoef || coef < -maxDecimalCoef {
		return Decimal{}, fmt.Errorf("%w: decimal coefficient %d has more than %d digits", ErrUnsupportedType, coef, MaxDecimalDigits)
	}
	return Decimal{coef: coef, scale: uint8(scale)}, nil
}

// Coef returns the coefficient: the value times 10^Scale.
func (d Decimal) Coef() int64 { return d.coef }

// Scale returns the number of digits after the decimal point.
func (d Decimal) Scale() int { return int(d.scale) }

// Digits returns the number of digits of the coefficient, ignoring its sign (1
// for zero): the precision the value needs.
func (d Decimal) Digits() int {
	c := d.coef
	if c < 0 {
		c = -c
	}
	n := 1
	for n < len(pow10) && c >= pow10[n] {
		n++
	}
	return n
}

// String prints the value in plain decimal notation with exactly Scale digits
// after the point: 232.10, -0.05, 7.
func (d Decimal) String() string { return string(d.Append(nil)) }

// Append appends String's form of d to dst.
func (d Decimal) Append(dst []byte) []byte {
	c := d.coef
	if c < 0 {
		dst = append(dst, '-')
		c = -c
	}
	if d.scale == 0 {
		return strconv.AppendInt(dst, c, 10)
	}
	p := pow10[d.scale]
	dst = strconv.AppendInt(dst, c/p, 10)
	dst = append(dst, '.')
	frac := strconv.AppendInt(nil, c%p, 10)
	for i := len(frac); i < int(d.scale); i++ {
		dst = append(dst, '0')
	}
	return append(dst, frac...)
}

// Float64 returns the nearest float64 (for display and for callers that want a
// float; sums and comparisons of Decimals are exact without it).
func (d Decimal) Float64() float64 {
	f, _ := strconv.ParseFloat(d.String(), 64)
	return f
}

// Rescale returns d at the given scale when that is exact: a larger scale
// appends zeros (and fails only when the coefficient would exceed
// MaxDecimalDigits digits), a smaller one drops only zeros. ok is false when the
// value has no exact form at that scale.
func (d Decimal) Rescale(scale int) (Decimal, bool) {
	if scale < 0 || scale > MaxDecimalDigits {
		return Decimal{}, false
	}
	switch diff := scale - int(d.scale); {
	case diff == 0:
		return d, true
	case diff > 0:
		m := pow10[diff]
		if d.coef > maxDecimalCoef/m || d.coef < -maxDecimalCoef/m {
			return Decimal{}, false
		}
		return Decimal{coef: d.coef * m, scale: uint8(scale)}, true
	default:
		m := pow10[-diff]
		if d.coef%m != 0 {
			return Decimal{}, false
		}
		return Decimal{coef: d.coef / m, scale: uint8(scale)}, true
	}
}

// Cmp compares d and o as numbers, whatever their scales: -1, 0 or +1.
func (d Decimal) Cmp(o Decimal) int {
	if d.scale == o.scale {
		return cmpInt64(d.coef, o.coef)
	}
	// Bring both to the larger scale; the coefficients times a power of ten fit
	// 128 bits, so compare them there.
	a, b := big.NewInt(d.coef), big.NewInt(o.coef)
	if d.scale < o.scale {
		a.Mul(a, big.NewInt(pow10[o.scale-d.scale]))
	} else {
		b.Mul(b, big.NewInt(pow10[d.scale-o.scale]))
	}
	return a.Cmp(b)
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// ParseDecimal reads a number in plain decimal notation: an optional sign,
// digits, and optionally a point and more digits ("232.10", "-0.5", "+7",
// ".25"). The result keeps the scale written (232.10 has scale 2). Exponents,
// spaces, and more than MaxDecimalDigits significant digits are errors wrapping
// ErrUnsupportedType.
func ParseDecimal(s string) (Decimal, error) {
	bad := func(why string) (Decimal, error) {
		return Decimal{}, fmt.Errorf("%w: %q is not a decimal number: %s", ErrUnsupportedType, s, why)
	}
	body := s
	neg := false
	if body != "" && (body[0] == '-' || body[0] == '+') {
		neg = body[0] == '-'
		body = body[1:]
	}
	intPart, frac, hasPoint := strings.Cut(body, ".")
	if intPart == "" && frac == "" {
		return bad("no digits")
	}
	if hasPoint && frac == "" {
		return bad("no digits after the point")
	}
	if len(frac) > MaxDecimalDigits {
		return bad(fmt.Sprintf("more than %d digits after the point", MaxDecimalDigits))
	}
	var coef int64
	digits := 0
	for _, part := range []string{intPart, frac} {
		for i := 0; i < len(part); i++ {
			c := part[i]
			if c < '0' || c > '9' {
				return bad(fmt.Sprintf("unexpected %q", c))
			}
			if coef == 0 && c == '0' {
				continue // a leading zero adds no digit
			}
			digits++
			if digits > MaxDecimalDigits {
				return bad(fmt.Sprintf("more than %d significant digits", MaxDecimalDigits))
			}
			coef = coef*10 + int64(c-'0')
		}
	}
	if neg {
		coef = -coef
	}
	return Decimal{coef: coef, scale: uint8(len(frac))}, nil
}

// DecimalFromFloat returns f as a Decimal of the given scale when f's shortest
// decimal form (what strconv prints for it) has an exact form at that scale:
// 232.1 at scale 2 is 232.10, 0.125 at scale 2 fails. NaN and infinities fail.
func DecimalFromFloat(f float64, scale int) (Decimal, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return Decimal{}, false
	}
	d, err := ParseDecimal(strconv.FormatFloat(f, 'f', -1, 64))
	if err != nil {
		return Decimal{}, false
	}
	return d.Rescale(scale)
}

// decimalExt is the msgpack extension type of a Decimal (application types are
// 0-127; msgpack's own timestamp is -1).
const decimalExt = 0x01

// appendDecimal appends d as msgpack ext8 of type decimalExt: a payload of the
// scale byte followed by the coefficient as big-endian two's complement in the
// fewest bytes that hold it (1 to 8), so equal values have equal bytes.
func appendDecimal(dst []byte, d Decimal) []byte {
	n := coefBytes(d.coef)
	dst = append(dst, 0xc7, byte(1+n), decimalExt, d.scale)
	var w [8]byte
	binary.BigEndian.PutUint64(w[:], uint64(d.coef))
	return append(dst, w[8-n:]...)
}

// coefBytes returns the fewest bytes of two's complement that hold c.
func coefBytes(c int64) int {
	n := 1
	for n < 8 && (c < -(1<<(8*n-1)) || c >= 1<<(8*n-1)) {
		n++
	}
	return n
}

// parseDecimal reads what appendDecimal writes from b, which starts with the
// ext8 code; it refuses every other form, so a value has one encoding.
func parseDecimal(b []byte) (Decimal, []byte, error) {
	if len(b) < 3 {
		return Decimal{}, nil, fmt.Errorf("truncated extension")
	}
	n := int(b[1]) - 1
	if n < 1 || n > 8 || len(b) < 4+n {
		return Decimal{}, nil, fmt.Errorf("decimal of %d bytes", b[1])
	}
	scale, p := b[3], b[4:4+n]
	var w [8]byte
	fill := byte(0)
	if p[0]&0x80 != 0 {
		fill = 0xff
	}
	for i := 0; i < 8-n; i++ {
		w[i] = fill
	}
	copy(w[8-n:], p)
	coef := int64(binary.BigEndian.Uint64(w[:]))
	d, err := NewDecimal(coef, int(scale))
	if err != nil {
		return Decimal{}, nil, err
	}
	if coefBytes(coef) != n {
		return Decimal{}, nil, fmt.Errorf("decimal coefficient %d in %d bytes is not in its shortest form", coef, n)
	}
	return d, b[4+n:], nil
}

// Decimal returns the value of a KindDecimal Value.
func (v *Value) Decimal() Decimal { return Decimal{coef: v.Int, scale: v.Scale} }
