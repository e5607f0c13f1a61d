package query

import (
	"cmp"
	"math"
	"math/big"
	"math/bits"

	"github.com/bitempo/bitempo/encoding"
)

// This file holds the exact arithmetic of decimal aggregations (the rules are
// in the package doc): the running sum of a set's decimal values, the final
// SUM and AVG, and the numeric order of decimals among the other numbers.
// Adding or removing a value touches one 128-bit integer and a count, and
// allocates nothing; math/big is reached only when a result is out of range
// anyway or its terms cancel beyond 128 bits.

// maxDecCoef is the largest decimal coefficient: 18 nines.
const maxDecCoef = 999_999_999_999_999_999

// avgExtraScale is how many digits AVG of decimals adds to the largest input
// scale (at most encoding.MaxDecimalDigits in all).
const avgExtraScale = 4

var pow10 = func() (p [encoding.MaxDecimalDigits + 1]uint64) {
	p[0] = 1
	for i := 1; i < len(p); i++ {
		p[i] = p[i-1] * 10
	}
	return p
}()

// decSum is the exact sum of the decimal values in a set: per scale, the sum
// of their coefficients and how many there are. The result's scale is the
// largest one with a value in the set, so a sweep from which the only value of
// scale 4 has left answers as a point query over the rest does.
type decSum struct {
	sum   [encoding.MaxDecimalDigits + 1]int128
	count [encoding.MaxDecimalDigits + 1]int64
	n     int64  // decimal values in the set
	used  uint32 // bit k: count[k] > 0
}

// add adds coef × 10^-scale to the set (sign -1: removes it).
func (s *decSum) add(coef int64, scale uint8, sign int) {
	if sign > 0 {
		s.sum[scale].addInt(coef)
		s.count[scale]++
		s.n++
		s.used |= 1 << scale
		return
	}
	s.sum[scale].subInt(coef)
	s.n--
	if s.count[scale]--; s.count[scale] == 0 {
		s.used &^= 1 << scale
	}
}

// scale returns the largest scale of a value in the set.
func (s *decSum) scale() int { return max(bits.Len32(s.used)-1, 0) }

// total returns the set's sum plus ints (integers, at scale 0) as a
// coefficient at scale sc; ok is false when a term or the total leaves 128
// bits, and bigTotal must compute it. A scale with no value in the set has a
// zero sum.
func (s *decSum) total(ints int128, sc int) (int128, bool) {
	if s.used == 1<<sc && ints == (int128{}) { // one scale: the common case
		return s.sum[sc], true
	}
	t, ok := ints.mulPow10(sc)
	for used := s.used; ok && used != 0; used &= used - 1 {
		k := bits.TrailingZeros32(used)
		var term int128
		if term, ok = s.sum[k].mulPow10(sc - k); ok {
			t, ok = t.add(term)
		}
	}
	return t, ok
}

// bigTotal is total computed with math/big.
func (s *decSum) bigTotal(ints int128, sc int) *big.Int {
	t := new(big.Int).Mul(ints.bigInt(), bigPow10(sc))
	for k := 0; k <= sc; k++ {
		term := new(big.Int).Mul(s.sum[k].bigInt(), bigPow10(sc-k))
		t.Add(t, term)
	}
	return t
}

func bigPow10(k int) *big.Int { return new(big.Int).SetUint64(pow10[k]) }

// sumDecimal returns the sum of the set and ints as a Decimal at the set's
// largest scale; ok is false when it has more than 18 digits.
func (s *decSum) sumDecimal(ints int128) (encoding.Decimal, bool) {
	sc := s.scale()
	t, ok := s.total(ints, sc)
	if !ok {
		return bigDecimal(s.bigTotal(ints, sc), sc)
	}
	c, ok := t.decCoef()
	if !ok {
		return encoding.Decimal{}, false
	}
	return mustDecimal(c, sc), true
}

