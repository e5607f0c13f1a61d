package store_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// Back up a store while it is open, then open the backup as a store of its own.
func ExampleDB_Backup() {
	dir, _ := os.MkdirTemp("", "bitempo-example-")
	defer os.RemoveAll(dir)
	quiet := slog.New(slog.DiscardHandler)
	db, err := store.Open(filepath.Join(dir, "live"), store.Options{Logger: quiet})
	if err != nil {
		panic(err)
	}
	defer db.Close()
	if _, err := db.CreateTable(store.TableDef{Name: "accounts", Key: []store.KeyColumn{{Name: "id", Type: store.String}}}); err != nil {
		panic(err)
	}
	if _, err := txn.Update(db, func(tx *txn.Tx) error {
		return tx.Put("accounts", store.Key{"a1"}, store.Attrs{"plan": "pro"}, 0, store.Infinity)
	}); err != nil {
		panic(err)
	}
	// Writers may keep committing while the backup is taken.
	if err := db.Backup(context.Background(), filepath.Join(dir, "backup")); err != nil {
		panic(err)
	}
	backup, err := store.Open(filepath.Join(dir, "backup"), store.Options{ReadOnly: true, Logger: quiet})
	if err != nil {
		panic(err)
	}
	defer backup.Close()
	rep, _ := store.Verify(backup)
	fmt.Println(rep.OK(), backup.LastTx() == db.LastTx())
	// Output: true true
}

// Import a record whose history was recorded elsewhere: asserted at
// transaction time 100, retired at 200.
func ExampleDB_BeginImport() {
	db, _ := store.Open("example", store.Options{InMemory: true})
	defer db.Close()
	t, _ := db.CreateTable(store.TableDef{Name: "prices", Key: []store.KeyColumn{{Name: "sku", Type: store.String}}})
	im, err := db.BeginImport()
	if err != nil {
		panic(err)
	}
	defer im.Abort()
	if err := im.Record(t, store.Key{"p1"}, 0, store.Infinity, 100, 200, 1, false, store.Attrs{"price": 9.5}); err != nil {
		panic(err)
	}
	if err := im.Record(t, store.Key{"p1"}, 0, store.Infinity, 200, store.Infinity, 1, false, store.Attrs{"price": 10.0}); err != nil {
		panic(err)
	}
	if err := im.Commit(); err != nil {
		panic(err)
	}
	rep, _ := store.Verify(db)
	fmt.Println(rep.OK(), db.LastTx())
	// Output: true 200
}
