package store_test

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bitempo/bitempo/internal/sealed"

	bpebble "github.com/bitempo/bitempo/engine/pebble"
	"github.com/bitempo/bitempo/internal/storetest"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// sentinels are the package's documented sentinel errors.
var sentinels = []error{store.ErrNotExist, store.ErrLocked, store.ErrNotBitempo, store.ErrNewerFormat, store.ErrReadOnly,
	store.ErrClosed, store.ErrSnapshotsOpen, store.ErrUnknownTable, store.ErrTableExists, store.ErrInvalidTable,
	store.ErrKeyShape, store.ErrInvalidPeriod, store.ErrFailed, store.ErrCorrupt, store.ErrTooLarge, store.ErrReentrant,
	store.ErrInvalidUse, store.ErrIO}

// TestErrorsWrapSentinels provokes errors that used to wrap no sentinel, or the
// wrong one, and checks each against the sentinel it must wrap (and that it
// wraps one at all).
func TestErrorsWrapSentinels(t *testing.T) {
	tmp := t.TempDir()
	healthy := filepath.Join(tmp, "healthy")
	damageStore(t, healthy)

	cases := []struct {
		name string
		want error
		run  func(t *testing.T) error
	}{
		{"open a path under a file", store.ErrIO, func(t *testing.T) error {
			f := filepath.Join(tmp, "plain")
			if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := store.Open(filepath.Join(f, "db"), store.Options{Logger: quiet})
			return err
		}},
		{"open a symlink loop", store.ErrIO, func(t *testing.T) error {
			loop := filepath.Join(tmp, "loop")
			if err := os.Symlink(loop, loop); err != nil {
				t.Fatal(err)
			}
			_, err := store.Open(loop, store.Options{Logger: quiet})
			return err
		}},
		{"a junk OPTIONS file", store.ErrCorrupt, func(t *testing.T) error {
			dir := filepath.Join(tmp, "options")
			copyDir(t, healthy, dir)
			if err := os.WriteFile(filepath.Join(dir, "OPTIONS-999999"), []byte("[Version]\n  pebble_version=0.1\njunk"), 0o644); err != nil {
				t.Fatal(err)
			}
			before := snapshotDir(t, dir)
			_, err := store.Open(dir, store.Options{Logger: quiet, MustExist: true})
			sameDir(t, "junk OPTIONS", before, dir)
			return err
		}},
		{"a deleted manifest marker", store.ErrCorrupt, func(t *testing.T) error {
			dir := filepath.Join(tmp, "marker")
			copyDir(t, healthy, dir)
			for _, m := range files(t, dir, "marker.manifest.*") {
				if err := os.Remove(m); err != nil {
					t.Fatal(err)
				}
			}
			before := snapshotDir(t, dir)
			_, err := store.Open(dir, store.Options{Logger: quiet, MustExist: true})
			sameDir(t, "deleted marker", before, dir)
			return err
		}},
		{"a missing table file", store.ErrCorrupt, func(t *testing.T) error {
			dir := filepath.Join(tmp, "missing")
			copyDir(t, healthy, dir)
			ssts := files(t, dir, "*.sst")
			if err := os.Remove(ssts[len(ssts)/2]); err != nil {
				t.Fatal(err)
			}
			_, err := store.Open(dir, store.Options{Logger: quiet, MustExist: true})
			return err
		}},
		{"swapped table files", store.ErrCorrupt, func(t *testing.T) error {
			dir := filepath.Join(tmp, "swapped")
			copyDir(t, healthy, dir)
			ssts := files(t, dir, "*.sst")
			a, b := mustRead(t, ssts[0]), mustRead(t, ssts[1])
			if err := errors.Join(os.WriteFile(ssts[0], b, 0o644), os.WriteFile(ssts[1], a, 0o644)); err != nil {
				t.Fatal(err)
			}
			db, err := store.Open(dir, store.Options{Logger: quiet, MustExist: true})
			if err == nil {
				err = readAll(t, db)
				_ = db.Close()
			}
			return err
		}},
		{"MustExist on an empty Pebble database", store.ErrNotExist, func(t *testing.T) error {
			dir := filepath.Join(tmp, "empty-pebble")
			pdb, err := pebble.Open(dir, &pebble.Options{Logger: silentPebble{}})
			if err != nil {
				t.Fatal(err)
			}
			if err := pdb.Close(); err != nil {
				t.Fatal(err)
			}
			_, err = store.Open(dir, store.Options{Logger: quiet, MustExist: true})
			// Nothing of bitempo's was written: a plain Pebble open finds no key.
			pdb, perr := pebble.Open(dir, &pebble.Options{Logger: silentPebble{}})
			if perr != nil {
				t.Fatal(perr)
			}
			defer pdb.Close()
			it, _ := pdb.NewIter(nil)
			if it.First() {
				t.Errorf("MustExist wrote key %q into a foreign database", it.Key())
			}
			_ = it.Close()
			return err
		}},
		{"Close after ErrFailed", store.ErrFailed, func(t *testing.T) error {
			inject := &errorfs.Toggle{Injector: errorfs.InjectorFunc(func(op errorfs.Op) error {
				if op.Kind == errorfs.OpFileWrite && strings.HasSuffix(op.Path, ".log") {
					return errorfs.ErrInjected
				}
				return nil
			})}
			db, err := storetest.Open("db", bpebble.Options{FS: errorfs.Wrap(vfs.NewMem(), inject)}, store.Options{Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := db.CreateTable(store.TableDef{Name: "t", Key: []store.KeyColumn{{Name: "id", Type: store.String}}}); err != nil {
				t.Fatal(err)
			}
			inject.On()
			_, err = txn.Update(db, func(tx *txn.Tx) error { return tx.Put("t", store.Key{"a"}, nil, 0, 1) })
			if !errors.Is(err, store.ErrFailed) {
				t.Fatalf("commit with a failing log: %v", err)
			}
			return db.Close()
		}},
		{"a finished writer", store.ErrInvalidUse, func(t *testing.T) error {
			db, err := store.Open("db", store.Options{InMemory: true, Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			w, err := db.BeginWrite(sealed.Key{})
			if err != nil {
				t.Fatal(err)
			}
			w.Abort()
			return w.Commit()
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.run(t)
			if !errors.Is(err, c.want) {
				t.Fatalf("got %v, want an error wrapping %v", err, c.want)
			}
			n := 0
			for _, s := range sentinels {
				if errors.Is(err, s) {
					n++
				}
			}
			if n == 0 {
				t.Fatalf("%v wraps no sentinel", err)
			}
			t.Log(err)
		})
	}
}

// silentPebble discards a plain Pebble database's log.
type silentPebble struct{}

func (silentPebble) Infof(string, ...any)  {}
func (silentPebble) Errorf(string, ...any) {}
func (silentPebble) Fatalf(format string, args ...any) {
	slog.Error("pebble fatal", "msg", format)
	panic(format)
}
