package txn_test

import (
	"errors"
	"testing"

	"github.com/bitempo/bitempo/internal/enginetest"
	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// The erasure commands of the scenario files (periods and apply):
//
//	erase table=T key=K [reason=R]       one transaction that erases the key
//	changes table=T since=N [until=N]    the change feed of the window
//	bysk table=T sk=N [tx=N]             GetBySK
//	erasures table=T key=K               the transactions that erased the key
//	raw table=T                          how many keys each keyspace holds for the table
//
// (in a txn block, "erase table=T key=K" is an operation like the others).

// TestEraseScenarios runs the scenario files in testdata/erase with the
// commands of TestPeriods, the erasure commands above and
//
//	create ... kind=changes [group=a,b] [lateness=N]   create with a kind, a group index, a lateness horizon
//	apply table=T batch=B                 one Apply; lines "K @AT upsert name=value..." or "K @AT delete"
//	events table=T key=K                  the key's event log
//
// Transaction times come from a clock stuck at 0: commits get tx 1, 2, 3, ...
func TestEraseScenarios(t *testing.T) {
	enginetest.WalkScenarios(t, "testdata/erase", enginetest.Memory, enginetest.Erase)
}

// TestEraseErrors: an erasure of a key the table never held is a typed error
// and writes nothing; a transaction may not erase a key and write it.
func TestEraseErrors(t *testing.T) {
	db, err := store.Open("", store.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.CreateTable(store.TableDef{Name: "c", Key: []store.KeyColumn{{Name: "id", Type: store.String}}}); err != nil {
		t.Fatal(err)
	}
	before := db.LastTx()
	_, err = txn.Update(db, func(tx *txn.Tx) error { return tx.Erase("c", store.Key{"nobody"}) })
	var ee *store.EraseError
	if !errors.Is(err, store.ErrUnknownKey) || !errors.As(err, &ee) || ee.Table != "c" {
		t.Fatalf("erase of an unknown key: %v", err)
	}
	if db.LastTx() != before || db.PurgePending() {
		t.Fatal("an erase of an unknown key wrote something")
	}
	if _, err := txn.Update(db, func(tx *txn.Tx) error { return tx.Put("c", store.Key{"a"}, store.Attrs{"x": 1}, 0, 10) }); err != nil {
		t.Fatal(err)
	}
	for name, fn := range map[string]func(tx *txn.Tx) error{
		"write then erase": func(tx *txn.Tx) error {
			if err := tx.Put("c", store.Key{"a"}, store.Attrs{"x": 2}, 0, 5); err != nil {
				return err
			}
			return tx.Erase("c", store.Key{"a"})
		},
		"erase then write": func(tx *txn.Tx) error {
			if err := tx.Erase("c", store.Key{"a"}); err != nil {
				return err
			}
			return tx.Put("c", store.Key{"a"}, store.Attrs{"x": 2}, 0, 5)
		},
		"erase twice": func(tx *txn.Tx) error {
			if err := tx.Erase("c", store.Key{"a"}); err != nil {
				return err
			}
			return tx.Erase("c", store.Key{"a"})
		},
	} {
		if _, err := txn.Update(db, fn); !errors.Is(err, txn.ErrErased) {
			t.Errorf("%s: %v, want txn.ErrErased", name, err)
		}
	}
	if _, err := txn.Update(db, func(tx *txn.Tx) error { return tx.Erase("c", store.Key{1}) }); !errors.Is(err, store.ErrKeyShape) {
		t.Errorf("erase of a malformed key: %v", err)
	}
	// A read before the erasure is fine.
	if _, err := txn.Update(db, func(tx *txn.Tx) error {
		if _, _, err := tx.Get("c", store.Key{"a"}, 3); err != nil {
			return err
		}
		return tx.Erase("c", store.Key{"a"})
	}); err != nil {
		t.Fatal(err)
	}
	if err := enginetest.VerifyStore(db); err != nil {
		t.Fatal(err)
	}
}
