package txn_test

import (
	"fmt"
	"log"
	"time"

	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// ExampleApply feeds a changes table a CDC feed that arrives out of order: a
// change landing between two known ones, a delete arriving before a change that
// precedes it, a duplicate, and a replayed batch. The history is the same as if
// the events had arrived in order, and every batch is one transaction, so the
// table as it stood after each batch stays readable.
func ExampleApply() {
	db, err := store.Open("", store.Options{InMemory: true})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	customers, err := db.CreateTable(store.TableDef{
		Name: "customers", Kind: store.Changes, Axis: store.AxisDate,
		Key:   []store.KeyColumn{{Name: "id", Type: store.String}},
		Track: []string{"city"}, // a tier change alone makes no new version
	})
	if err != nil {
		log.Fatal(err)
	}
	day := func(d string) int64 {
		t, _ := time.Parse("2006-01-02", d)
		return t.UnixMicro()
	}
	upsert := func(d, city, tier string) txn.Event {
		return txn.Event{Key: store.Key{"c42"}, At: day(d), Op: txn.OpUpsert, Attrs: store.Attrs{"city": city, "tier": tier}}
	}
	batches := []struct {
		id     string
		events []txn.Event
	}{
		{"b1", []txn.Event{upsert("2024-03-01", "Oslo", "gold"), upsert("2024-03-20", "Bergen", "gold")}},
		{"b2", []txn.Event{
			{Key: store.Key{"c42"}, At: day("2024-04-30"), Op: txn.OpDelete}, // the account is closed
			upsert("2024-03-11", "Trondheim", "gold"),                        // late: lands between
		}},
		{"b3", []txn.Event{
			upsert("2024-03-25", "Bergen", "platinum"), // late, same city: joins the Bergen run
			upsert("2024-03-01", "Oslo", "gold"),       // a duplicate
		}},
		{"b2", nil}, // a replayed batch id
	}
	txOf := map[string]int64{}
	for _, b := range batches {
		res, err := txn.Apply(db, "customers", b.id, b.events)
		if err != nil {
			log.Fatal(err)
		}
		if res.Replayed {
			fmt.Printf("%s: replayed, nothing written\n", b.id)
			continue
		}
		txOf[b.id] = res.Tx
		fmt.Printf("%s: accepted %d, duplicates %d, inserted %d, closed %d, updated %d\n",
			b.id, res.Accepted, res.Duplicates, res.Inserted, res.Closed, res.Updated)
	}

	tuple, _ := customers.AppendKey(nil, store.Key{"c42"})
	date := func(t int64) string {
		if t == store.Infinity {
			return "+inf"
		}
		return time.UnixMicro(t).UTC().Format("2006-01-02")
	}
	s, err := db.Snapshot()
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	for _, as := range []string{"b1", "b2", "b3"} {
		fmt.Printf("as of %s:\n", as)
		versions, err := s.KeyVersions(customers, tuple, txOf[as])
		if err != nil {
			log.Fatal(err)
		}
		for _, v := range versions {
			fmt.Printf("  [%s, %s) sk %d %s %s\n", date(v.ValidFrom), date(v.ValidTo), v.SK, v.Attrs["city"], v.Attrs["tier"])
		}
	}
	// Output:
	// b1: accepted 2, duplicates 0, inserted 2, closed 0, updated 0
	// b2: accepted 2, duplicates 0, inserted 1, closed 2, updated 0
	// b3: accepted 1, duplicates 1, inserted 0, closed 0, updated 1
	// b2: replayed, nothing written
	// as of b1:
	//   [2024-03-01, 2024-03-20) sk 1 Oslo gold
	//   [2024-03-20, +inf) sk 2 Bergen gold
	// as of b2:
	//   [2024-03-01, 2024-03-11) sk 1 Oslo gold
	//   [2024-03-11, 2024-03-20) sk 3 Trondheim gold
	//   [2024-03-20, 2024-04-30) sk 2 Bergen gold
	// as of b3:
	//   [2024-03-01, 2024-03-11) sk 1 Oslo gold
	//   [2024-03-11, 2024-03-20) sk 3 Trondheim gold
	//   [2024-03-20, 2024-04-30) sk 2 Bergen platinum
}
