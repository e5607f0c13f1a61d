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

// ResolveRows reads each answer of a batch join as a row with the accessors
// of a snapshot row: the same AttrRef reads the region of either. The rows
// come on the merge's goroutines, so each answer is written to its fact's
// own slot.
func ExampleResolveRows() {
	db := openCustomers()
	defer db.Close()
	facts := []query.Fact{
		{Key: store.Key{102}, At: day("2024-02-29")},
		{Key: store.Key{101}, At: day("2019-12-31")}, // before Alice's first version
		{Key: store.Key{101}, At: day("2022-03-01")},
	}
	region := store.NewAttrRef("region")
	out := make([]string, len(facts))
	err := query.ResolveRows(db, "customers", facts, query.ResolveOptions{Miss: query.MissNull, Attrs: true},
		func(r *query.ResolvedRow) error {
			if !r.Found() {
				out[r.Index] = r.Reason.String()
				return nil
			}
			name, _ := r.Text(region)
			out[r.Index] = fmt.Sprintf("sk %d %s from %s", r.SK, name, date(r.ValidFrom))
			return nil
		})
	if err != nil {
		log.Fatal(err)
	}
	for _, line := range out {
		fmt.Println(line)
	}
	// Output:
	// sk 3 North from 2021-05-01
	// before the first version
	// sk 2 West from 2022-03-01
}
