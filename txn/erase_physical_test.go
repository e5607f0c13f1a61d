package txn_test

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/bitempo/bitempo/internal/sealed"

	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// The physical tests write attribute values made of a unique marker under many
// transactions, erase the key and look for the marker and the key's bytes in
// every file of the store directory.
const (
	physMarker = "MARKER-5b0e1c7f"
	physKey    = "person-9f4d2a61"
)

// fillPhysical creates table "people" (grouped by city, so the group index
// holds copies too) and writes physKey's history over 60 transactions, with a
// flush to sstables on the way, and some other keys that stay.
func fillPhysical(t *testing.T, db *store.DB) {
	t.Helper()
	if _, err := db.CreateTable(store.TableDef{Name: "people", Key: []store.KeyColumn{{Name: "id", Type: store.String}}, GroupBy: []string{"city"}}); err != nil {
		t.Fatal(err)
	}
	for i := range 60 {
		_, err := txn.Update(db, func(tx *txn.Tx) error {
			attrs := store.Attrs{"name": fmt.Sprintf("%s-%d", physMarker, i), "city": "Oslo"}
			if _, err := tx.Upsert("people", store.Key{physKey}, attrs, int64(i*10)); err != nil {
				return err
			}
			_, err := tx.Upsert("people", store.Key{fmt.Sprintf("other-%d", i%5)}, store.Attrs{"name": "kept", "city": "Oslo"}, int64(i*10))
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if i == 30 {
			if err := db.Compact(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// scanFiles fails the test if any file under dir holds the marker or the key.
// With valuesOnly it looks for the marker alone: while the store is open its
// MANIFEST may still name the key as an sstable bound (purge.go).
func scanFiles(t *testing.T, dir string, valuesOnly bool) {
	t.Helper()
	needles := []string{physMarker, physKey}
	if valuesOnly {
		needles = needles[:1]
	}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, needle := range needles {
			if bytes.Contains(b, []byte(needle)) {
				t.Errorf("%s still holds %q", filepath.Base(path), needle)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// checkErased reopens the store and checks the erasure is complete and the
// other keys are intact.
func checkErasedStore(t *testing.T, dir string) {
	t.Helper()
	db, err := store.Open(dir, store.Options{MustExist: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rep, err := store.Verify(db)
	if err != nil || !rep.OK() {
		t.Fatalf("verify: %v %v", rep, err)
	}
	err = txn.View(db, func(s *store.Snapshot) error {
		tb, _ := s.Table("people")
		tuple, _ := tb.AppendKey(nil, store.Key{physKey})
		recs, err := s.KeyRecords(tb, tuple)
		if len(recs) != 0 {
			t.Errorf("erased key still has %d records", len(recs))
		}
		kept, _ := tb.AppendKey(nil, store.Key{"other-1"})
		if recs, _ := s.KeyRecords(tb, kept); len(recs) == 0 {
			t.Errorf("a key that was not erased lost its records")
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestErasePhysical: after Erase's Update returns (no other snapshot open) and
// the store is closed, no file holds the erased key's values or the key.
func TestErasePhysical(t *testing.T) {
	dir := t.TempDir()
	db, err := store.Open(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	fillPhysical(t, db)
	if _, err := txn.Update(db, func(tx *txn.Tx) error {
		return tx.EraseFor("people", store.Key{physKey}, "erasure request 17")
	}); err != nil {
		t.Fatal(err)
	}
	scanFiles(t, dir, true) // while the store is open
	if !db.PurgePending() {
		t.Fatal("no purge pending before Close")
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	scanFiles(t, dir, false)
	checkErasedStore(t, dir)
	scanFiles(t, dir, false)
}

// TestErasePhysicalUnclean: a process commits an erasure and exits without
// purging or closing the store; the next Open purges before it returns.
func TestErasePhysicalUnclean(t *testing.T) {
	if dir := os.Getenv("BITEMPO_ERASE_CHILD"); dir != "" {
		eraseChild(t, dir)
		return
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestErasePhysicalUnclean$", "-test.count=1")
	cmd.Env = append(os.Environ(), "BITEMPO_ERASE_CHILD="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "erased")); err != nil {
		t.Fatalf("the child did not commit its erasure: %v", err)
	}
	os.Remove(filepath.Join(dir, "erased"))
	checkErasedStore(t, dir)
	scanFiles(t, dir, false)
}

// eraseChild fills a store, commits an erasure through the store's writer
// (which does not purge), and exits without closing anything.
func eraseChild(t *testing.T, dir string) {
	db, err := store.Open(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	fillPhysical(t, db)
	tb, _ := db.Table("people")
	tuple, _ := tb.AppendKey(nil, store.Key{physKey})
	w, err := db.BeginWrite(sealed.Key{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Erase(tb, tuple, "unclean"); err != nil {
		t.Fatal(err)
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "erased"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	os.Exit(0)
}

// TestErasePhysicalSnapshotOpen: a snapshot open during the erasure still
// reads the erased data, so the purge waits; after the snapshot closes, Purge
// removes the values, and Close the rest.
func TestErasePhysicalSnapshotOpen(t *testing.T) {
	dir := t.TempDir()
	db, err := store.Open(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	fillPhysical(t, db)
	snap, err := db.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Update(db, func(tx *txn.Tx) error { return tx.Erase("people", store.Key{physKey}) }); err != nil {
		t.Fatal(err)
	}
	tb, _ := db.Table("people")
	tuple, _ := tb.AppendKey(nil, store.Key{physKey})
	if recs, err := snap.KeyRecords(tb, tuple); err != nil || len(recs) == 0 {
		t.Fatalf("the snapshot taken before the erasure lost its view: %d records, %v", len(recs), err)
	}
	if err := snap.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.Purge(context.Background()); err != nil {
		t.Fatal(err)
	}
	scanFiles(t, dir, true)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	scanFiles(t, dir, false)
}
