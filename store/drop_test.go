package store_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// rawKeys returns every stored key.
func rawKeys(t *testing.T, db *store.DB) [][]byte {
	t.Helper()
	s, err := db.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var keys [][]byte
	for kv, err := range s.RawScan(nil, nil) {
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, kv.Key)
	}
	return keys
}

func TestDropTable(t *testing.T) {
	db := openGrouped(t) // contracts: periods, grouped by user_id
	feed, err := db.CreateTable(store.TableDef{Name: "feed", Key: []store.KeyColumn{{Name: "id", Type: store.String}}, Kind: store.Changes})
	if err != nil {
		t.Fatal(err)
	}
	update(t, db, func(tx *txn.Tx) error {
		if err := tx.Put("contracts", store.Key{"k1"}, store.Attrs{"user_id": "u1", "amount": int64(5)}, 0, 100); err != nil {
			return err
		}
		_, err := tx.Upsert("contracts", store.Key{"k1"}, store.Attrs{"user_id": "u1", "amount": int64(6)}, 50)
		return err
	})
	if _, err := txn.Apply(db, "feed", "b1", []txn.Event{{Key: store.Key{"a"}, At: 1, Op: txn.OpUpsert, Attrs: store.Attrs{"x": int64(1)}}}); err != nil {
		t.Fatal(err)
	}
	contracts, _ := db.Table("contracts")
	before := len(rawKeys(t, db))

	if err := db.DropTable("feed"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Table("feed"); !errors.Is(err, store.ErrUnknownTable) {
		t.Fatalf("dropped table still resolves: %v", err)
	}
	if err := db.DropTable("feed"); !errors.Is(err, store.ErrUnknownTable) {
		t.Fatalf("second drop: %v", err)
	}
	for _, k := range rawKeys(t, db) {
		if len(k) >= 5 && k[0] >= 0x03 && bytes.Equal(k[1:5], []byte{0, 0, 0, byte(feed.ID)}) {
			t.Fatalf("a key of the dropped table is left: %x", k)
		}
		if bytes.Contains(k, []byte("feed")) {
			t.Fatalf("the catalog entry of the dropped table is left: %q", k)
		}
	}
	if after := len(rawKeys(t, db)); after >= before {
		t.Fatalf("drop removed no keys: %d before, %d after", before, after)
	}
	mustVerify(t, db)
	// The other table is intact, and the name can be used again, empty.
	if vs := versions(t, db, contracts, "k1"); len(vs) != 2 {
		t.Fatalf("contracts lost versions: %v", vs)
	}
	again, err := db.CreateTable(store.TableDef{Name: "feed", Key: []store.KeyColumn{{Name: "id", Type: store.String}}, Kind: store.Changes})
	if err != nil {
		t.Fatal(err)
	}
	if again.ID == feed.ID {
		t.Fatal("table id reused")
	}
	if vs := versions(t, db, again, "a"); len(vs) != 0 {
		t.Fatalf("recreated table is not empty: %v", vs)
	}
	if err := db.DropTable("contracts"); err != nil {
		t.Fatal(err)
	}
	mustVerify(t, db)
}

func versions(t *testing.T, db *store.DB, tb *store.Table, id string) []store.Version {
	t.Helper()
	s, err := db.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tuple, _ := tb.AppendKey(nil, store.Key{id})
	vs, err := s.KeyVersions(tb, tuple, store.Infinity)
	if err != nil {
		t.Fatal(err)
	}
	return vs
}
