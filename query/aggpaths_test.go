package query_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/internal/testlong"
	"github.com/bitempo/bitempo/internal/testutil/randstore"
	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
)

const pathMinute = int64(60_000_000)

// pathColumns are the input columns of pathStore: "i" holds int64s (nulls
// among them), "f" float64s, "m" ints, floats and uint64s mixed, "n" only nulls
// (or nothing), "big" int64s whose sums overflow int64 (to a uint64, or beyond
// uint64: an error), "s" strings (a SUM of it is an error), "d" decimals of
// scales 0-3 and int64s, "dm" decimals and floats (a SUM of both is an error),
// "dbig" 18-digit decimals (a SUM beyond 18 digits is an error), "dfix"
// decimals all of scale 2, as a declared column holds them (18 digits now and
// then).
var pathColumns = []string{"i", "f", "m", "n", "big", "s", "d", "dm", "dbig", "dfix"}

// randomDecimal returns a decimal of up to digits digits at a random scale
// from 0 to maxScale.
func randomDecimal(rng *rand.Rand, digits, maxScale int) encoding.Decimal {
	limit := int64(1)
	for range 1 + rng.IntN(digits) {
		limit *= 10
	}
	d, err := encoding.NewDecimal(rng.Int64N(2*limit-1)-(limit-1), rng.IntN(maxScale+1))
	if err != nil {
		panic(err)
	}
	return d
}

// pathStore writes a random grouped history over minutes (Upserts, whose SCD2
// closes retire records that share their successor's attributes, bounded
// Puts, deletes) with the columns of pathColumns and a window column "when".
func pathStore(t *testing.T, rng *rand.Rand) *store.DB {
	db := groupedStore(t)
	null := func(v any) any {
		if rng.IntN(8) == 0 {
			return nil
		}
		return v
	}
	attrs := func() store.Attrs {
		a := store.Attrs{
			"user": fmt.Sprint("u", rng.IntN(4)),
			"i":    null(rng.Int64N(2000) - 1000),
			"f":    null(rng.Float64()*200 - 100),
			"big":  []int64{math.MaxInt64/3 - rng.Int64N(3), math.MinInt64/3 + rng.Int64N(3), rng.Int64N(100)}[rng.IntN(3)],
			"s":    null([]string{"a", "b", "c"}[rng.IntN(3)]),
			"when": rng.Int64N(60) * pathMinute,
		}
		switch rng.IntN(6) {
		case 0:
			a["m"] = float64(rng.IntN(100)) + 0.5
		case 1:
			a["m"] = uint64(math.MaxInt64) + 1 + rng.Uint64N(3)
		case 2:
			a["m"] = nil
		default:
			a["m"] = rng.Int64N(100)
		}
		if rng.IntN(2) == 0 {
			a["n"] = nil
		}
		switch rng.IntN(8) {
		case 0:
			a["d"] = rng.Int64N(100) - 50
		case 1:
			a["d"] = nil
		default:
			a["d"] = randomDecimal(rng, 6, 3)
		}
		if rng.IntN(3) == 0 {
			a["dm"] = float64(rng.IntN(100)) + 0.25
		} else {
			a["dm"] = randomDecimal(rng, 4, 2)
		}
		a["dbig"], _ = encoding.NewDecimal(999_999_999_999_999_000+rng.Int64N(1000)-[]int64{0, 1_999_999_999_999_998_000}[rng.IntN(2)], rng.IntN(3))
		switch rng.IntN(10) {
		case 0:
			a["dfix"] = nil
		case 1:
			a["dfix"], _ = encoding.NewDecimal(999_999_999_999_999_999*(1-2*rng.Int64N(2)), 2)
		default:
			a["dfix"], _ = encoding.NewDecimal(rng.Int64N(2_000_000)-1_000_000, 2)
		}
		for _, c := range []string{"i", "f", "m", "d"} {
			if rng.IntN(10) == 0 {
				delete(a, c)
			}
		}
		return a
	}
	randstore.Write(t, db, rng, randstore.History{
		Table: "c", Commits: 40, MaxOps: 5,
		Ops:   []randstore.Op{randstore.Upsert, randstore.Upsert, randstore.Put, randstore.Put, randstore.Delete},
		Key:   func(int) store.Key { return store.Key{rng.Int64N(25)} },
		Attrs: attrs, Valid: 60, Unit: pathMinute, PutLen: 20, DeleteLen: 10,
	})
	return db
}

