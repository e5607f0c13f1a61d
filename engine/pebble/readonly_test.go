package pebble_test

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bitempo/bitempo/engine"
	"github.com/bitempo/bitempo/engine/pebble"
	"github.com/bitempo/bitempo/store"
)

// dirState fingerprints every file of a directory: name, mode, size, time and
// contents.
func dirState(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s %v %d %d", p, info.Mode(), info.Size(), info.ModTime().UnixNano())
		if !d.IsDir() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			fmt.Fprintf(&b, " %x", sha256.Sum256(data))
		}
		b.WriteByte('\n')
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func newStore(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "db")
	db, err := store.Open(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateTable(store.TableDef{Name: "t", Key: []store.KeyColumn{{Name: "id", Type: store.String}}}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Read-only opens create and change nothing in the store's directory, run
// beside each other, and exclude a read-write open (and are excluded by one).
func TestReadOnlyOpensShareAndChangeNothing(t *testing.T) {
	dir := newStore(t)
	before := dirState(t, dir)
	var readers []*store.DB
	for range 2 {
		db, err := store.Open(dir, store.Options{ReadOnly: true})
		if err != nil {
			t.Fatalf("read-only open beside another: %v", err)
		}
		if _, err := db.Table("t"); err != nil {
			t.Fatal(err)
		}
		readers = append(readers, db)
	}
	if db, err := store.Open(dir, store.Options{}); !errors.Is(err, engine.ErrLocked) {
		if err == nil {
			db.Close()
		}
		t.Fatalf("read-write open beside read-only ones: %v, want ErrLocked", err)
	}
	for _, db := range readers {
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if after := dirState(t, dir); after != before {
		t.Fatalf("read-only opens changed the directory:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	w, err := store.Open(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if db, err := store.Open(dir, store.Options{ReadOnly: true}); !errors.Is(err, engine.ErrLocked) {
		if err == nil {
			db.Close()
		}
		t.Fatalf("read-only open beside a read-write one: %v, want ErrLocked", err)
	}
}

// A read-only open works on a directory its user cannot write. (Root writes
// anyway, so this runs only for other users.)
func TestReadOnlyOpenOfReadOnlyDirectory(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root ignores file permissions")
	}
	dir := newStore(t)
	var files []string
	_ = filepath.WalkDir(dir, func(p string, _ fs.DirEntry, _ error) error { files = append(files, p); return nil })
	for _, p := range files {
		if err := os.Chmod(p, 0o555); err != nil {
			t.Fatal(err)
		}
	}
	defer func() {
		for _, p := range files {
			_ = os.Chmod(p, 0o755)
		}
	}()
	db, err := store.Open(dir, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("read-only open of a read-only directory: %v", err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// With a lock timeout an open waits for the store while another holder has
// it, and opens it once it is released; past the timeout it fails with
// ErrLocked, saying how long it waited.
func TestLockTimeout(t *testing.T) {
	dir := newStore(t)
	w, err := pebble.Open(dir, pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = pebble.Open(dir, pebble.Options{LockTimeout: 100 * time.Millisecond})
	if !errors.Is(err, engine.ErrLocked) || !strings.Contains(err.Error(), "waited 100ms") {
		t.Fatalf("open past the timeout: %v, want ErrLocked that says it waited 100ms", err)
	}
	if _, err := pebble.Open(dir, pebble.Options{}); !errors.Is(err, engine.ErrLocked) || strings.Contains(err.Error(), "waited") {
		t.Fatalf("open without a timeout: %v, want ErrLocked at once", err)
	}
	released := make(chan error, 1)
	go func() {
		time.Sleep(150 * time.Millisecond)
		released <- w.Close()
	}()
	start := time.Now()
	e, err := pebble.Open(dir, pebble.Options{LockTimeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("open that waits for the holder: %v", err)
	}
	if err := <-released; err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(start); waited < 100*time.Millisecond {
		t.Fatalf("opened after %s, before the holder let go", waited)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
}

// A store without a LOCK file (a backup: Pebble's checkpoints have none) opens
// read-only without one being created.
func TestReadOnlyOpenWithoutLockFile(t *testing.T) {
	dir := newStore(t)
	if err := os.Remove(filepath.Join(dir, "LOCK")); err != nil {
		t.Fatal(err)
	}
	before := dirState(t, dir)
	db, err := store.Open(dir, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("read-only open of a store without LOCK: %v", err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if after := dirState(t, dir); after != before {
		t.Fatalf("the read-only open changed the directory:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}
