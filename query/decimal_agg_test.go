package query_test

import (
	"errors"
	"fmt"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/internal/testlong"
	"github.com/bitempo/bitempo/internal/testutil/randstore"
	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
)

// decimalStore writes a random grouped history whose "amt" is a decimal of
// scale 0-4 (an 18-digit one now and then, so some sums overflow), an int64,
// or null, and whose "fix" is a decimal of scale 4 or null, as a declared
// column holds them.
func decimalStore(t *testing.T, rng *rand.Rand) *store.DB {
	db := groupedStore(t)
	amt := func() any {
		switch rng.IntN(12) {
		case 0:
			return nil
		case 1:
			return rng.Int64N(2000) - 1000
		case 2, 3: // 18 digits
			c := 900_000_000_000_000_000 + rng.Int64N(99_999_999_999_999_999)
			d, _ := encoding.NewDecimal(c*(1-2*rng.Int64N(2)), rng.IntN(5))
			return d
		}
		return randomDecimal(rng, 7, 4)
	}
	randstore.Write(t, db, rng, randstore.History{
		Table: "c", Commits: 30, MaxOps: 5, Ops: []randstore.Op{randstore.Upsert, randstore.Put},
		Key: func(int) store.Key { return store.Key{rng.Int64N(20)} },
		Attrs: func() store.Attrs {
			a := store.Attrs{"user": fmt.Sprint("u", rng.IntN(3)), "amt": amt(), "fix": nil}
			if d, ok := amt().(encoding.Decimal); ok {
				a["fix"], _ = d.Rescale(4) // or null: decimals all of scale 4
			}
			return a
		},
		Valid: 60, Unit: pathMinute, PutLen: 20,
	})
	return db
}

// bruteDecimal is the expected SUM, AVG, MIN and MAX of vals (decimals and
// int64s) computed with big.Rat: each a value, or "overflow".
func bruteDecimal(vals []any) [4]string {
	var out [4]string
	if len(vals) == 0 {
		return [4]string{"<nil>", "<nil>", "<nil>", "<nil>"}
	}
	sum := new(big.Rat)
	scale, decimals := 0, 0
	var lo, hi any
	var loR, hiR *big.Rat
	for _, v := range vals {
		var r *big.Rat
		switch x := v.(type) {
		case int64:
			r = new(big.Rat).SetInt64(x)
		case encoding.Decimal:
			r = new(big.Rat).SetFrac(big.NewInt(x.Coef()), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(x.Scale())), nil))
			scale = max(scale, x.Scale())
			decimals++
		}
		sum.Add(sum, r)
		// Equal numbers: int64 before decimal, then the smaller scale first.
		if loR == nil || r.Cmp(loR) < 0 || (r.Cmp(loR) == 0 && rank(v) < rank(lo)) {
			lo, loR = v, r
		}
		if hiR == nil || r.Cmp(hiR) > 0 || (r.Cmp(hiR) == 0 && rank(v) > rank(hi)) {
			hi, hiR = v, r
		}
	}
	out[2], out[3] = fmt.Sprintf("%v %T", lo, lo), fmt.Sprintf("%v %T", hi, hi)
	if decimals == 0 {
		s := sum.Num().Int64()
		out[0] = fmt.Sprintf("%v int64", s)
		out[1] = fmt.Sprintf("%v float64", float64(s)/float64(len(vals)))
		return out
	}
	out[0] = "overflow"
	if d, ok := ratDecimal(sum, scale); ok {
		out[0] = d
	}
	avg := new(big.Rat).Quo(sum, big.NewRat(int64(len(vals)), 1))
	out[1] = "overflow"
	for s := min(scale+4, 18); s >= scale; s-- {
		if d, ok := ratDecimal(avg, s); ok {
			out[1] = d
			break
		}
	}
	return out
}

func rank(v any) int {
	if d, ok := v.(encoding.Decimal); ok {
		return 1 + d.Scale()
	}
	return 0
}

// ratDecimal rounds r half to even at scale s and prints it as a Decimal;
// false when it has more than 18 digits.
func ratDecimal(r *big.Rat, s int) (string, bool) {
	x := new(big.Rat).Mul(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(s)), nil)))
	floor := new(big.Int).Div(x.Num(), x.Denom()) // Euclidean: floor for a positive denominator
	frac := new(big.Rat).Sub(x, new(big.Rat).SetInt(floor))
	switch c := frac.Cmp(big.NewRat(1, 2)); {
	case c > 0, c == 0 && floor.Bit(0) == 1:
		floor.Add(floor, big.NewInt(1))
	}
	if !floor.IsInt64() {
		return "", false
	}
	d, err := encoding.NewDecimal(floor.Int64(), s)
	if err != nil {
		return "", false
	}
	return fmt.Sprintf("%v encoding.Decimal", d), true
}

