package typed_test

import (
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
	"github.com/bitempo/bitempo/typed"
)

// The README's first program with a struct: a customer moves from Oslo to
// Bergen on 11 March, and reads return Customer values with their periods.
func Example() {
	type Customer struct {
		ID       string     `bitempo:"id,key"`
		City     string     `bitempo:"city"`
		Birthday *time.Time `bitempo:"birthday"` // nullable
	}
	db, err := store.Open("", store.Options{InMemory: true})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	customers, err := typed.New[Customer]("customers") // checks the struct
	if err != nil {
		log.Fatal(err)
	}
	def := customers.Def() // name and key columns from the struct
	def.Axis = store.AxisDate
	if _, err := db.CreateTable(def); err != nil {
		log.Fatal(err)
	}

	born := time.Date(1990, 5, 17, 0, 0, 0, 0, time.UTC)
	_, err = txn.Update(db, func(tx *txn.Tx) error {
		_, err := customers.Upsert(tx, Customer{ID: "c1", City: "Oslo", Birthday: &born}, day("2024-01-01"))
		return err
	})
	if err != nil {
		log.Fatal(err)
	}
	_, err = txn.Update(db, func(tx *txn.Tx) error {
		_, err := customers.Upsert(tx, Customer{ID: "c1", City: "Bergen", Birthday: &born}, day("2024-03-11"))
		return err
	})
	if err != nil {
		log.Fatal(err)
	}

	v, err := customers.Get(db, store.Key{"c1"}, query.AsOf{Valid: day("2024-03-08")})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(v.Value.City, v.Value.Birthday.Format(time.DateOnly), v.SK, time.UnixMicro(v.ValidTo).UTC().Format(time.DateOnly))

	res, err := customers.Resolve(db, []query.Fact{{Key: store.Key{"c1"}, At: day("2024-03-12")}}, query.ResolveOptions{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res[0].Value.City, res[0].SK)

	_, err = customers.Get(db, store.Key{"c1"}, query.AsOf{Valid: day("2023-12-31")})
	fmt.Println(errors.Is(err, query.ErrBeforeFirst))
	// Output:
	// Oslo 1990-05-17 1 2024-03-11
	// Bergen 2
	// true
}

// A struct may map only some of a table's attributes: every read through it
// decodes only those, stepping over the others in each stored record.
func ExampleTable_narrow() {
	type Customer struct {
		ID    string `bitempo:"id,key"`
		City  string `bitempo:"city"`
		Notes string `bitempo:"notes"`
		Tier  string `bitempo:"tier"`
	}
	type CustomerCity struct { // a narrow view of the same table
		ID   string `bitempo:"id,key"`
		City string `bitempo:"city"`
	}
	db, err := store.Open("", store.Options{InMemory: true})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	customers, err := typed.New[Customer]("customers")
	if err != nil {
		log.Fatal(err)
	}
	cities, err := typed.New[CustomerCity]("customers")
	if err != nil {
		log.Fatal(err)
	}
	if _, err := db.CreateTable(customers.Def()); err != nil {
		log.Fatal(err)
	}
	_, err = txn.Update(db, func(tx *txn.Tx) error {
		_, err := customers.Upsert(tx, Customer{ID: "c1", City: "Oslo", Notes: "a long note", Tier: "gold"}, 0)
		return err
	})
	if err != nil {
		log.Fatal(err)
	}
	v, err := cities.Get(db, store.Key{"c1"}, query.AsOf{Valid: 10})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%+v\n", v.Value)
	// Output:
	// {ID:c1 City:Oslo}
}
