package query

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/bitempo/bitempo/internal/testutil"
)

// testDecimal parses a decimal of a test (testutil.Decimal).
var testDecimal = testutil.Decimal

// TestDecimalOrderAndDistinct checks compareValues and COUNT_DISTINCT's keys
// of decimals against the other numbers: numeric order, exact against floats,
// and equal numbers sharing a key only when they are exactly equal.
func TestDecimalOrderAndDistinct(t *testing.T) {
	for _, c := range []struct {
		a, b any
		cmp  int
		same bool // one COUNT_DISTINCT key
	}{
		{testDecimal(t, "1.5"), testDecimal(t, "1.50"), -1, true},
		{testDecimal(t, "1.5"), 1.5, -1, true},
		{testDecimal(t, "0.1"), 0.1, -1, false}, // the float is 0.1000000000000000055...
		{testDecimal(t, "0.2"), 0.1, 1, false},
		{testDecimal(t, "7.000"), int64(7), 1, true},
		{int64(7), testDecimal(t, "7.001"), -1, false},
		{testDecimal(t, "-999999999999999999"), int64(math.MinInt64), 1, false},
		{testDecimal(t, "999999999999999999"), uint64(1 << 63), -1, false},
		{testDecimal(t, "0.000000000000000001"), testDecimal(t, "0"), 1, false},
		{testDecimal(t, "-0.5"), math.Inf(-1), 1, false},
		{testDecimal(t, "5"), math.NaN(), -1, false},
		{testDecimal(t, "0.375"), 0.375, -1, true},
	} {
		got := compareValues(c.a, c.b)
		if c.cmp != 0 && got != c.cmp {
			t.Errorf("compareValues(%v, %v) = %d, want %d", c.a, c.b, got, c.cmp)
		}
		if back := compareValues(c.b, c.a); back != -got {
			t.Errorf("compareValues(%v, %v) = %d, but the reverse %d", c.a, c.b, got, back)
		}
		if same := keyOf(c.a) == keyOf(c.b); same != c.same {
			t.Errorf("keyOf(%v) == keyOf(%v): %v, want %v", c.a, c.b, same, c.same)
		}
	}
}

// TestDecimalArithmetic checks the 128-bit helpers against math/big on random
// and edge operands: scaling by powers of ten (with overflow), sums at a
// common scale, and division rounded half to even.
func TestDecimalArithmetic(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	edges := []int64{0, 1, -1, maxDecCoef, -maxDecCoef, math.MaxInt64, math.MinInt64, 5, -5, 15, -15}
	draw := func() int64 {
		if rng.IntN(3) == 0 {
			return edges[rng.IntN(len(edges))]
		}
		return rng.Int64() >> rng.IntN(64)
	}
	lim := new(big.Int).Lsh(big.NewInt(1), 127)
	for range 20000 {
		var x int128
		for range 1 + rng.IntN(4) {
			x.addInt(draw())
		}
		if rng.IntN(2) == 0 {
			x.hi = rng.Int64() >> rng.IntN(64)
		}
		k := rng.IntN(19)
		want := new(big.Int).Mul(x.bigInt(), bigPow10(k))
		got, ok := x.mulPow10(k)
		fits := want.CmpAbs(lim) < 0
		if ok != fits || (ok && got.bigInt().Cmp(want) != 0) {
			t.Fatalf("%v × 10^%d = %v %v, want %v", x.bigInt(), k, got.bigInt(), ok, want)
		}
		n := 1 + rng.Int64N(1000)
		if rng.IntN(2) == 0 {
			n = 2
		}
		q, ok := divRoundEven(x, n)
		wantQ := roundHalfEven(new(big.Rat).SetFrac(x.bigInt(), big.NewInt(n)))
		wantOK := wantQ.IsInt64() && wantQ.Int64() <= maxDecCoef && wantQ.Int64() >= -maxDecCoef
		if ok != wantOK || (ok && q != wantQ.Int64()) {
			t.Fatalf("%v / %d = %d %v, want %v", x.bigInt(), n, q, ok, wantQ)
		}
		a, b := int128Of(draw()), int128Of(draw())
		a.hi, b.hi = rng.Int64()>>rng.IntN(64), rng.Int64()>>rng.IntN(64)
		sum, ok := a.add(b)
		wantSum := new(big.Int).Add(a.bigInt(), b.bigInt())
		inRange := wantSum.Cmp(lim) < 0 && wantSum.Cmp(new(big.Int).Neg(lim)) >= 0
		if ok != inRange || (ok && sum.bigInt().Cmp(wantSum) != 0) {
			t.Fatalf("%v + %v = %v %v, want %v", a.bigInt(), b.bigInt(), sum.bigInt(), ok, wantSum)
		}
		c1, c2 := draw(), draw()
		s1, s2 := uint8(rng.IntN(19)), uint8(rng.IntN(19))
		r1 := new(big.Rat).SetFrac(big.NewInt(c1), bigPow10(int(s1)))
		r2 := new(big.Rat).SetFrac(big.NewInt(c2), bigPow10(int(s2)))
		if got, want := cmpScaled(c1, s1, c2, s2), r1.Cmp(r2); got != want {
			t.Fatalf("cmpScaled(%d e-%d, %d e-%d) = %d, want %d", c1, s1, c2, s2, got, want)
		}
	}
}
