package query_test

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"math/big"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/bitempo/bitempo/internal/testutil"
	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

const aggDay = int64(86_400_000_000)

// aggRandomSpecs are the aggregations the randomized test checks: every
// operation, windows on valid_from and on another column.
var aggRandomSpecs = []string{
	"count", "exists", "count:7d", "sum(amount):7d,30d", "sum(amount)", "avg(amount)", "min(amount)", "max(amount):30d",
	"count_distinct(status)", "count_distinct(amount):7d", "latest(status)", "earliest(amount)", "latest(amount):7d",
	"count@birth_ts:10d", "sum(amount)@birth_ts:20d",
}

// aggRandomStore writes a random history of contracts (entities moving between
// users, amounts of both number types, nulls, expiries, corrections) in many
// transactions and returns the store and the contracts' keys.
func aggRandomStore(t testing.TB, rng *rand.Rand, entities, users, commits int) (*store.DB, []store.Key) {
	db, err := store.Open("db", store.Options{InMemory: true, Clock: func() int64 { return 0 }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.CreateTable(store.TableDef{Name: "contracts", Key: []store.KeyColumn{{Name: "id", Type: store.Int64}}, GroupBy: []string{"user"}, MixedTypes: true}); err != nil {
		t.Fatal(err)
	}
	keys := make([]store.Key, entities)
	for i := range keys {
		keys[i] = store.Key{int64(i)}
	}
	day := func() int64 { return int64(rng.IntN(60)) * aggDay }
	attrs := func() store.Attrs {
		a := store.Attrs{"user": fmt.Sprint("u", rng.IntN(users)), "status": []string{"active", "paused", "closed"}[rng.IntN(3)]}
		switch rng.IntN(5) {
		case 0:
			a["amount"] = nil
		case 1:
			a["amount"] = float64(rng.IntN(100)) + 0.25
		default:
			a["amount"] = int64(rng.IntN(100))
		}
		if rng.IntN(4) > 0 {
			a["birth_ts"] = day()
		}
		if rng.IntN(10) == 0 {
			delete(a, "user") // in no group
		}
		return a
	}
	for range commits {
		_, err := txn.Update(db, func(tx *txn.Tx) error {
			for range 1 + rng.IntN(4) {
				key := keys[rng.IntN(len(keys))]
				var err error
				switch rng.IntN(6) {
				case 0, 1, 2:
					_, err = tx.Upsert("contracts", key, attrs(), day())
				case 3:
					from := day()
					err = tx.Put("contracts", key, attrs(), from, from+aggDay*int64(1+rng.IntN(20)))
				case 4:
					from := day()
					err = tx.Delete("contracts", key, from, from+aggDay*int64(1+rng.IntN(10)))
				case 5:
					_, err = tx.DeleteAt("contracts", key, day())
				}
				if err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	testutil.Verify(t, db)
	return db, keys
}

// aggBrute computes the features of one row by scanning every record of the
// table: the records alive at tx, active at ts and of the row's user, then each
// aggregation written out directly.
func aggBrute(recs []store.Version, aggs []query.Agg, user any, ts, tx int64) []any {
	var active []store.Version
	for _, r := range recs {
		if r.TxFrom <= tx && tx < r.TxTo && r.ValidFrom <= ts && ts < r.ValidTo && (user == nil || r.Attrs["user"] == user) {
			active = append(active, r)
		}
	}
	var out []any
	for _, a := range aggs {
		windows := a.Windows
		if len(windows) == 0 {
			windows = []query.Window{{}}
		}
		for _, w := range windows {
			var set []store.Version
			for _, r := range active {
				if w.N == 0 {
					set = append(set, r)
					continue
				}
				at := r.ValidFrom
				if a.WindowColumn != "" {
					v, ok := r.Attrs[a.WindowColumn].(int64)
					if !ok {
						continue
					}
					at = v
				}
				if ts-w.Ticks() < at && at <= ts {
					set = append(set, r)
				}
			}
			out = append(out, aggBruteOne(a, set))
		}
	}
	return out
}

func aggBruteOne(a query.Agg, set []store.Version) any {
	var vals []any
	for _, r := range set {
		if v := r.Attrs[a.Input]; v != nil {
			vals = append(vals, v)
		}
	}
	switch a.Op {
	case query.AggCount:
		return int64(len(set))
	case query.AggExists:
		return len(set) > 0
	case query.AggCountDistinct:
		seen := map[any]bool{}
		for _, v := range vals {
			seen[v] = true
		}
		return int64(len(seen))
	case query.AggLatest, query.AggEarliest:
		if len(set) == 0 {
			return nil
		}
		best := set[0]
		for _, r := range set[1:] {
			c := cmp.Or(cmp.Compare(r.ValidFrom, best.ValidFrom), bytes.Compare(r.Tuple(), best.Tuple()))
			if (a.Op == query.AggLatest) == (c > 0) {
				best = r
			}
		}
		return best.Attrs[a.Input]
	}
	if len(vals) == 0 {
		return nil
	}
	rat := func(v any) *big.Rat {
		if i, ok := v.(int64); ok {
			return new(big.Rat).SetInt64(i)
		}
		return new(big.Rat).SetFloat64(v.(float64))
	}
	switch a.Op {
	case query.AggMin, query.AggMax:
		// The test's values never hold an int and a float of equal value.
		best := vals[0]
		for _, v := range vals[1:] {
			if c := rat(v).Cmp(rat(best)); (a.Op == query.AggMin) == (c < 0) && c != 0 {
				best = v
			}
		}
		return best
	}
	sum, anyFloat := new(big.Rat), false
	for _, v := range vals {
		sum.Add(sum, rat(v))
		_, isFloat := v.(float64)
		anyFloat = anyFloat || isFloat
	}
	f, _ := sum.Float64()
	if a.Op == query.AggAvg {
		return f / float64(len(vals))
	}
	if anyFloat {
		return f
	}
	return sum.Num().Int64()
}

// TestBackfillMatchesBruteForce compares backfills of thousands of unsorted rows,
// at the latest, at old and at per-row transaction times, with a brute-force
// computation over every record of the table. Request times favour the instants
// where versions start and end, and the instants just before.
func TestBackfillMatchesBruteForce(t *testing.T) {
	for _, seed := range []uint64{1, 2, rand.Uint64()} {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			db, keys := aggRandomStore(t, rng, 40, 6, 60)
			s, err := db.Snapshot()
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			recs := contractRecords(t, s, keys)
			var instants []int64
			for _, r := range recs {
				instants = append(instants, r.ValidFrom, r.ValidTo, r.ValidFrom+7*aggDay, r.ValidFrom+30*aggDay)
			}
			var aggs []query.Agg
			for _, spec := range aggRandomSpecs {
				a, err := query.ParseAgg(spec)
				if err != nil {
					t.Fatal(err)
				}
				aggs = append(aggs, a)
			}
			last := s.LastTx()
			rows := make([]query.LeftRow, 3000)
			for i := range rows {
				ts := int64(rng.IntN(90)-10) * aggDay
				if rng.IntN(3) > 0 {
					ts = instants[rng.IntN(len(instants))] - int64(rng.IntN(2))
				}
				rows[i] = query.LeftRow{Group: store.Key{fmt.Sprint("u", rng.IntN(7))}, TS: ts}
				if rng.IntN(3) == 0 {
					rows[i].Tx = 1 + rng.Int64N(last)
				}
			}
			for _, defaultTx := range []int64{query.Latest, last / 2, 1} {
				n := 0
				for r, err := range query.Backfill(s, "contracts", rows, aggs, query.BackfillOptions{Tx: defaultTx}) {
					if err != nil {
						t.Fatal(err)
					}
					row := rows[r.Index]
					tx := cmp.Or(row.Tx, defaultTx, last)
					want := aggBrute(recs, aggs, row.Group[0], row.TS, tx)
					if r.Index != n || fmt.Sprint(r.Values) != fmt.Sprint(want) || !aggSameTypes(r.Values, want) {
						t.Fatalf("seed %d default tx %d: row %d %+v (tx %d):\n got  %v\n want %v", seed, defaultTx, r.Index, row, tx, r.Values, want)
					}
					n++
				}
				if n != len(rows) {
					t.Fatalf("%d rows for %d", n, len(rows))
				}
			}
			// A table-wide series over a few dates.
			series := make([]query.LeftRow, 200)
			for i := range series {
				series[i] = query.LeftRow{TS: instants[rng.IntN(len(instants))], Tx: []int64{0, last / 3}[rng.IntN(2)]}
			}
			for r, err := range query.Backfill(s, "contracts", series, aggs, query.BackfillOptions{TableWide: true}) {
				if err != nil {
					t.Fatal(err)
				}
				row := series[r.Index]
				want := aggBrute(recs, aggs, nil, row.TS, cmp.Or(row.Tx, last))
				if fmt.Sprint(r.Values) != fmt.Sprint(want) || !aggSameTypes(r.Values, want) {
					t.Fatalf("seed %d table-wide row %d %+v:\n got  %v\n want %v", seed, r.Index, row, r.Values, want)
				}
			}
		})
	}
}

func aggSameTypes(a, b []any) bool {
	for i := range a {
		if fmt.Sprintf("%T", a[i]) != fmt.Sprintf("%T", b[i]) {
			return false
		}
	}
	return true
}

// TestBackfillStreamsAndStops checks that a backfill clustered by group yields
// rows before it has read every group, reports progress, and stops reading when
// the loop breaks.
func TestBackfillStreamsAndStops(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	db, _ := aggRandomStore(t, rng, 30, 5, 20)
	var rows []query.LeftRow
	for u := range 5 {
		for d := range 20 {
			rows = append(rows, query.LeftRow{Group: store.Key{fmt.Sprint("u", u)}, TS: int64(d) * 3 * aggDay})
		}
	}
	count, _ := query.ParseAgg("count")
	var progress []query.BackfillProgress
	opts := query.BackfillOptions{ProgressEvery: 20, Progress: func(p query.BackfillProgress) { progress = append(progress, p) }}
	seen := 0
	for r, err := range query.Backfill(db, "contracts", rows, []query.Agg{count}, opts) {
		if err != nil {
			t.Fatal(err)
		}
		if r.Index < 20 && len(progress) > 1 {
			t.Fatalf("row %d of the first group yielded after %d progress reports: not streaming", r.Index, len(progress))
		}
		if seen++; seen == 30 {
			break
		}
	}
	if seen != 30 || len(progress) != 2 || progress[1] != (query.BackfillProgress{Rows: 40, TotalRows: 100, Groups: 2, TotalGroups: 5}) {
		t.Fatalf("yielded %d rows, progress %+v", seen, progress)
	}
	progress = nil
	for _, err := range query.Backfill(db, "contracts", rows, []query.Agg{count}, opts) {
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(progress) != 5 || progress[4] != (query.BackfillProgress{Rows: 100, TotalRows: 100, Groups: 5, TotalGroups: 5}) {
		t.Fatalf("progress %+v", progress)
	}
	// Bad input is one error.
	bad := append(slices.Clone(rows), query.LeftRow{Group: store.Key{1.5}})
	n := 0
	for _, err := range query.Backfill(db, "contracts", bad, []query.Agg{count}, opts) {
		n++
		if !errors.Is(err, store.ErrGroupValue) {
			t.Fatalf("bad group key: %v", err)
		}
	}
	if n != 1 {
		t.Fatalf("%d results for a bad input", n)
	}
	for _, err := range query.Backfill(db, "contracts", nil, []query.Agg{count}, opts) {
		t.Fatalf("empty input yielded %v", err)
	}
}

// TestBackfillProgressCountsRows checks that progress advances by rows inside
// one group: a table-wide backfill of 100 rows, one group, reports every 20.
func TestBackfillProgressCountsRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	db, _ := aggRandomStore(t, rng, 30, 5, 20)
	rows := make([]query.LeftRow, 100)
	for i := range rows {
		rows[i] = query.LeftRow{TS: int64(i) * aggDay}
	}
	count, _ := query.ParseAgg("count")
	var progress []query.BackfillProgress
	opts := query.BackfillOptions{TableWide: true, ProgressEvery: 20, Progress: func(p query.BackfillProgress) { progress = append(progress, p) }}
	for _, err := range query.Backfill(db, "contracts", rows, []query.Agg{count}, opts) {
		if err != nil {
			t.Fatal(err)
		}
	}
	want := []query.BackfillProgress{
		{Rows: 20, TotalRows: 100, TotalGroups: 1}, {Rows: 40, TotalRows: 100, TotalGroups: 1},
		{Rows: 60, TotalRows: 100, TotalGroups: 1}, {Rows: 80, TotalRows: 100, TotalGroups: 1},
		{Rows: 100, TotalRows: 100, Groups: 1, TotalGroups: 1},
	}
	if !slices.Equal(progress, want) {
		t.Fatalf("progress %+v\nwant %+v", progress, want)
	}
}

// TestAggregateMatchesBruteForce compares Aggregate, AggregateTable and
// table-wide and group backfills with the brute-force computation over every
// record of the table, on the integer path and on the generic one, at the
// latest and at past transaction times, at request times where versions start
// and end.
func TestAggregateMatchesBruteForce(t *testing.T) {
	var aggs []query.Agg
	for _, spec := range aggRandomSpecs {
		a, err := query.ParseAgg(spec)
		if err != nil {
			t.Fatal(err)
		}
		aggs = append(aggs, a)
	}
	for _, seed := range []uint64{5, rand.Uint64()} {
		rng := rand.New(rand.NewPCG(seed, 9))
		db, keys := aggRandomStore(t, rng, 30, 4, 50)
		s, err := db.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		recs := contractRecords(t, s, keys)
		var instants []int64
		for _, r := range recs {
			instants = append(instants, r.ValidFrom, r.ValidTo-1, r.ValidFrom+7*aggDay)
		}
		last := s.LastTx()
		rows := make([]query.LeftRow, 150)
		for i := range rows {
			rows[i] = query.LeftRow{Group: store.Key{fmt.Sprint("u", rng.IntN(5))}, TS: instants[rng.IntN(len(instants))]}
			if rng.IntN(2) == 0 {
				rows[i].Tx = 1 + rng.Int64N(last)
			}
		}
		check := func(path, api string, row query.LeftRow, got []any, user any) {
			t.Helper()
			want := aggBrute(recs, aggs, user, row.TS, cmp.Or(row.Tx, last))
			if fmt.Sprint(got) != fmt.Sprint(want) || !aggSameTypes(got, want) {
				t.Fatalf("seed %d %s path %s %+v:\n got  %v\n want %v", seed, path, api, row, got, want)
			}
		}
		for _, ints := range []bool{true, false} {
			path := map[bool]string{true: "integer", false: "generic"}[ints]
			on := map[bool]query.AggPath{true: query.IntPath, false: query.GenericPath}[ints]
			for _, row := range rows {
				f, err := query.AggregateOn(on, db, "contracts", row.Group, query.AsOf{Valid: row.TS, Tx: row.Tx}, aggs)
				if err != nil {
					t.Fatal(err)
				}
				check(path, "Aggregate", row, f.Values, row.Group[0])
				if f, err = query.AggregateTableOn(on, db, "contracts", query.AsOf{Valid: row.TS, Tx: row.Tx}, aggs); err != nil {
					t.Fatal(err)
				}
				check(path, "AggregateTable", row, f.Values, nil)
			}
			for _, wide := range []bool{false, true} {
				for r, err := range query.BackfillOn(on, db, "contracts", rows, aggs, query.BackfillOptions{TableWide: wide}) {
					if err != nil {
						t.Fatal(err)
					}
					user := rows[r.Index].Group[0]
					if wide {
						user = nil
					}
					check(path, fmt.Sprint("Backfill table-wide=", wide), rows[r.Index], r.Values, user)
				}
			}
		}
	}
}

// contractRecords returns every record (current and retired) of the keys of
// aggRandomStore's "contracts" table, key by key.
func contractRecords(t *testing.T, s *store.Snapshot, keys []store.Key) []store.Version {
	t.Helper()
	tb, err := s.Table("contracts")
	if err != nil {
		t.Fatal(err)
	}
	var recs []store.Version
	for _, k := range keys {
		tuple, _ := tb.AppendKey(nil, k)
		kr, err := s.KeyRecords(tb, tuple)
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, kr...)
	}
	return recs
}
