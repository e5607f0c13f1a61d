package txn_test

import (
	"errors"
	"fmt"
	"log"

	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// A customer asks to be forgotten: every version, at every transaction time,
// goes; the change feed keeps that an erasure happened, and why.
func ExampleTx_EraseFor() {
	db, err := store.Open("", store.Options{InMemory: true})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	if _, err := db.CreateTable(store.TableDef{Name: "customers", Key: []store.KeyColumn{{Name: "id", Type: store.String}}}); err != nil {
		log.Fatal(err)
	}
	first, err := txn.Update(db, func(tx *txn.Tx) error {
		_, err := tx.Upsert("customers", store.Key{"c1"}, store.Attrs{"name": "Ada", "city": "Oslo"}, day("2024-01-01"))
		return err
	})
	if err != nil {
		log.Fatal(err)
	}
	v, err := query.Get(db, "customers", store.Key{"c1"}, query.AsOf{Valid: day("2024-02-01"), Tx: query.Latest}, query.GetOptions{})
	if err != nil {
		log.Fatal(err)
	}
	erased, err := txn.Update(db, func(tx *txn.Tx) error {
		return tx.EraseFor("customers", store.Key{"c1"}, "erasure request 114")
	})
	if err != nil {
		log.Fatal(err)
	}

	// Even a read as of the first commit finds nothing.
	_, err = query.Get(db, "customers", store.Key{"c1"}, query.AsOf{Valid: day("2024-02-01"), Tx: first.Tx}, query.GetOptions{})
	fmt.Println("read as of the first commit:", errors.Is(err, query.ErrNotFound))
	_, err = query.GetBySK(db, "customers", v.SK, query.Latest, query.GetOptions{})
	fmt.Println("its surrogate key:", errors.Is(err, query.ErrErasedSK))
	for c, err := range query.Changes(db, "customers", 0, query.Latest, "", query.ChangesOptions{}) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(c.Op, c.Tx == erased.Tx, c.Erasure.Records, c.Erasure.Reason)
	}
	// Output:
	// read as of the first commit: true
	// its surrogate key: true
	// erased true 1 erasure request 114
}