// avgDecimal returns (the sum of the set and ints) / n rounded half to even,
// at the largest scale from min(largest input scale + avgExtraScale, 18) down
// to the largest input scale at which it has at most 18 digits; ok is false
// when it has more even there (only integers beyond 18 digits can do that).
func (s *decSum) avgDecimal(ints int128, n int64) (encoding.Decimal, bool) {
	sc := s.scale()
	t, ok := s.total(ints, sc)
	if !ok {
		return bigAvg(s.bigTotal(ints, sc), sc, n)
	}
	return avgAt(t, sc, n)
}

// avgAt is avgDecimal of the coefficient sum t at scale sc.
func avgAt(t int128, sc int, n int64) (encoding.Decimal, bool) {
	for out := min(sc+avgExtraScale, encoding.MaxDecimalDigits); out >= sc; out-- {
		num, ok := t.mulPow10(out - sc)
		if !ok {
			continue
		}
		if c, ok := divRoundEven(num, n); ok {
			return mustDecimal(c, out), true
		}
	}
	return encoding.Decimal{}, false
}

// bigDecimal returns the coefficient t at scale sc as a Decimal, if it fits.
func bigDecimal(t *big.Int, sc int) (encoding.Decimal, bool) {
	if !t.IsInt64() || t.Int64() > maxDecCoef || t.Int64() < -maxDecCoef {
		return encoding.Decimal{}, false
	}
	return mustDecimal(t.Int64(), sc), true
}

// bigAvg is avgDecimal's division with math/big.
func bigAvg(t *big.Int, sc int, n int64) (encoding.Decimal, bool) {
	for out := min(sc+avgExtraScale, encoding.MaxDecimalDigits); out >= sc; out-- {
		q := new(big.Rat).SetFrac(new(big.Int).Mul(t, bigPow10(out-sc)), big.NewInt(n))
		if d, ok := bigDecimal(roundHalfEven(q), out); ok {
			return d, true
		}
	}
	return encoding.Decimal{}, false
}

// roundHalfEven rounds q to the nearest integer, ties to even.
func roundHalfEven(q *big.Rat) *big.Int {
	num, den := q.Num(), q.Denom()
	z, r := new(big.Int).QuoRem(num, den, new(big.Int)) // truncated toward zero
	twice := new(big.Int).Abs(r)
	twice.Lsh(twice, 1)
	if c := twice.Cmp(den); c > 0 || (c == 0 && z.Bit(0) == 1) {
		if num.Sign() < 0 {
			z.Sub(z, big.NewInt(1))
		} else {
			z.Add(z, big.NewInt(1))
		}
	}
	return z
}

// divRoundEven returns x / n (n > 0) rounded half to even; ok is false when
// the quotient has more than 18 digits.
func divRoundEven(x int128, n int64) (int64, bool) {
	hi, lo, neg := x.mag()
	d := uint64(n)
	if hi/d != 0 {
		return 0, false
	}
	q, r := bits.Div64(hi%d, lo, d)
	if q > maxDecCoef { // and q+1 may wrap
		return 0, false
	}
	if r > d-r || (r == d-r && q&1 == 1) {
		q++
	}
	if q > maxDecCoef {
		return 0, false
	}
	if neg {
		return -int64(q), true
	}
	return int64(q), true
}

func mustDecimal(coef int64, scale int) encoding.Decimal {
	d, err := encoding.NewDecimal(coef, scale)
	if err != nil {
		panic(err) // callers checked coef and scale
	}
	return d
}

func int128Of(v int64) int128 { return int128{hi: v >> 63, lo: uint64(v)} }

// mag returns the magnitude of x and its sign.
func (x int128) mag() (hi, lo uint64, neg bool) {
	if x.hi >= 0 {
		return uint64(x.hi), x.lo, false
	}
	lo, b := bits.Sub64(0, x.lo, 0)
	hi, _ = bits.Sub64(0, uint64(x.hi), b)
	return hi, lo, true
}

