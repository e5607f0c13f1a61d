package query_test

import (
	"fmt"
	"log"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
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
