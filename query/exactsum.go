package query

import (
	"math"
	"math/big"
	"math/bits"
)

// This file holds the exact accumulators behind SUM and AVG. A backfill adds a
// version's value when the sweep reaches its start and subtracts it at its end;
// with float64 arithmetic that is not exact (1e20 + 0.1 - 1e20 is 0), and the
// result would depend on the order of the adds. So integers are summed in 128 bits
// and floats in a fixed-point accumulator wide enough to hold any sum of float64
// values exactly; the total is rounded once, to nearest even, when it is read.
// A point query and a sweep therefore agree bit for bit.

// int128 is a two's complement 128-bit integer.
type int128 struct {
	hi int64
	lo uint64
}

func (x *int128) addInt(v int64) {
	lo, c := bits.Add64(x.lo, uint64(v), 0)
	x.lo, x.hi = lo, x.hi+v>>63+int64(c)
}

func (x *int128) subInt(v int64) {
	lo, b := bits.Sub64(x.lo, uint64(v), 0)
	x.lo, x.hi = lo, x.hi-v>>63-int64(b)
}

func (x *int128) addUint(u uint64) {
	lo, c := bits.Add64(x.lo, u, 0)
	x.lo, x.hi = lo, x.hi+int64(c)
}

func (x *int128) subUint(u uint64) {
	lo, b := bits.Sub64(x.lo, u, 0)
	x.lo, x.hi = lo, x.hi-int64(b)
}

// addIntSign adds v (sign -1: subtracts it).
func (x *int128) addIntSign(v int64, sign int) {
	if sign > 0 {
		x.addInt(v)
	} else {
		x.subInt(v)
	}
}

// addUintSign adds u (sign -1: subtracts it).
func (x *int128) addUintSign(u uint64, sign int) {
	if sign > 0 {
		x.addUint(u)
	} else {
		x.subUint(u)
	}
}

// value returns x as an attribute value: an int64, or a uint64 above
// math.MaxInt64; ok false if it fits neither.
func (x int128) value() (any, bool) {
	v, ok := x.result()
	return v.any(), ok
}

// result is value unboxed (a result a backfill holds without allocating).
func (x int128) result() (val, bool) {
	switch {
	case x.hi == int64(x.lo)>>63:
		return intVal(int64(x.lo)), true
	case x.hi == 0:
		return val{kind: valUint, n: x.lo}, true
	}
	return val{}, false
}

func (x int128) bigInt() *big.Int {
	z := big.NewInt(x.hi)
	z.Lsh(z, 64)
	return z.Add(z, new(big.Int).SetUint64(x.lo))
}

// float64 rounds x to the nearest float64.
func (x int128) float64() float64 {
	if v, ok := x.result(); ok {
		if v.kind == valInt {
			return float64(int64(v.n))
		}
		return float64(v.n)
	}
	f, _ := new(big.Float).SetInt(x.bigInt()).Float64()
	return f
}

// Layout of exactSum: limb i holds a signed count of 2^(32i - exactBias). The
// smallest float64 (2^-1074) is bit 0; the largest finite one ends below bit 2098;
// the limbs above leave room for 2^60 such values.
const (
	limbBits    = 32
	exactLimbs  = 68
	exactBias   = 1074
	normalEvery = 1 << 30 // adds a limb can take (each < 2^32) before it nears 2^63
)

// exactSum is an exact sum of float64 and integer values, with counts of the
// infinities and NaNs that no finite sum can hold.
type exactSum struct {
	limb                [exactLimbs]int64
	pending             int32
	posInf, negInf, nan int64
}

// addFloat adds f (sign -1: subtracts it).
func (s *exactSum) addFloat(f float64, sign int) {
	switch {
	case f == 0:
		return
	case math.IsNaN(f):
		s.nan += int64(sign)
		return
	case math.IsInf(f, 1):
		s.posInf += int64(sign)
		return
	case math.IsInf(f, -1):
		s.negInf += int64(sign)
		return
	}
	b := math.Float64bits(f)
	exp := int(b >> 52 & 0x7ff)
	mant := b & (1<<52 - 1)
	if exp == 0 {
		exp = 1 // subnormal
	} else {
		mant |= 1 << 52
	}
	// f = ±mant · 2^(exp-1075) = ±mant · 2^((exp-1) - exactBias)
	s.addMag(mant, exp-1, (b>>63 == 1) != (sign < 0))
}

