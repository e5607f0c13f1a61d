package query_test

import (
	"fmt"
	"log"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
)

// SnapshotRows reads the same versions as Snapshot in place: one reused row,
// its attributes read by reference, no map per row.
func ExampleSnapshotRows() {
	db := openCustomers()
	defer db.Close()
	region := store.NewAttrRef("region")
	var id encoding.Value
	err := query.SnapshotRows(db, "customers", query.AsOf{Valid: day("2021-06-15")}, query.KeyRange{}, query.SnapshotOptions{},
		func(r *store.Row) bool {
			if err := r.KeyValue(0, &id); err != nil {
				log.Fatal(err)
			}
			name, _ := r.Text(region)
			fmt.Println(id.Int, string(name), date(r.ValidFrom), date(r.ValidTo))
			return true
		})
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// 101 East 2020-01-01 2022-03-01
	// 102 North 2021-05-01 +inf
}
