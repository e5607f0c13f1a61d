package store_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// TestSpilledTransaction writes one transaction through Flush with a tiny
// spill budget, over keys that already have versions (so it retires and
// deletes current keys), and checks it reads back like the same writes kept
// in memory: atomically at one transaction time, Verify clean, no spill files
// left, and the store's meta (last tx, sk counters) reopened from the ingest.
func TestSpilledTransaction(t *testing.T) {
	build := func(spill bool) (string, *store.DB) {
		dir := filepath.Join(t.TempDir(), "db")
		db, err := store.Open(dir, store.Options{NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.CreateTable(store.TableDef{Name: "customers", Key: []store.KeyColumn{{Name: "id", Type: store.String}}}); err != nil {
			t.Fatal(err)
		}
		if _, err := txn.Update(db, func(tx *txn.Tx) error {
			for i := range 300 {
				if _, err := tx.Upsert("customers", store.Key{fmt.Sprintf("k%03d", i)}, store.Attrs{"n": int64(i)}, 10); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		c, err := txn.Update(db, func(tx *txn.Tx) error {
			if spill {
				if err := tx.SpillTo(dir, 2_000); err != nil {
					return err
				}
			}
			for i := range 600 {
				for _, at := range []int64{5, 20, 30} { // late, then changes
					if _, err := tx.Upsert("customers", store.Key{fmt.Sprintf("k%03d", i)}, store.Attrs{"n": int64(i) + at}, at); err != nil {
						return err
					}
				}
				if spill && i%7 == 6 {
					if err := tx.Flush(); err != nil {
						return err
					}
				}
			}
			if spill {
				if _, err := tx.Upsert("customers", store.Key{"k000"}, store.Attrs{"n": int64(1)}, 40); !errors.Is(err, txn.ErrKeyFlushed) {
					return fmt.Errorf("a flushed key was written again: %v", err)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if c.Tx == 0 || c.Asserted == 0 || c.Retired != 300 {
			t.Fatalf("commit: %+v", c)
		}
		mustVerify(t, db)
		return dir, db
	}
	_, mem := build(false)
	spillDir, sp := build(true)
	defer mem.Close()
	// The versions now and as known before the big transaction (its retired
	// records), without surrogate keys: Flush numbers them in flush order.
	render := func(db *store.DB, tx int64) string {
		tb, _ := db.Table("customers")
		s, _ := db.Snapshot()
		defer s.Close()
		out := ""
		for v, err := range s.ScanHistory(tb, store.Span{}, tx, store.NegInfinity, store.Infinity, nil) {
			if err != nil {
				t.Fatal(err)
			}
			out += fmt.Sprintf("%v [%d,%d) %v\n", v.Key, v.ValidFrom, v.ValidTo, v.Attrs)
		}
		return out
	}
	for _, past := range []int64{0, 1} {
		a, b := render(mem, mem.LastTx()-past), render(sp, sp.LastTx()-past)
		if a != b || a == "" {
			t.Fatalf("spilled transaction differs from the in-memory one (tx - %d):\n%s\nvs\n%s", past, b, a)
		}
	}
	entries, _ := os.ReadDir(spillDir)
	for _, e := range entries {
		if e.IsDir() {
			t.Fatalf("spill directory left behind: %s", e.Name())
		}
	}
	// Reopen: the meta keys came with the ingested file.
	last := sp.LastTx()
	if err := sp.Close(); err != nil {
		t.Fatal(err)
	}
	sp, err := store.Open(spillDir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	if sp.LastTx() != last {
		t.Fatalf("last tx after reopen %d, want %d", sp.LastTx(), last)
	}
	c, err := txn.Update(sp, func(tx *txn.Tx) error {
		_, err := tx.Upsert("customers", store.Key{"new"}, store.Attrs{"n": int64(1)}, 1)
		return err
	})
	if err != nil || c.Tx <= last {
		t.Fatalf("commit after reopen: %+v %v", c, err)
	}
	mustVerify(t, sp)
}

func TestSpillUnsupportedInMemory(t *testing.T) {
	db, err := store.Open("db", store.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_, err = txn.Update(db, func(tx *txn.Tx) error { return tx.SpillTo(t.TempDir(), 1) })
	if !errors.Is(err, store.ErrBulkUnsupported) {
		t.Fatalf("got %v, want ErrBulkUnsupported", err)
	}
}
