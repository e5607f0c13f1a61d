package query_test

import (
	"errors"
	"testing"

	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

func TestSmoke(t *testing.T) {
	clock := int64(100)
	db, err := store.Open("db", store.Options{InMemory: true, Clock: func() int64 { clock++; return clock }})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.CreateTable(store.TableDef{Name: "customers", Key: []store.KeyColumn{{Name: "id", Type: store.String}}}); err != nil {
		t.Fatal(err)
	}
	c1, err := txn.Update(db, func(tx *txn.Tx) error {
		_, err := tx.Upsert("customers", store.Key{"c1"}, store.Attrs{"city": "Oslo"}, 1)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = txn.Update(db, func(tx *txn.Tx) error {
		_, err := tx.Upsert("customers", store.Key{"c1"}, store.Attrs{"city": "Bergen"}, 11)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	v, err := query.Get(db, "customers", store.Key{"c1"}, query.AsOf{Valid: 8}, query.GetOptions{})
	if err != nil || v.Attrs["city"] != "Oslo" {
		t.Fatalf("8: %v %v", v, err)
	}
	v, err = query.Get(db, "customers", store.Key{"c1"}, query.AsOf{Valid: 12}, query.GetOptions{})
	if err != nil || v.Attrs["city"] != "Bergen" {
		t.Fatalf("12: %v %v", v, err)
	}
	v, err = query.Get(db, "customers", store.Key{"c1"}, query.AsOf{Valid: 12, Tx: c1.Tx}, query.GetOptions{})
	if err != nil || v.Attrs["city"] != "Oslo" {
		t.Fatalf("12 old: %v %v", v, err)
	}
	_, err = query.Get(db, "customers", store.Key{"c1"}, query.AsOf{Valid: 0}, query.GetOptions{})
	if !errors.Is(err, query.ErrBeforeFirst) {
		t.Fatal(err)
	}
	rep, err := store.Verify(db)
	if err != nil || !rep.OK() {
		t.Fatal(rep, err)
	}
	t.Log(rep)
}
