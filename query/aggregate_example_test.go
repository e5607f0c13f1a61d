package query_test

import (
	"fmt"
	"time"

	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// The contracts example of the SCD2 group-by reference scenarios
// (docs/semantics.md): contracts keyed by contract_id, grouped by user_id, aggregated over the versions active at the
// request time; and active users by zipcode whose birth_ts lies in the last 10950
// days (a window on another column).
func ExampleAggregate() {
	// day returns midnight UTC of a date as valid-time ticks (microseconds).
	day := func(date string) int64 {
		t, err := time.Parse("2006-01-02", date)
		if err != nil {
			panic(err)
		}
		return t.UnixMicro()
	}
	db, err := store.Open("", store.Options{InMemory: true})
	if err != nil {
		panic(err)
	}
	defer db.Close()
	if _, err := db.CreateTable(store.TableDef{
		Name:    "contracts",
		Key:     []store.KeyColumn{{Name: "contract_id", Type: store.String}},
		GroupBy: []string{"user_id"},
	}); err != nil {
		panic(err)
	}
	// An SCD2 warehouse table: one row per version with its validity interval
	// (an empty valid_to is open-ended).
	scd2 := []struct {
		contract, user, from, to string
		amount                   int
		status                   string
	}{
		{"c1", "u1", "2024-01-01", "2024-01-10", 100, "active"},
		{"c1", "u1", "2024-01-10", "", 150, "active"},
		{"c2", "u1", "2024-01-05", "2024-02-01", 50, "pending"},
		{"c3", "u2", "2024-01-03", "", 70, "active"},
	}
	_, err = txn.Update(db, func(tx *txn.Tx) error {
		for _, r := range scd2 {
			to := store.Infinity
			if r.to != "" {
				to = day(r.to)
			}
			attrs := store.Attrs{"user_id": r.user, "amount": r.amount, "status": r.status}
			if err := tx.Put("contracts", store.Key{r.contract}, attrs, day(r.from), to); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		panic(err)
	}

	var aggs []query.Agg
	for _, spec := range []string{"sum(amount):7d,30d", "avg(amount)", "count", "exists", "count_distinct(status)"} {
		a, err := query.ParseAgg(spec)
		if err != nil {
			panic(err)
		}
		aggs = append(aggs, a)
	}
	f, err := query.Aggregate(db, "contracts", store.Key{"u1"}, query.AsOf{Valid: day("2024-01-12")}, aggs)
	if err != nil {
		panic(err)
	}
	for i, name := range f.Names {
		fmt.Printf("%s = %v\n", name, f.Values[i])
	}

	// Active users of a zipcode born within the last 10950 days.
	if _, err := db.CreateTable(store.TableDef{
		Name:    "users",
		Key:     []store.KeyColumn{{Name: "user_id", Type: store.String}},
		GroupBy: []string{"zipcode"},
	}); err != nil {
		panic(err)
	}
	_, err = txn.Update(db, func(tx *txn.Tx) error {
		if _, err := tx.Upsert("users", store.Key{"u1"}, store.Attrs{"zipcode": "94107", "birth_ts": day("1990-05-01")}, day("2020-01-01")); err != nil {
			return err
		}
		_, err := tx.Upsert("users", store.Key{"u2"}, store.Attrs{"zipcode": "94107", "birth_ts": day("2000-01-01")}, day("2020-01-01"))
		return err
	})
	if err != nil {
		panic(err)
	}
	young, err := query.ParseAgg("count@birth_ts:10950d")
	if err != nil {
		panic(err)
	}
	f, err = query.Aggregate(db, "users", store.Key{"94107"}, query.AsOf{Valid: day("2024-01-12")}, []query.Agg{young})
	if err != nil {
		panic(err)
	}
	fmt.Println(f)
	// Output:
	// amount_sum_7d = 150
	// amount_sum_30d = 200
	// amount_avg = 100
	// count = 2
	// exists = true
	// status_count_distinct = 2
	// count_by_birth_ts_10950d=1
}

// Training rows get their features at their own timestamps, as the store knew
// them at a transaction time, so a later correction does not leak into features
// computed as of before it.
func ExampleBackfill() {
	// day returns midnight UTC of a date as valid-time ticks (microseconds).
	day := func(date string) int64 {
		t, err := time.Parse("2006-01-02", date)
		if err != nil {
			panic(err)
		}
		return t.UnixMicro()
	}
	db, err := store.Open("", store.Options{InMemory: true})
	if err != nil {
		panic(err)
	}
	defer db.Close()
	if _, err := db.CreateTable(store.TableDef{
		Name:    "contracts",
		Key:     []store.KeyColumn{{Name: "contract_id", Type: store.String}},
		GroupBy: []string{"user_id"},
	}); err != nil {
		panic(err)
	}
	upsert := func(contract, user string, amount int, at string) int64 {
		c, err := txn.Update(db, func(tx *txn.Tx) error {
			_, err := tx.Upsert("contracts", store.Key{contract}, store.Attrs{"user_id": user, "amount": amount}, day(at))
			return err
		})
		if err != nil {
			panic(err)
		}
		return c.Tx
	}
	upsert("c1", "u1", 100, "2024-01-01")
	upsert("c2", "u1", 40, "2024-01-05")
	loaded := upsert("c3", "u2", 70, "2024-01-03")
	upsert("c1", "u1", 120, "2024-01-01") // a correction arrives later

	rows := []query.LeftRow{
		{Group: store.Key{"u2"}, TS: day("2024-01-04")},
		{Group: store.Key{"u1"}, TS: day("2024-01-02")},
		{Group: store.Key{"u1"}, TS: day("2024-01-06")},
		{Group: store.Key{"u1"}, TS: day("2024-01-06"), Tx: loaded}, // as known before the correction
		{Group: store.Key{"u9"}, TS: day("2024-01-06")},
	}
	var aggs []query.Agg
	for _, spec := range []string{"sum(amount)", "count", "sum(amount):3d"} {
		a, err := query.ParseAgg(spec)
		if err != nil {
			panic(err)
		}
		aggs = append(aggs, a)
	}
	names, _ := query.FeatureNames(aggs)
	fmt.Println(names)
	for r, err := range query.Backfill(db, "contracts", rows, aggs, query.BackfillOptions{}) {
		if err != nil {
			panic(err)
		}
		fmt.Println(r.Index, r.Values)
	}
	// Output:
	// [amount_sum count amount_sum_3d]
	// 0 [70 1 70]
	// 1 [120 1 120]
	// 2 [160 2 40]
	// 3 [140 2 40]
	// 4 [<nil> 0 <nil>]
}
