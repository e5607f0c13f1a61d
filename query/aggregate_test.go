package query_test

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/bitempo/bitempo/internal/enginetest"
	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// TestAggregate runs the scenario files in testdata/aggregate with the driver
// every engine runs them with (internal/enginetest.Aggregate). Valid times are
// dates or date-times (2024-01-08, 2024-01-08T06:00, UTC) or integers on int-axis
// tables; "-inf" and "+inf" are allowed. Transaction times come from a clock
// stuck at 0, so the commits get tx 1, 2, 3, ... (each write prints its tx).
//
//	create table=T key=col:type[,col:type] [group=a[,b]] [axis=int]  [mixed]: MixedTypes
//	upsert table=T key=K at=A          attributes on the next line: name=value ...
//	put table=T key=K from=F to=T      (same)
//	delete table=T key=K from=F to=T
//	deleteat table=T key=K at=A
//	group table=T group=G [tx=N]       the group index: records of G alive at tx
//	agg table=T group=G ts=TS [tx=N]   one spec per line; prints the features
//	agg table=T all ts=TS [tx=N]       table-wide
//	backfill table=T [tx=N] [all]      lines "agg SPEC" and "row GROUP TS [tx=N]"
//
// Values: integers, floats (1.5; printed 1.5f), d:DECIMAL (encoding.Decimal,
// scale as written), null, true/false, "quoted strings",
// t:RFC3339 times (time.Time), other words are strings. Group keys are written like values. Every point query is
// checked against a one-row backfill, and every backfill row against the point
// query, so each expectation holds for both paths. The store is verified after
// every write.
func TestAggregate(t *testing.T) {
	enginetest.WalkScenarios(t, "testdata/aggregate", enginetest.Memory, enginetest.Aggregate)
}

func TestParseAgg(t *testing.T) {
	for _, c := range []struct {
		spec, canon, names string
	}{
		{"sum(amount):7d,30d", "sum(amount):7d,30d", "amount_sum_7d amount_sum_30d"},
		{"avg(amount)", "avg(amount)", "amount_avg"},
		{"count", "count", "count"},
		{"COUNT()", "count", "count"},
		{"exists", "exists", "exists"},
		{"count_distinct(status)", "count_distinct(status)", "status_count_distinct"},
		{"count@birth_ts:10950d", "count@birth_ts:10950d", "count_by_birth_ts_10950d"},
		{"Max(amount)@signed_ts:12h, 90m", "max(amount)@signed_ts:12h,90m", "amount_max_by_signed_ts_12h amount_max_by_signed_ts_90m"},
		{"latest(status)", "latest(status)", "status_latest"},
		{"earliest(status):1d", "earliest(status):1d", "status_earliest_1d"},
		{"min(amount)", "min(amount)", "amount_min"},
	} {
		a, err := query.ParseAgg(c.spec)
		if err != nil {
			t.Errorf("%q: %v", c.spec, err)
			continue
		}
		if a.String() != c.canon || strings.Join(a.Names(), " ") != c.names {
			t.Errorf("%q: parsed as %q with names %v, want %q %q", c.spec, a.String(), a.Names(), c.canon, c.names)
		}
		if b, err := query.ParseAgg(a.String()); err != nil || b.String() != a.String() {
			t.Errorf("%q does not round-trip: %v %v", c.spec, b, err)
		}
	}
	for _, bad := range []string{"", "sum", "sum()", "count(amount)", "exists(x)", "median(amount)", "sum(amount", "sum(amount):",
		"sum(amount):7", "sum(amount):7w", "sum(amount):0d", "sum(amount):-1d", "sum(amount):+1d", "sum(amount):7d,7d",
		"count@:1d", "count@birth_ts", "sum(a b)", "sum(amount):999999999999d"} {
		_, err := query.ParseAgg(bad)
		var aerr *query.AggError
		if !errors.Is(err, query.ErrInvalidAgg) || !errors.As(err, &aerr) || aerr.Spec != bad {
			t.Errorf("%q: got %v, want an *AggError naming the spec", bad, err)
		}
	}
	if err := (query.Agg{Op: query.AggSum}).Validate(); !errors.Is(err, query.ErrInvalidAgg) || !strings.Contains(err.Error(), `"sum"`) {
		t.Errorf("Validate of sum without input: %v", err)
	}
	sum7, _ := query.ParseAgg("sum(amount):7d")
	sum7b, _ := query.ParseAgg("sum(amount):7d,30d")
	if _, err := query.FeatureNames([]query.Agg{sum7, sum7b}); !errors.Is(err, query.ErrInvalidAgg) || !strings.Contains(err.Error(), "amount_sum_7d") {
		t.Errorf("duplicate feature names: %v", err)
	}
	if _, err := query.FeatureNames(nil); !errors.Is(err, query.ErrInvalidAgg) {
		t.Errorf("no aggregations: %v", err)
	}
	if w, err := query.ParseWindow("10950d"); err != nil || w.Ticks() != 10950*86_400_000_000 {
		t.Errorf("10950d: %v %v", w, err)
	}
	if max, err := query.ParseWindow(fmt.Sprintf("%dm", math.MaxInt64/60_000_000)); err != nil || max.Ticks() <= 0 {
		t.Errorf("largest window: %v %v", max, err)
	}
}