// render prints a feature value as bruteDecimal does, or "overflow" for the
// error a result beyond 18 digits is.
func renderDecimalFeature(t *testing.T, v any, err error) string {
	if err != nil {
		if !errors.Is(err, query.ErrAggOverflow) || !errors.Is(err, query.ErrAggValue) {
			t.Fatalf("unexpected error %v", err)
		}
		return "overflow"
	}
	if v == nil {
		return "<nil>"
	}
	return fmt.Sprintf("%v %T", v, v)
}

// TestDecimalAggregationsMatchBigRat checks SUM, AVG, MIN and MAX of random
// decimals (mixed with int64s and nulls, of several scales, some 18 digits
// long) through Aggregate, AggregateTable and group and table-wide backfills
// against a brute-force computation with big.Rat over the versions
// query.Snapshot says are in effect.
func TestDecimalAggregationsMatchBigRat(t *testing.T) {
	ops := []string{"sum(amt)", "avg(amt)", "min(amt)", "max(amt)", "sum(fix)", "avg(fix)", "min(fix)", "max(fix)"}
	var aggs []query.Agg
	for _, spec := range ops {
		a, err := query.ParseAgg(spec)
		if err != nil {
			t.Fatal(err)
		}
		aggs = append(aggs, a)
	}
	decimalResults, overflows := 0, 0
	for _, seed := range testlong.Size([]uint64{1, 2, 3, rand.Uint64()}, []uint64{1, rand.Uint64()}) {
		rng := rand.New(rand.NewPCG(seed, 21))
		db := decimalStore(t, rng)
		for range 60 {
			at := query.AsOf{Valid: (rng.Int64N(70) - 5) * pathMinute}
			if rng.IntN(3) == 0 {
				at.Tx = 1 + rng.Int64N(db.LastTx())
			}
			group := fmt.Sprint("u", rng.IntN(4))
			var inGroup, all, fixGroup, fixAll []any
			for v, err := range query.Snapshot(db, "c", at, query.KeyRange{}, query.SnapshotOptions{}) {
				if err != nil {
					t.Fatal(err)
				}
				if x := v.Attrs["amt"]; x != nil {
					all = append(all, x)
					if v.Attrs["user"] == group {
						inGroup = append(inGroup, x)
					}
				}
				if x := v.Attrs["fix"]; x != nil {
					fixAll = append(fixAll, x)
					if v.Attrs["user"] == group {
						fixGroup = append(fixGroup, x)
					}
				}
			}
			for _, wide := range []bool{false, true} {
				amt, fix := bruteDecimal(inGroup), bruteDecimal(fixGroup)
				if wide {
					amt, fix = bruteDecimal(all), bruteDecimal(fixAll)
				}
				want := append(amt[:], fix[:]...)
				// Each feature alone, so an overflow of one does not hide the others.
				for k, a := range aggs {
					var f query.Features
					var err error
					if wide {
						f, err = query.AggregateTable(db, "c", at, []query.Agg{a})
					} else {
						f, err = query.Aggregate(db, "c", store.Key{group}, at, []query.Agg{a})
					}
					var v any
					if err == nil {
						v = f.Values[0]
					}
					got := renderDecimalFeature(t, v, err)
					rows := []query.LeftRow{{Group: store.Key{group}, TS: at.Valid, Tx: at.Tx}}
					for r, err := range query.Backfill(db, "c", rows, []query.Agg{a}, query.BackfillOptions{TableWide: wide}) {
						var v any
						if err == nil {
							v = r.Values[0]
						}
						if bf := renderDecimalFeature(t, v, err); bf != got {
							t.Fatalf("seed %d %s at %+v table-wide %v: backfill %s, point %s", seed, ops[k], at, wide, bf, got)
						}
					}
					if got != want[k] {
						t.Fatalf("seed %d %s at %+v table-wide %v over %v: got %s, want %s", seed, ops[k], at, wide, inGroup, got, want[k])
					}
					switch {
					case got == "overflow":
						overflows++
					case len(got) > 17 && got[len(got)-16:] == "encoding.Decimal":
						decimalResults++
					}
				}
			}
		}
	}
	t.Logf("%d decimal results, %d overflows", decimalResults, overflows)
	if decimalResults == 0 || overflows == 0 {
		t.Fatalf("%d decimal results, %d overflows: the data no longer exercises them", decimalResults, overflows)
	}
}
