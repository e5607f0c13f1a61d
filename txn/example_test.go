package txn_test

import (
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

func day(s string) int64 {
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		panic(err)
	}
	return t.UnixMicro()
}

// A customer moves from Oslo to Bergen on 11 March: orders resolve to the city in
// effect on their own date, and the state as known before the move was recorded
// stays readable.
func ExampleUpdate() {
	db, err := store.Open("", store.Options{InMemory: true})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	_, err = db.CreateTable(store.TableDef{
		Name: "customers",
		Key:  []store.KeyColumn{{Name: "id", Type: store.String}},
		Axis: store.AxisDate,
	})
	if err != nil {
		log.Fatal(err)
	}

	first, err := txn.Update(db, func(tx *txn.Tx) error {
		_, err := tx.Upsert("customers", store.Key{"c1"}, store.Attrs{"city": "Oslo"}, day("2024-01-01"))
		return err
	})
	if err != nil {
		log.Fatal(err)
	}
	// Closing Oslo and opening Bergen happen in one commit.
	_, err = txn.Update(db, func(tx *txn.Tx) error {
		_, err := tx.Upsert("customers", store.Key{"c1"}, store.Attrs{"city": "Bergen"}, day("2024-03-11"))
		return err
	})
	if err != nil {
		log.Fatal(err)
	}

	for _, order := range []string{"2024-03-08", "2024-03-12"} {
		v, err := query.Get(db, "customers", store.Key{"c1"}, query.AsOf{Valid: day(order)}, query.GetOptions{})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("order on %s: %s (sk %d)\n", order, v.Attrs["city"], v.SK)
	}
	v, _ := query.Get(db, "customers", store.Key{"c1"}, query.AsOf{Valid: day("2024-03-12"), Tx: first.Tx}, query.GetOptions{})
	fmt.Printf("as known before the move was recorded: %s\n", v.Attrs["city"])

	_, err = query.Get(db, "customers", store.Key{"c1"}, query.AsOf{Valid: day("2023-12-31")}, query.GetOptions{})
	fmt.Println(errors.Is(err, query.ErrBeforeFirst))
	// Output:
	// order on 2024-03-08: Oslo (sk 1)
	// order on 2024-03-12: Bergen (sk 2)
	// as known before the move was recorded: Oslo
	// true
}

// Put corrects a period with FOR PORTION OF semantics: the version it lands in is
// split, and both remnants keep their attributes.
func ExampleTx_Put() {
	db, _ := store.Open("", store.Options{InMemory: true})
	defer db.Close()
	_, _ = db.CreateTable(store.TableDef{Name: "prices", Key: []store.KeyColumn{{Name: "sku", Type: store.String}}, Axis: store.AxisInt})
	_, err := txn.Update(db, func(tx *txn.Tx) error {
		if err := tx.Put("prices", store.Key{"apple"}, store.Attrs{"price": 10}, 0, 100); err != nil {
			return err
		}
		return tx.Put("prices", store.Key{"apple"}, store.Attrs{"price": 8}, 40, 60)
	})
	if err != nil {
		log.Fatal(err)
	}
	_ = txn.View(db, func(s *store.Snapshot) error {
		tb, _ := s.Table("prices")
		tuple, _ := tb.AppendKey(nil, store.Key{"apple"})
		versions, err := s.KeyVersions(tb, tuple, s.LastTx())
		for _, v := range versions {
			fmt.Printf("[%d, %d) price %v\n", v.ValidFrom, v.ValidTo, v.Attrs["price"])
		}
		return err
	})
	// Output:
	// [0, 40) price 10
	// [40, 60) price 8
	// [60, 100) price 10
}
