package store_test

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// These tests damage the files of real on-disk stores and check the failure
// model of the package documentation: a typed error naming the file, never a
// panic on a caller's goroutine or a background one, and a directory left as it
// was by an Open that fails.

const damageKeys = 600

var quiet = slog.New(slog.DiscardHandler)

// damageStore writes an on-disk store in dir whose data spans several table
// files (small memtables, no automatic compactions) plus a write-ahead log, and
// closes it.
func damageStore(t *testing.T, dir string) {
	t.Helper()
	db, err := store.Open(dir, store.Options{Logger: quiet, MemTableSize: 64 << 10, Tune: func(o *pebble.Options) {
		o.DisableAutomaticCompactions = true
	}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateTable(store.TableDef{Name: "t", Key: []store.KeyColumn{{Name: "id", Type: store.String}}}); err != nil {
		t.Fatal(err)
	}
	pad := strings.Repeat("p", 300)
	for batch := range 20 {
		if _, err := txn.Update(db, func(tx *txn.Tx) error {
			for i := batch; i < damageKeys; i += 20 {
				if err := tx.Put("t", store.Key{damageKey(i)}, store.Attrs{"n": i, "pad": pad}, 0, store.Infinity); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

func damageKey(i int) string { return fmt.Sprintf("key-%05d", i) }

// files returns the names of dir's files whose names match pattern, sorted.
func files(t *testing.T, dir, pattern string) []string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, pattern))
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(names)
	return names
}

// flip inverts the byte at off of file (off < 0 counts from the end).
func flip(t *testing.T, file string, off int64) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if off < 0 {
		off += int64(len(b))
	}
	b[off] ^= 0xff
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// readAll reads every key through query.Get, a full raw scan and Verify, and
// returns the first error; a wrong value fails the test.
func readAll(t *testing.T, db *store.DB) error {
	t.Helper()
	for i := range damageKeys {
		v, err := query.Get(db, "t", store.Key{damageKey(i)}, query.AsOf{Valid: 1})
		if err != nil {
			return err
		}
		if v.Attrs["n"] != int64(i) {
			t.Fatalf("key %d reads %v", i, v.Attrs)
		}
	}
	s, err := db.Snapshot()
	if err != nil {
		return err
	}
	for _, err := range s.RawScan(nil, nil) {
		if err != nil {
			_ = s.Close()
			return err
		}
	}
	if err := s.Close(); err != nil {
		return err
	}
	rep, err := store.Verify(db)
	if err != nil {
		return err
	}
	if !rep.OK() {
		t.Fatalf("verify of a store with intact records: %v", rep)
	}
	return nil
}

// wantCorrupt fails unless err wraps ErrCorrupt and names a file of the store.
func wantCorrupt(t *testing.T, what string, err error, file string) {
	t.Helper()
	if !errors.Is(err, store.ErrCorrupt) {
		t.Fatalf("%s: got %v, want an error wrapping ErrCorrupt", what, err)
	}
	if file != "" && !strings.Contains(err.Error(), filepath.Base(file)) {
		t.Fatalf("%s: %v does not name %s", what, err, filepath.Base(file))
	}
}

// TestDamagedTableFile flips one byte in a table file (in a data block, in the
// index region and in the footer) and reads everything: every read either
// returns the right data or an error wrapping ErrCorrupt that names the file;
// once one has, every read and write fails with ErrCorrupt until the store is
// reopened. Nothing panics, on the caller's goroutine or on Pebble's background
// ones (the table-stats collector reads the index region right after Open; a
// panic there would end the test binary).
func TestDamagedTableFile(t *testing.T) {
	for _, c := range []struct {
		name string
		off  int64
	}{
		{"data block", 100},
		{"middle", 0}, // set to half the file's size below
		{"index region", -300},
		{"properties", -700},
		{"footer magic", -3},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			damageStore(t, dir)
			ssts := files(t, dir, "*.sst")
			if len(ssts) < 3 {
				t.Fatalf("want several table files, got %v", ssts)
			}
			victim := ssts[len(ssts)/2]
			off := c.off
			if off == 0 {
				st, _ := os.Stat(victim)
				off = st.Size() / 2
			}
			flip(t, victim, off)

			db, err := store.Open(dir, store.Options{Logger: quiet, MustExist: true})
			if err != nil {
				wantCorrupt(t, "open", err, victim)
				return
			}
			defer db.Close()
			// Give the background table-stats collector time to read the file.
			time.Sleep(100 * time.Millisecond)
			err = readAll(t, db)
			if err == nil {
				t.Fatalf("read every key of a store with a damaged table file %s at %d", victim, off)
			}
			wantCorrupt(t, "read", err, victim)
			if _, err := db.Snapshot(); !errors.Is(err, store.ErrCorrupt) {
				t.Fatalf("snapshot after corruption: %v", err)
			}
			if _, err := query.Get(db, "t", store.Key{damageKey(0)}, query.AsOf{Valid: 1}); !errors.Is(err, store.ErrCorrupt) {
				t.Fatalf("get after corruption: %v", err)
			}
			if _, err := txn.Update(db, func(tx *txn.Tx) error {
				return tx.Put("t", store.Key{"new"}, store.Attrs{"n": 1}, 0, 10)
			}); !errors.Is(err, store.ErrCorrupt) {
				t.Fatalf("write after corruption: %v", err)
			}
			if _, err := store.Verify(db); !errors.Is(err, store.ErrCorrupt) {
				t.Fatalf("verify after corruption: %v", err)
			}
		})
	}
}

// snapshotDir returns every file of dir (recursively) with its content.
func snapshotDir(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		out[p] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// sameDir fails unless dir holds exactly the files of before, byte for byte.
func sameDir(t *testing.T, what string, before map[string][]byte, dir string) {
	t.Helper()
	after := snapshotDir(t, dir)
	for p, b := range before {
		a, ok := after[p]
		switch {
		case !ok:
			t.Fatalf("%s: %s was deleted", what, p)
		case !bytes.Equal(a, b):
			t.Fatalf("%s: %s was changed", what, p)
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			t.Fatalf("%s: %s was created", what, p)
		}
	}
}
