package query_test

import (
	"fmt"
	"log"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// HistoryRows reads the same versions as HistoryRange in place, here two
// to a page: one reused row, its attributes read by reference, and the
// cursor of the next page, as HistoryPage makes it.
func ExampleHistoryRows() {
	db := openCustomers()
	defer db.Close()
	region := store.NewAttrRef("region")
	var id encoding.Value
	opts := query.HistoryOptions{Limit: 2}
	for page := 1; ; page++ {
		next, err := query.HistoryRows(db, "customers", query.KeyRange{}, store.NegInfinity, store.Infinity, opts,
			func(r *store.Row) bool {
				if err := r.KeyValue(0, &id); err != nil {
					log.Fatal(err)
				}
				name, _ := r.Text(region)
				fmt.Println(page, id.Int, string(name), date(r.ValidFrom), date(r.ValidTo))
				return true
			})
		if err != nil {
			log.Fatal(err)
		}
		if next == "" {
			break
		}
		opts.Cursor = next
	}
	// Output:
	// 1 101 East 2020-01-01 2022-03-01
	// 1 101 West 2022-03-01 +inf
	// 2 102 North 2021-05-01 +inf
}

// ChangesRows reads the change feed in place: a correction after the load
// moves Alice's move to the West from 2022-03-01 back to 2022-02-01, which
// retires both her versions and asserts two new ones. The cursor of the last
// change read is where a consumer polls from next.
func ExampleChangesRows() {
	db := openCustomers()
	defer db.Close()
	loaded := db.LastTx()
	_, err := txn.Update(db, func(tx *txn.Tx) error {
		_, err := tx.Upsert("customers", store.Key{101}, store.Attrs{"name": "Alice Smith", "region": "West"}, day("2022-02-01"))
		return err
	})
	if err != nil {
		log.Fatal(err)
	}
	region := store.NewAttrRef("region")
	var id encoding.Value
	var resume string
	err = query.ChangesRows(db, "customers", loaded, query.Latest, "", query.ChangesOptions{}, func(c *query.ChangeRow) bool {
		if err := c.Row.KeyValue(0, &id); err != nil {
			log.Fatal(err)
		}
		name, _ := c.Row.Text(region)
		fmt.Println(c.Op, id.Int, string(name), date(c.Row.ValidFrom), date(c.Row.ValidTo))
		resume = c.Cursor()
		return true
	})
	if err != nil {
		log.Fatal(err)
	}
	n := 0
	err = query.ChangesRows(db, "customers", loaded, query.Latest, resume, query.ChangesOptions{}, func(*query.ChangeRow) bool {
		n++
		return true
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("after the cursor:", n)
	// Output:
	// retired 101 East 2020-01-01 2022-03-01
	// retired 101 West 2022-03-01 +inf
	// asserted 101 East 2020-01-01 2022-02-01
	// asserted 101 West 2022-02-01 +inf
	// after the cursor: 0
}
