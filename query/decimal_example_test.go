package query_test

import (
	"errors"
	"fmt"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// Decimal amounts aggregate exactly: the sum keeps the inputs' scale, the
// average rounds half to even at that scale + 4, and a sum beyond 18 digits is
// an error rather than a float.
func ExampleAggregate_decimal() {
	db, err := store.Open("", store.Options{InMemory: true})
	if err != nil {
		panic(err)
	}
	defer db.Close()
	if _, err := db.CreateTable(store.TableDef{
		Name: "payments", Key: []store.KeyColumn{{Name: "id", Type: store.String}},
		GroupBy: []string{"account"}, Axis: store.AxisInt,
	}); err != nil {
		panic(err)
	}
	_, err = txn.Update(db, func(tx *txn.Tx) error {
		for id, amount := range map[string]string{"p1": "0.10", "p2": "0.20", "p3": "-0.05", "big1": "9999999999999999.99", "big2": "0.01"} {
			account := "a"
			if id == "big1" || id == "big2" {
				account = "b"
			}
			d, err := encoding.ParseDecimal(amount)
			if err != nil {
				return err
			}
			if err := tx.Put("payments", store.Key{id}, store.Attrs{"account": account, "amount": d}, 0, 10); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		panic(err)
	}
	aggs := []query.Agg{{Op: query.AggSum, Input: "amount"}, {Op: query.AggAvg, Input: "amount"}, {Op: query.AggMax, Input: "amount"}}
	f, err := query.Aggregate(db, "payments", store.Key{"a"}, query.AsOf{Valid: 5}, aggs)
	if err != nil {
		panic(err)
	}
	fmt.Println(f)
	_, err = query.Aggregate(db, "payments", store.Key{"b"}, query.AsOf{Valid: 5}, aggs[:1])
	fmt.Println(errors.Is(err, query.ErrAggOverflow), err)
	// Output:
	// amount_sum=0.25 amount_avg=0.083333 amount_max=0.20
	// true bitempo: feature amount_sum of table "payments" group b: decimal sum has more than 18 digits
}
