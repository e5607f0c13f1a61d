package txn_test

import (
	"errors"
	"testing"
	"time"

	"github.com/bitempo/bitempo/internal/sealed"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/bitempo/bitempo/internal/testutil"
	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// TestReentrantCalls calls the store's writing methods and Close from inside a
// write transaction on the same goroutine: each returns ErrReentrant at once,
// rather than waiting forever for the transaction it is part of, and the
// transaction then commits. A write from another goroutine is not re-entrant:
// it waits for the transaction and then runs.
func TestReentrantCalls(t *testing.T) {
	db := atomicOpen(t, vfs.NewMem())
	defer db.Close()
	customers, err := db.Table("customers")
	if err != nil {
		t.Fatal(err)
	}
	calls := map[string]func() error{
		"Update": func() error {
			_, err := txn.Update(db, func(*txn.Tx) error { return nil })
			return err
		},
		"CreateTable": func() error {
			_, err := db.CreateTable(store.TableDef{Name: "x", Key: []store.KeyColumn{{Name: "id", Type: store.String}}})
			return err
		},
		"Close":            db.Close,
		"DeclareAttrNames": func() error { return db.DeclareAttrNames(customers, []string{"z"}) },
		"RawWrite":         func() error { return db.RawWrite(sealed.Key{}, store.RawKV{Key: []byte{0xf0}, Value: []byte{1}}) },
		"BeginWrite": func() error {
			_, err := db.BeginWrite(sealed.Key{})
			return err
		},
	}
	for name, call := range calls {
		done := make(chan error, 1)
		go func() {
			_, err := txn.Update(db, func(tx *txn.Tx) error {
				if err := call(); !errors.Is(err, store.ErrReentrant) {
					t.Errorf("%s inside Update: got %v, want ErrReentrant", name, err)
				}
				return tx.Put("prices", store.Key{int64(1)}, store.Attrs{"amount": 1}, 0, 10)
			})
			done <- err
		}()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("%s: the transaction failed: %v", name, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s inside Update deadlocked", name)
		}
	}

	// Another goroutine's write waits for the transaction, then runs.
	inner := make(chan error, 1)
	if _, err := txn.Update(db, func(tx *txn.Tx) error {
		go func() {
			_, err := txn.Update(db, func(tx *txn.Tx) error {
				return tx.Put("prices", store.Key{int64(2)}, store.Attrs{"amount": 2}, 0, 10)
			})
			inner <- err
		}()
		select {
		case err := <-inner:
			t.Errorf("a concurrent writer ran inside another transaction: %v", err)
		case <-time.After(50 * time.Millisecond):
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := <-inner; err != nil {
		t.Fatalf("the concurrent writer: %v", err)
	}
	testutil.Verify(t, db)
}
