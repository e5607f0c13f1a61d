package store_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bitempo/bitempo/engine/pebble"
	"github.com/bitempo/bitempo/internal/storetest"

	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// TestMissingWAL deletes the live write-ahead log of a store whose synced,
// acknowledged commits are all in it, both for a store closed after it was
// created and for one reopened (whose Open flushed the earlier log and recorded
// as the oldest unflushed log a number no log file gets). Open, read-write or
// read-only, fails with ErrCorrupt and ErrDamagedWAL and leaves the directory
// byte for byte as it was; Open with RecoverWAL opens with what the table files
// hold and reports the log missing. Deleting a log that is no longer live
// changes nothing.
func TestMissingWAL(t *testing.T) {
	const n, more = 200, 40
	created := t.TempDir()
	walStore(t, created, n)

	// reopened: the n commits flushed by a reopen, more in the new live log.
	reopened := t.TempDir()
	walStore(t, reopened, n)
	obsolete := map[string][]byte{}
	for _, l := range files(t, reopened, "*.log") {
		obsolete[filepath.Base(l)] = mustRead(t, l)
	}
	oldOptions := map[string][]byte{}
	for _, o := range files(t, reopened, "OPTIONS-*") {
		oldOptions[filepath.Base(o)] = mustRead(t, o)
	}
	// The synced watermark as the first session left it, which a crash in
	// the reopen leaves too: it is rewritten only after a synced commit.
	for _, o := range files(t, reopened, "BITEMPO-WAL-SYNCED") {
		oldOptions[filepath.Base(o)] = mustRead(t, o)
	}
	db, err := store.Open(reopened, store.Options{Logger: quiet, MustExist: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := n; i < n+more; i++ {
		if _, err := txn.Update(db, func(tx *txn.Tx) error {
			return tx.Put("t", store.Key{damageKey(i)}, store.Attrs{"n": i}, 0, store.Infinity)
		}); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		name string
		base string
		kept int // keys the table files hold
	}{{"created", created, 0}, {"reopened", reopened, n}} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "db")
			copyDir(t, c.base, dir)
			logs := files(t, dir, "*.log")
			if len(logs) == 0 {
				t.Fatal("no write-ahead log")
			}
			for _, l := range logs {
				if err := os.Remove(l); err != nil {
					t.Fatal(err)
				}
			}
			before := snapshotDir(t, dir)
			for _, ro := range []bool{false, true} {
				_, err := store.Open(dir, store.Options{Logger: quiet, MustExist: true, ReadOnly: ro})
				wantCorrupt(t, "open", err, "")
				if !errors.Is(err, store.ErrDamagedWAL) || !strings.Contains(err.Error(), "write-ahead log is missing") {
					t.Fatalf("open (read-only %v): got %v, want ErrDamagedWAL saying the log is missing", ro, err)
				}
				// The error names the range the deleted log's number lies in.
				lo, hi := logRange(t, err.Error())
				for _, l := range logs {
					if b := filepath.Base(l); b < lo || b > hi {
						t.Fatalf("%s is not in the range %s..%s the error names: %v", b, lo, hi, err)
					}
				}
				sameDir(t, "after the failed open", before, dir)
			}

			db, err := storetest.Open(dir, pebble.Options{RecoverWAL: true}, store.Options{Logger: quiet, MustExist: true})
			if c.kept == 0 {
				// The store's declaration was in the log too: nothing is left.
				wantCorrupt(t, "recover", err, "")
				if !strings.Contains(err.Error(), "nothing of the store survived") || !errors.Is(err, store.ErrNotExist) {
					t.Fatalf("recover of a store with nothing flushed: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			r := db.Recovery()
			if r == nil || r.Missing == "" || r.SavedTo != "" || len(r.LostTxs) != 0 || !r.Unreadable {
				t.Fatalf("recovery report %#v, want a missing log", r)
			}
			t.Log(r)
			if got := keysPresent(t, db, n+more); got != c.kept {
				t.Fatalf("recovered store holds %d keys, want %d", got, c.kept)
			}
			checkRecoveredStore(t, db, dir, n+more, c.kept)
		})
	}

	// The reopen flushed the first log's commits to a table file and deleted
	// it. Put it back, as a crash between the flush and the deletion leaves
	// it, then delete it again: neither is reported, and nothing is lost.
	t.Run("obsolete log", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "db")
		copyDir(t, reopened, dir)
		for name, b := range obsolete {
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		for round := range 2 {
			db, err := store.Open(dir, store.Options{Logger: quiet, MustExist: true})
			if err != nil {
				t.Fatalf("open with an obsolete log present (round %d): %v", round, err)
			}
			if db.Recovery() != nil || keysPresent(t, db, n+more) != n+more {
				t.Fatal("a commit was lost")
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			for name := range obsolete {
				if err := os.Remove(filepath.Join(dir, name)); err != nil && !os.IsNotExist(err) {
					t.Fatal(err)
				}
			}
		}
	})

	// A crash inside the reopen, after it flushed the replayed log (recording
	// as the oldest unflushed log a number no file gets) and before it created
	// its own log and OPTIONS file, leaves no live log: every commit is in a
	// table file, and Open must not call that damage.
	t.Run("crash in open", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "db")
		copyDir(t, reopened, dir)
		for _, p := range append(files(t, dir, "*.log"), files(t, dir, "OPTIONS-*")...) {
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
		}
		for name, b := range oldOptions {
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		db, err := store.Open(dir, store.Options{Logger: quiet, MustExist: true})
		if err != nil {
			t.Fatalf("open after a crash in open: %v", err)
		}
		defer db.Close()
		if db.Recovery() != nil || keysPresent(t, db, n+more) != n {
			t.Fatal("the flushed commits were not all there")
		}
	})
}

// logRange returns the first and last log file names an error's "(a file from
// A.log to B.log)" names.
func logRange(t *testing.T, msg string) (lo, hi string) {
	t.Helper()
	_, rest, ok := strings.Cut(msg, "a file from ")
	if !ok {
		t.Fatalf("%q names no range of log files", msg)
	}
	lo, rest, _ = strings.Cut(rest, " to ")
	hi, _, _ = strings.Cut(rest, ")")
	return lo, hi
}