// TestAggregateChangesTable checks that the group index follows a changes table
// through CDC batches that arrive out of order, including an entity that moves
// between groups and a late event that lands in the middle of a timeline.
func TestAggregateChangesTable(t *testing.T) {
	db, err := store.Open("db", store.Options{InMemory: true, Clock: func() int64 { return 0 }})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.CreateTable(store.TableDef{
		Name: "accounts", Kind: store.Changes, Axis: store.AxisInt,
		Key: []store.KeyColumn{{Name: "id", Type: store.String}}, GroupBy: []string{"branch"},
		MixedTypes: true, // group values of several types
	}); err != nil {
		t.Fatal(err)
	}
	ev := func(key string, at int64, op txn.Op, branch string, balance int64) txn.Event {
		return txn.Event{Key: store.Key{key}, At: at, Op: op, Attrs: store.Attrs{"branch": branch, "balance": balance}}
	}
	batches := [][]txn.Event{
		{ev("a1", 10, txn.OpUpsert, "north", 100), ev("a2", 10, txn.OpUpsert, "north", 5)},
		{ev("a1", 30, txn.OpUpsert, "south", 100)}, // a1 moves to south at 30
		{ev("a2", 40, txn.OpDelete, "", 0)},
		{ev("a1", 20, txn.OpUpsert, "north", 150)}, // late: lands between 10 and 30
	}
	var txs []int64
	for i, b := range batches {
		res, err := txn.Apply(db, "accounts", fmt.Sprint("batch-", i), b)
		if err != nil {
			t.Fatal(err)
		}
		txs = append(txs, res.Tx)
		rep, err := store.Verify(db)
		if err != nil || !rep.OK() {
			t.Fatalf("verify after batch %d: %v %v", i, rep, err)
		}
	}
	// A batch with a group value the index cannot hold is refused whole.
	last := db.LastTx()
	bad := txn.Event{Key: store.Key{"a9"}, At: 5, Op: txn.OpUpsert, Attrs: store.Attrs{"branch": 1.5}}
	if _, err := txn.Apply(db, "accounts", "bad", []txn.Event{bad}); !errors.Is(err, store.ErrGroupValue) {
		t.Fatalf("float group value: %v", err)
	}
	if db.LastTx() != last {
		t.Fatal("a refused batch committed")
	}
	sum, _ := query.ParseAgg("sum(balance)")
	count, _ := query.ParseAgg("count")
	aggs := []query.Agg{sum, count}
	for _, c := range []struct {
		branch string
		ts, tx int64
		want   string
	}{
		{"north", 15, 0, "amount=105 count=2"},
		{"north", 25, 0, "amount=155 count=2"},
		{"north", 25, txs[2], "amount=105 count=2"}, // before the late event
		{"north", 30, 0, "amount=5 count=1"},
		{"south", 30, 0, "amount=100 count=1"},
		{"south", 29, 0, "amount=<nil> count=0"},
		{"north", 40, 0, "amount=<nil> count=0"},
		{"north", 40, txs[1], "amount=5 count=1"},
	} {
		f, err := query.Aggregate(db, "accounts", store.Key{c.branch}, query.AsOf{Valid: c.ts, Tx: c.tx}, aggs)
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprintf("amount=%v count=%v", f.Values[0], f.Values[1]); got != c.want {
			t.Errorf("%s at %d tx %d: %s, want %s", c.branch, c.ts, c.tx, got, c.want)
		}
	}
}
