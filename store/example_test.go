package store_test

import (
	"errors"
	"fmt"
	"log"

	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// Open a store, declare a table in its catalog, write through package txn and
// check every invariant with Verify.
func ExampleOpen() {
	db, err := store.Open("", store.Options{InMemory: true}) // a path for a store on disk
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	t, err := db.CreateTable(store.TableDef{
		Name:  "prices",
		Key:   []store.KeyColumn{{Name: "sku", Type: store.String}, {Name: "store", Type: store.Int64}},
		Axis:  store.AxisInt,
		Track: []string{"price"}, // a change of price makes a version; of anything else, not
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(t.Name, t.Kind, t.Tracked("price"), t.Tracked("note"))

	_, err = db.CreateTable(store.TableDef{Name: "prices", Key: t.Key})
	fmt.Println(errors.Is(err, store.ErrTableExists))
	_, err = db.Table("nope")
	fmt.Println(errors.Is(err, store.ErrUnknownTable))

	_, err = txn.Update(db, func(tx *txn.Tx) error {
		return tx.Put("prices", store.Key{"sku-1", 7}, store.Attrs{"price": 9.5}, 0, 100)
	})
	if err != nil {
		log.Fatal(err)
	}
	report, err := store.Verify(db)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(report.OK())
	// Output:
	// prices periods true false
	// true
	// true
	// true
}

// A snapshot is a consistent view: reads through it see no later commit, and
// share its iterators.
func ExampleDB_Snapshot() {
	db, _ := store.Open("", store.Options{InMemory: true})
	defer db.Close()
	t, _ := db.CreateTable(store.TableDef{Name: "c", Key: []store.KeyColumn{{Name: "id", Type: store.String}}, Axis: store.AxisInt})
	put := func(city string, from int64) {
		_, err := txn.Update(db, func(tx *txn.Tx) error {
			_, err := tx.Upsert("c", store.Key{"c1"}, store.Attrs{"city": city}, from)
			return err
		})
		if err != nil {
			log.Fatal(err)
		}
	}
	put("Oslo", 10)
	s, err := db.Snapshot()
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	put("Bergen", 20) // after the snapshot was taken

	tuple, _ := t.AppendKey(nil, store.Key{"c1"})
	v, reason, err := s.VersionAt(t, tuple, 25, s.LastTx())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(reason, v.Attrs["city"], v.ValidFrom, v.ValidTo == store.Infinity)
	_, reason, _ = s.VersionAt(t, tuple, 5, s.LastTx())
	fmt.Println(reason)
	// Output:
	// found Oslo 10 true
	// before the first version
}