// pathSpecs returns the aggregation sets TestAggIntPathMatchesGeneric runs:
// every operation on every column of pathColumns, plain, windowed on
// valid_from and windowed on a column, one set per operation and column (so
// an error of one does not hide the others), and every one that cannot fail
// together.
func pathSpecs(t *testing.T) [][]query.Agg {
	parse := func(spec string) query.Agg {
		a, err := query.ParseAgg(spec)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	var sets [][]query.Agg
	var together []query.Agg
	for _, spec := range []string{"count", "exists", "count:5m", "exists@when:10m"} {
		sets = append(sets, []query.Agg{parse(spec)})
		together = append(together, parse(spec))
	}
	for _, op := range []string{"sum", "avg", "min", "max", "count_distinct", "latest", "earliest"} {
		for _, col := range pathColumns {
			var set []query.Agg
			for _, w := range []string{"", ":5m,30m", "@when:10m"} {
				set = append(set, parse(fmt.Sprintf("%s(%s)%s", op, col, w)))
			}
			sets = append(sets, set)
			if (op != "sum" && op != "avg") || !slices.Contains([]string{"big", "s", "m", "dm", "dbig", "dfix"}, col) {
				together = append(together, set...)
			}
		}
	}
	return append(sets, together)
}

// TestAggIntPathMatchesGeneric runs every aggregation of pathSpecs through
// query.Aggregate, query.AggregateTable and group and table-wide backfills, on the
// integer path and on the generic one (which decodes each version into a map
// and boxes every value): every value and its type, or the error, must be the
// same. The requests read at the latest and at past transaction times, where
// retired records that share their successor's attributes are read.
func TestAggIntPathMatchesGeneric(t *testing.T) {
	for _, seed := range testlong.Size([]uint64{1, 2, rand.Uint64()}, []uint64{1, rand.Uint64()}) {
		rng := rand.New(rand.NewPCG(seed, 12))
		db := pathStore(t, rng)
		last := db.LastTx()
		rows := make([]query.LeftRow, 300)
		for i := range rows {
			rows[i] = query.LeftRow{Group: store.Key{fmt.Sprint("u", rng.IntN(5))}, TS: (rng.Int64N(80) - 5) * pathMinute}
			if rng.IntN(3) == 0 {
				rows[i].Tx = 1 + rng.Int64N(last)
			}
			if rng.IntN(4) == 0 {
				rows[i].TS++ // between minutes
			}
		}
		points := rows[:40]
		render := func(vals []any, err error) string {
			if err != nil {
				return "error: " + err.Error() + "\n"
			}
			var b strings.Builder
			for _, v := range vals {
				fmt.Fprintf(&b, "%v (%T) ", v, v)
			}
			return b.String() + "\n"
		}
		run := func(aggs []query.Agg, ints bool) map[string]string {
			path := query.GenericPath
			if ints {
				path = query.IntPath
			}
			out := map[string]string{}
			var b strings.Builder
			for _, r := range points {
				f, err := query.AggregateOn(path, db, "c", r.Group, query.AsOf{Valid: r.TS, Tx: r.Tx}, aggs)
				b.WriteString(render(f.Values, err))
			}
			out["Aggregate"] = b.String()
			b.Reset()
			for _, r := range points {
				f, err := query.AggregateTableOn(path, db, "c", query.AsOf{Valid: r.TS, Tx: r.Tx}, aggs)
				b.WriteString(render(f.Values, err))
			}
			out["AggregateTable"] = b.String()
			for _, wide := range []bool{false, true} {
				b.Reset()
				in := rows
				if wide {
					in = rows[:60]
				}
				for r, err := range query.BackfillOn(path, db, "c", in, aggs, query.BackfillOptions{TableWide: wide}) {
					fmt.Fprintf(&b, "%d ", r.Index)
					b.WriteString(render(r.Values, err))
				}
				out[fmt.Sprint("Backfill table-wide=", wide)] = b.String()
			}
			return out
		}
		errs, uints, decs, decOver, decMixed := 0, 0, 0, 0, 0
		for _, aggs := range pathSpecs(t) {
			ints, generic := run(aggs, true), run(aggs, false)
			for api, got := range ints {
				if want := generic[api]; got != want {
					t.Fatalf("seed %d %s %v: integer path\n%s\ngeneric\n%s", seed, api, aggs, got, want)
				}
				errs += strings.Count(got, "error: ")
				uints += strings.Count(got, "(uint64)")
				decs += strings.Count(got, "(encoding.Decimal)")
				decOver += strings.Count(got, "decimal sum has more than")
				decMixed += strings.Count(got, "mixes decimal and float64")
			}
		}
		if errs == 0 || uints == 0 || decs == 0 {
			t.Fatalf("seed %d: %d errors, %d uint64 results, %d decimals: the store no longer exercises overflow or decimals", seed, errs, uints, decs)
		}
		if decOver == 0 || decMixed == 0 {
			t.Fatalf("seed %d: %d decimal overflows, %d decimal sums mixed with floats", seed, decOver, decMixed)
		}
	}
}

// TestAggPlansProject checks that an aggregation plan reads versions through a
// projection to the attributes its features use: the group index records and
// the table scans it reads hold no other attribute, on both paths.
func TestAggPlansProject(t *testing.T) {
	db := pathStore(t, rand.New(rand.NewPCG(3, 12)))
	s, err := db.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tb, err := s.Table("c")
	if err != nil {
		t.Fatal(err)
	}
	var aggs []query.Agg
	for _, spec := range []string{"count", "sum(i)", "max(id)", "latest(s)@when:5m"} {
		a, err := query.ParseAgg(spec)
		if err != nil {
			t.Fatal(err)
		}
		aggs = append(aggs, a)
	}
	want := map[string]bool{"i": true, "s": true, "when": true} // id is a key column
	seen := map[string]bool{}
	note := func(name string) {
		if !want[name] {
			t.Fatalf("a plan reading %v decoded %q", want, name)
		}
		seen[name] = true
	}
	gk, err := tb.AppendGroupKey(nil, store.Key{"u1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []query.AggPath{query.IntPath, query.GenericPath} {
		records, versions, err := query.PlanTables(path, s, "c", aggs)
		if err != nil {
			t.Fatal(err)
		}
		for rec, err := range s.GroupRecords(records, gk, 1, s.LastTx()) {
			if err != nil {
				t.Fatal(err)
			}
			attrs, err := rec.Attrs()
			if err != nil {
				t.Fatal(err)
			}
			for name := range attrs {
				note(name)
			}
		}
		for v, err := range s.ScanHistory(versions, store.Span{}, s.LastTx(), store.NegInfinity, store.Infinity, nil) {
			if err != nil {
				t.Fatal(err)
			}
			for name := range v.Attrs {
				note(name)
			}
			if err := v.RawAttrs().Walk(func(name string, _ *encoding.Value) error { note(name); return nil }); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(seen) != len(want) {
		t.Fatalf("decoded %v of %v", seen, want)
	}
}