// fromMag returns the int128 of magnitude hi:lo (below 2^127) and sign neg.
func fromMag(hi, lo uint64, neg bool) int128 {
	if neg {
		var b uint64
		lo, b = bits.Sub64(0, lo, 0)
		hi, _ = bits.Sub64(0, hi, b)
	}
	return int128{hi: int64(hi), lo: lo}
}

// mulPow10 returns x × 10^k; ok is false when that leaves 128 bits.
func (x int128) mulPow10(k int) (int128, bool) {
	if k == 0 {
		return x, true
	}
	hi, lo, neg := x.mag()
	m := pow10[k]
	h1, l1 := bits.Mul64(lo, m)
	h2, l2 := bits.Mul64(hi, m)
	nh, c := bits.Add64(h1, l2, 0)
	if h2 != 0 || c != 0 || nh >= 1<<63 {
		return int128{}, false
	}
	return fromMag(nh, l1, neg), true
}

// add returns x + y; ok is false when that leaves 128 bits.
func (x int128) add(y int128) (int128, bool) {
	lo, c := bits.Add64(x.lo, y.lo, 0)
	hi := x.hi + y.hi + int64(c)
	if (x.hi >= 0) == (y.hi >= 0) && (hi >= 0) != (x.hi >= 0) {
		return int128{}, false
	}
	return int128{hi: hi, lo: lo}, true
}

func (x int128) cmp(y int128) int {
	if c := cmp.Compare(x.hi, y.hi); c != 0 {
		return c
	}
	return cmp.Compare(x.lo, y.lo)
}

// decCoef returns x as a decimal coefficient, if it has at most 18 digits.
func (x int128) decCoef() (int64, bool) {
	if x.hi != int64(x.lo)>>63 {
		return 0, false
	}
	c := int64(x.lo)
	if c > maxDecCoef || c < -maxDecCoef {
		return 0, false
	}
	return c, true
}

// cmpScaled compares a × 10^-as with b × 10^-bs exactly, for any int64
// coefficients (an int64 value is a coefficient at scale 0).
func cmpScaled(a int64, as uint8, b int64, bs uint8) int {
	if as == bs {
		return cmp.Compare(a, b)
	}
	// An int64 times at most 10^18 fits 128 bits.
	x, y := int128Of(a), int128Of(b)
	if as < bs {
		x, _ = x.mulPow10(int(bs - as))
	} else {
		y, _ = y.mulPow10(int(as - bs))
	}
	return x.cmp(y)
}

// compareDecimalFloat compares d with f exactly; NaN is above every number.
func compareDecimalFloat(d encoding.Decimal, f float64) int {
	switch {
	case math.IsNaN(f), math.IsInf(f, 1):
		return -1
	case math.IsInf(f, -1):
		return 1
	}
	x := new(big.Rat).SetFrac(big.NewInt(d.Coef()), bigPow10(d.Scale()))
	return x.Cmp(new(big.Rat).SetFloat64(f))
}

// decimalKey is COUNT_DISTINCT's key of d: that of the int64 or float64 of
// the same value when one exists, so numbers equal by value count once.
func decimalKey(d encoding.Decimal) distinctKey {
	c, s := d.Coef(), d.Scale()
	for s > 0 && c%10 == 0 {
		c, s = c/10, s-1
	}
	if s == 0 {
		return distinctKey{kind: dkInt, n: uint64(c)}
	}
	// c × 10^-s = (c / 5^s) × 2^-s: a float64 holds it exactly when 5^s
	// divides c and the quotient has at most 53 bits.
	p5 := int64(1)
	for range s {
		p5 *= 5
	}
	if q := c / p5; c%p5 == 0 && q == int64(float64(q)) {
		return keyOf(math.Ldexp(float64(q), -s))
	}
	return distinctKey{kind: dkDecimal, n: uint64(c), s: string(rune('0' + s))}
}
