package query

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
	"unsafe"
)

// aggRandomFloat draws float64 values across the whole range: tiny and subnormal
// ones, huge ones, and everyday ones that cancel.
func aggRandomFloat(rng *rand.Rand) float64 {
	switch rng.IntN(6) {
	case 0:
		return math.Float64frombits(rng.Uint64() &^ (0x7ff << 52)) // subnormal or zero
	case 1:
		f := math.Float64frombits(rng.Uint64())
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return 1
		}
		return f
	case 2:
		return math.Ldexp(rng.Float64()-0.5, rng.IntN(2100)-1075)
	case 3:
		return float64(rng.IntN(1000)) / 8
	case 4:
		return (rng.Float64() - 0.5) * 1e20
	}
	return rng.NormFloat64()
}

// TestExactSum adds and removes random floats and integers and checks the
// rounded sum against math/big after every step.
func TestExactSum(t *testing.T) {
	seed := rand.Uint64()
	rng := rand.New(rand.NewPCG(seed, 1))
	for round := range 200 {
		var s exactSum
		exact := new(big.Rat)
		type item struct {
			f     float64
			i     int64
			isInt bool
		}
		var live []item
		for step := range 60 {
			if len(live) > 0 && rng.IntN(3) == 0 {
				k := rng.IntN(len(live))
				it := live[k]
				live = append(live[:k], live[k+1:]...)
				if it.isInt {
					s.addInt(it.i, -1)
					exact.Sub(exact, new(big.Rat).SetInt64(it.i))
				} else {
					s.addFloat(it.f, -1)
					exact.Sub(exact, new(big.Rat).SetFloat64(it.f))
				}
			} else if rng.IntN(4) == 0 {
				i := int64(rng.Uint64())
				if rng.IntN(8) == 0 {
					i = math.MinInt64
				}
				live = append(live, item{i: i, isInt: true})
				s.addInt(i, 1)
				exact.Add(exact, new(big.Rat).SetInt64(i))
			} else {
				f := aggRandomFloat(rng)
				live = append(live, item{f: f})
				s.addFloat(f, 1)
				exact.Add(exact, new(big.Rat).SetFloat64(f))
			}
			want, _ := exact.Float64()
			if got := s.float64(); got != want && !(got == 0 && want == 0) {
				t.Fatalf("seed %d round %d step %d: sum %v (%b), want %v (%b)", seed, round, step, got, got, want, want)
			}
		}
	}
}

func TestExactSumSpecials(t *testing.T) {
	var s exactSum
	s.addFloat(1e20, 1)
	s.addFloat(0.1, 1)
	s.addFloat(1e20, -1)
	if got := s.float64(); got != 0.1 {
		t.Errorf("1e20 + 0.1 - 1e20 = %v, want 0.1", got)
	}
	s.addFloat(math.Inf(1), 1)
	if got := s.float64(); !math.IsInf(got, 1) {
		t.Errorf("with +Inf: %v", got)
	}
	s.addFloat(math.Inf(-1), 1)
	if got := s.float64(); !math.IsNaN(got) {
		t.Errorf("with both infinities: %v", got)
	}
	s.addFloat(math.Inf(-1), -1)
	s.addFloat(math.Inf(1), -1)
	s.addFloat(math.NaN(), 1)
	if got := s.float64(); !math.IsNaN(got) {
		t.Errorf("with NaN: %v", got)
	}
	s.addFloat(math.NaN(), -1)
	if got := s.float64(); got != 0.1 {
		t.Errorf("after removing the specials: %v", got)
	}
	var big2 exactSum
	big2.addFloat(math.MaxFloat64, 1)
	big2.addFloat(math.MaxFloat64, 1)
	if got := big2.float64(); !math.IsInf(got, 1) {
		t.Errorf("2 * MaxFloat64 = %v, want +Inf", got)
	}
	big2.addFloat(math.MaxFloat64, -1)
	if got := big2.float64(); got != math.MaxFloat64 {
		t.Errorf("back to MaxFloat64: %v", got)
	}
	var sub exactSum
	sub.addFloat(5e-324, 1)
	sub.addFloat(5e-324, 1)
	if got := sub.float64(); got != 1e-323 {
		t.Errorf("subnormal sum %v", got)
	}
	var x int128
	x.addInt(math.MaxInt64)
	x.addInt(math.MaxInt64)
	x.addInt(2)
	if _, ok := x.value(); ok {
		t.Errorf("2^64 fits: %+v", x)
	}
	var e exactSum
	e.addInt128(x)
	if got := e.float64(); got != 0x1p64 {
		t.Errorf("int128 2^64 as float: %v", got)
	}
	x.subInt(math.MaxInt64)
	x.subUint(math.MaxUint64 - math.MaxInt64)
	if v, ok := x.value(); !ok || v != int64(2-1) {
		t.Errorf("after subtracting: %v %v", v, ok)
	}
	var neg int128
	neg.addInt(math.MinInt64)
	neg.addInt(math.MinInt64)
	if _, ok := neg.value(); ok || neg.float64() != -0x1p64 {
		t.Errorf("-2^64: %+v %v", neg, neg.float64())
	}
	var ns exactSum
	ns.addInt128(neg)
	if got := ns.float64(); got != -0x1p64 {
		t.Errorf("int128 -2^64 as float: %v", got)
	}
}