// addInt adds v (sign -1: subtracts it).
func (s *exactSum) addInt(v int64, sign int) {
	if v < 0 {
		s.addMag(uint64(-(v+1))+1, exactBias, sign > 0)
	} else {
		s.addMag(uint64(v), exactBias, sign < 0)
	}
}

// addUint adds u (sign -1: subtracts it).
func (s *exactSum) addUint(u uint64, sign int) { s.addMag(u, exactBias, sign < 0) }

// addInt128 adds x = x.hi · 2^64 + x.lo.
func (s *exactSum) addInt128(x int128) {
	s.addMag(x.lo, exactBias, false)
	if x.hi < 0 {
		s.addMag(uint64(-(x.hi+1))+1, exactBias+64, true)
	} else {
		s.addMag(uint64(x.hi), exactBias+64, false)
	}
}

// addMag adds x · 2^(shift - exactBias), negated when neg.
func (s *exactSum) addMag(x uint64, shift int, neg bool) {
	i, off := shift/limbBits, uint(shift%limbBits)
	lo := x << off
	var hi uint64
	if off > 0 {
		hi = x >> (64 - off)
	}
	p0, p1, p2 := int64(lo&(1<<limbBits-1)), int64(lo>>limbBits), int64(hi)
	if neg {
		p0, p1, p2 = -p0, -p1, -p2
	}
	s.limb[i] += p0
	s.limb[i+1] += p1
	s.limb[i+2] += p2
	if s.pending++; s.pending >= normalEvery {
		s.normalize()
	}
}

// normalize carries every limb but the top one into [0, 2^32), keeping the value.
func (s *exactSum) normalize() {
	normalizeLimbs(&s.limb)
	s.pending = 0
}

func normalizeLimbs(l *[exactLimbs]int64) {
	for i := 0; i < exactLimbs-1; i++ {
		c := l[i] >> limbBits
		l[i] -= c << limbBits
		l[i+1] += c
	}
}

// float64 returns the sum rounded to the nearest float64 (ties to even). Sums of
// both infinities, or with a NaN, are NaN.
func (s *exactSum) float64() float64 {
	switch {
	case s.nan > 0 || (s.posInf > 0 && s.negInf > 0):
		return math.NaN()
	case s.posInf > 0:
		return math.Inf(1)
	case s.negInf > 0:
		return math.Inf(-1)
	}
	s.normalize()
	l := s.limb
	neg := l[exactLimbs-1] < 0
	if neg {
		for i := range l {
			l[i] = -l[i]
		}
		normalizeLimbs(&l)
	}
	h := exactLimbs - 1
	for h >= 0 && l[h] == 0 {
		h--
	}
	if h < 0 {
		return 0
	}
	if l[h] >= 1<<limbBits { // only the top limb can be that large: beyond 2^1100
		return signed(math.Inf(1), neg)
	}
	if h < 2 {
		return slowFloat(&l, h, neg)
	}
	// Take the 64 bits below the leading one, and fold the rest into a sticky bit
	// so that converting them to float64 rounds exactly as the full value would.
	w := uint64(l[h])
	lz := uint(bits.LeadingZeros64(w) - limbBits)
	m := w<<limbBits | uint64(l[h-1])
	next := uint64(l[h-2])
	if lz > 0 {
		m = m<<lz | next>>(limbBits-lz)
		next &= 1<<(limbBits-lz) - 1
	}
	sticky := next != 0
	for i := h - 3; i >= 0 && !sticky; i-- {
		sticky = l[i] != 0
	}
	if sticky {
		m |= 1
	}
	e := limbBits*(h-2) - exactBias + limbBits - int(lz)
	if e+63 < -1022 { // subnormal result: Ldexp would round a second time
		return slowFloat(&l, h, neg)
	}
	return signed(math.Ldexp(float64(m), e), neg)
}

// slowFloat rounds the normalized magnitude l[0..h] with math/big.
func slowFloat(l *[exactLimbs]int64, h int, neg bool) float64 {
	z := new(big.Int)
	for i := h; i >= 0; i-- {
		z.Lsh(z, limbBits)
		z.Or(z, big.NewInt(l[i]))
	}
	f := new(big.Float).SetInt(z)
	f.SetMantExp(f, -exactBias)
	v, _ := f.Float64()
	return signed(v, neg)
}

func signed(f float64, neg bool) float64 {
	if neg {
		return -f
	}
	return f
}