// aggRandomValue draws attribute values of every kind, with many equal numbers of
// different types.
func aggRandomValue(rng *rand.Rand) any {
	switch rng.IntN(9) {
	case 0:
		return rng.IntN(2) == 0
	case 1:
		return int64(rng.IntN(5) - 2)
	case 2:
		return float64(rng.IntN(5)-2) / 2
	case 3:
		return []float64{math.NaN(), math.Inf(1), math.Inf(-1), math.Copysign(0, -1), 0x1p63, -0x1p63, 0x1p64}[rng.IntN(7)]
	case 4:
		return []int64{math.MaxInt64, math.MinInt64, math.MaxInt64 - 1}[rng.IntN(3)]
	case 5:
		return []uint64{1 << 63, math.MaxUint64, 1<<63 + 1}[rng.IntN(3)]
	case 6:
		return []string{"", "a", "b"}[rng.IntN(3)]
	case 7:
		return []byte{byte(rng.IntN(2))}
	}
	return math.Ldexp(rng.Float64(), rng.IntN(140)-70)
}

// TestValueOrder checks that compareValues is a total order and that
// COUNT_DISTINCT's keys agree with its notion of equal numbers.
func TestValueOrder(t *testing.T) {
	seed := rand.Uint64()
	rng := rand.New(rand.NewPCG(seed, 2))
	for range 20000 {
		a, b, c := aggRandomValue(rng), aggRandomValue(rng), aggRandomValue(rng)
		ab, ba := compareValues(a, b), compareValues(b, a)
		if ab != -ba {
			t.Fatalf("seed %d: compare(%v %T, %v %T) = %d but reversed %d", seed, a, a, b, b, ab, ba)
		}
		if ab <= 0 && compareValues(b, c) <= 0 && compareValues(a, c) > 0 {
			t.Fatalf("seed %d: not transitive: %v <= %v <= %v but %v > %v", seed, a, b, c, a, c)
		}
		sameValue := kindOf(a) == kindOf(b) && (kindOf(a) != kindNumber && ab == 0 || kindOf(a) == kindNumber && compareNumbers(a, b) == 0)
		if sameValue != (keyOf(a) == keyOf(b)) {
			t.Fatalf("seed %d: %v (%T) and %v (%T): equal %v but distinct keys %v %v", seed, a, a, b, b, sameValue, keyOf(a), keyOf(b))
		}
	}
	for _, c := range []struct {
		a, b any
		want int
	}{
		{int64(1), 1.0, -1}, {1.0, int64(1), 1}, {int64(2), 1.5, 1}, {math.NaN(), math.Inf(1), 1},
		{uint64(1 << 63), int64(math.MaxInt64), 1}, {0x1p63, uint64(1 << 63), 1}, {0x1p63 + 4096, uint64(1<<63 + 1), 1},
		{math.Copysign(0, -1), 0.0, 1}, {false, int64(-5), -1}, {"z", []byte("a"), -1}, {int64(math.MinInt64), -0x1p63, -1},
		{-0x1p63 - 4096, int64(math.MinInt64), -1}, {2.5, int64(2), 1}, {-2.5, int64(-2), -1},
	} {
		if got := compareValues(c.a, c.b); got != c.want {
			t.Errorf("compare(%v %T, %v %T) = %d, want %d", c.a, c.a, c.b, c.b, got, c.want)
		}
	}
}

// TestPlanStrInterns checks plan.str over strings that share recent-string
// slots, repeat, and outnumber what the plan interns: each call returns a
// string equal to its input, and one boxed value per distinct string while
// the plan interns.
func TestPlanStrInterns(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 9))
	var words []string
	for n := range 64 { // every length 0-7, so slots collide
		b := make([]byte, n%8)
		for i := range b {
			b[i] = "abc"[rng.IntN(3)]
		}
		words = append(words, string(b))
	}
	p := &plan{}
	first := map[string]any{}
	for range 10_000 {
		w := words[rng.IntN(len(words))]
		v := p.str([]byte(w))
		if s, ok := v.(string); !ok || s != w {
			t.Fatalf("str(%q) = %#v", w, v)
		}
		if f, ok := first[w]; ok && !sameBox(f, v) {
			t.Fatalf("str(%q) returned a second boxed value while interning", w)
		}
		first[w] = v
	}
	for i := range 2 * maxInterned { // past the interning bound: equal values still
		w := fmt.Sprint("w", i)
		if v := p.str([]byte(w)); v != any(w) {
			t.Fatalf("str(%q) = %#v", w, v)
		}
	}
}

// sameBox reports whether two interfaces holding strings share their data.
func sameBox(a, b any) bool {
	return unsafe.StringData(a.(string)) == unsafe.StringData(b.(string))
}
