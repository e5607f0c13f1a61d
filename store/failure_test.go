package store_test

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	bpebble "github.com/bitempo/bitempo/engine/pebble"
	"github.com/bitempo/bitempo/internal/storetest"

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
	db, err := storetest.Open(dir, bpebble.Options{MemTableSize: 64 << 10, Tune: func(o *pebble.Options) {
		o.DisableAutomaticCompactions = true
		o.L0StopWritesThreshold = 1000 // the level-0 files are the point
	}}, store.Options{Logger: quiet})
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
		v, err := query.Get(db, "t", store.Key{damageKey(i)}, query.AsOf{Valid: 1}, query.GetOptions{})
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
			if _, err := query.Get(db, "t", store.Key{damageKey(0)}, query.AsOf{Valid: 1}, query.GetOptions{}); !errors.Is(err, store.ErrCorrupt) {
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

// TestDamagedManifest flips 4 random bytes of the MANIFEST of a store with many
// table files, over 20 seeds. Open, read-write or read-only, either fails with
// ErrCorrupt and leaves the directory byte for byte as it was, or succeeds with
// every record intact. (Before, a read-write Open replayed the MANIFEST up to
// the damage and deleted every table file the rest named.)
func TestDamagedManifest(t *testing.T) {
	base := t.TempDir()
	damageStore(t, base)
	refused := 0
	for seed := range 20 {
		dir := filepath.Join(t.TempDir(), "db")
		copyDir(t, base, dir)
		manifests := files(t, dir, "MANIFEST-*")
		if len(manifests) != 1 {
			t.Fatalf("manifests: %v", manifests)
		}
		rng := rand.New(rand.NewPCG(uint64(seed), 13))
		st, _ := os.Stat(manifests[0])
		for range 4 {
			flip(t, manifests[0], rng.Int64N(st.Size()))
		}
		before := snapshotDir(t, dir)
		for _, ro := range []bool{true, false} {
			db, err := store.Open(dir, store.Options{Logger: quiet, MustExist: true, ReadOnly: ro})
			if err != nil {
				wantCorrupt(t, fmt.Sprintf("seed %d, read-only %v: open", seed, ro), err, manifests[0])
				sameDir(t, fmt.Sprintf("seed %d, read-only %v: after the failed open", seed, ro), before, dir)
				refused++
				continue
			}
			if err := readAll(t, db); err != nil {
				t.Fatalf("seed %d: opened a store with a damaged MANIFEST, and reading it failed: %v", seed, err)
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if refused == 0 {
		t.Fatal("no seed damaged the MANIFEST")
	}
}

// copyDir copies the files of src into a new directory dst.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// walStore writes n synced transactions (one key each, with some padding) that
// all stay in the write-ahead log, closes the store and returns their
// transaction times.
func walStore(t *testing.T, dir string, n int) []int64 {
	t.Helper()
	// Each commit writes the padding twice (the record and its newest-version
	// entry); all must fit the first memtable.
	db, put := logStore(t, dir, strings.Repeat("w", 200))
	var txs []int64
	for i := range n {
		txs = append(txs, put(i))
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if ssts := files(t, dir, "*.sst"); len(ssts) != 0 {
		t.Fatalf("the commits were flushed to %v; the test needs them in the log", ssts)
	}
	return txs
}

// keysPresent returns how many of keys 0..n-1 the store holds, checking that
// they are a prefix.
func keysPresent(t *testing.T, db *store.DB, n int) int {
	t.Helper()
	present := 0
	for i := range n {
		_, err := query.Get(db, "t", store.Key{damageKey(i)}, query.AsOf{Valid: 1}, query.GetOptions{})
		switch {
		case err == nil && present == i:
			present++
		case err == nil:
			t.Fatalf("key %d is present after key %d is missing", i, present)
		case !errors.Is(err, query.ErrNotFound):
			t.Fatal(err)
		}
	}
	return present
}

// TestDamagedWAL damages the live write-ahead log of a store whose 300
// acknowledged commits are all in it. One flipped byte in the middle (or near
// the start) fails Open with ErrCorrupt, naming the log, and changes nothing;
// Open with RecoverWAL keeps the transactions before the damage, moves the
// original log aside and reports the transaction times it dropped. A torn last
// record, as a crash leaves it, is dropped silently.
func TestDamagedWAL(t *testing.T) {
	const n = 300
	base := t.TempDir()
	txs := walStore(t, base, n)
	for _, c := range []struct {
		name   string
		at     float64 // where in the log, as a fraction of its size
		newest bool    // damage the newest log rather than the largest
	}{{"middle", 0.5, false}, {"first tenth", 0.05, false}, {"near the end", 0.95, false}, {"newest log", 0.3, true}} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "db")
			copyDir(t, base, dir)
			logs := files(t, dir, "*.log")
			victim := largest(t, logs)
			if c.newest {
				victim = logs[len(logs)-1]
			}
			st, _ := os.Stat(victim)
			flip(t, victim, int64(float64(st.Size())*c.at))
			before := snapshotDir(t, dir)
			for _, ro := range []bool{false, true} {
				_, err := store.Open(dir, store.Options{Logger: quiet, MustExist: true, ReadOnly: ro})
				wantCorrupt(t, "open", err, victim)
				sameDir(t, "after the failed open", before, dir)
			}

			db, err := storetest.Open(dir, bpebble.Options{RecoverWAL: true}, store.Options{Logger: quiet, MustExist: true})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			r := db.Recovery()
			if r == nil {
				t.Fatal("no recovery report")
			}
			t.Log(r)
			kept := keysPresent(t, db, n)
			if kept == 0 || kept == n {
				t.Fatalf("kept %d of %d transactions", kept, n)
			}
			if r.KeptLastTx != txs[kept-1] || db.LastTx() != txs[kept-1] {
				t.Fatalf("report says kept through tx %d, the store holds %d keys, the last of them tx %d", r.KeptLastTx, kept, txs[kept-1])
			}
			// The readable lost transactions are the tail of the acknowledged
			// ones; the unreadable ones lie between the kept and the readable.
			if len(r.LostTxs) == 0 || !slices.Equal(r.LostTxs, txs[n-len(r.LostTxs):]) {
				t.Fatalf("lost txs %v, want a tail of the %d acknowledged", r.LostTxs, n)
			}
			if unreadable := n - kept - len(r.LostTxs); unreadable < 1 || unreadable > 3 || !r.Unreadable {
				t.Fatalf("%d transactions unaccounted for (report %v)", unreadable, r)
			}
			if saved := filepath.Join(r.SavedTo, filepath.Base(victim)); !bytes.Equal(before[victim], mustRead(t, saved)) {
				t.Fatalf("the original log was not saved whole in %s", saved)
			}
			checkRecoveredStore(t, db, dir, n, kept)
		})
	}

	t.Run("torn tail", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "db")
		copyDir(t, base, dir)
		logs := files(t, dir, "*.log")
		victim := logs[len(logs)-1]
		b := mustRead(t, victim)
		if err := os.WriteFile(victim, b[:len(b)-100], 0o644); err != nil {
			t.Fatal(err)
		}
		// A crash tears only a record that was never synced, which the synced
		// watermark never describes; Close wrote one describing every record,
		// so take it away, as a crash before the first one leaves the store.
		// (TestShortenedWAL cuts a log the watermark describes.)
		if err := os.Remove(filepath.Join(dir, "BITEMPO-WAL-SYNCED")); err != nil {
			t.Fatal(err)
		}
		db, err := store.Open(dir, store.Options{Logger: quiet, MustExist: true})
		if err != nil {
			t.Fatalf("open after a torn last record: %v", err)
		}
		defer db.Close()
		if got := keysPresent(t, db, n); got != n-1 || db.Recovery() != nil {
			t.Fatalf("after a torn last record: %d of %d transactions, recovery %v", got, n, db.Recovery())
		}
	})
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// largest returns the largest of files.
func largest(t *testing.T, files []string) string {
	t.Helper()
	var best string
	var size int64 = -1
	for _, f := range files {
		if st, err := os.Stat(f); err == nil && st.Size() > size {
			best, size = f, st.Size()
		}
	}
	return best
}

// checkRecoveredStore checks a store that Open recovered (db, in dir, holding kept
// of the keys k0..k<n-1>): it verifies clean, takes a write, and reopens without
// a recovery and with the same keys. It closes db.
func checkRecoveredStore(t *testing.T, db *store.DB, dir string, n, kept int) {
	t.Helper()
	rep, err := store.Verify(db)
	if err != nil || !rep.OK() {
		t.Fatal(rep, err)
	}
	if _, err := txn.Update(db, func(tx *txn.Tx) error {
		return tx.Put("t", store.Key{"after"}, store.Attrs{"n": 1}, 0, 10)
	}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = store.Open(dir, store.Options{Logger: quiet, MustExist: true})
	if err != nil {
		t.Fatalf("reopen after recovery: %v", err)
	}
	defer db.Close()
	if db.Recovery() != nil || keysPresent(t, db, n) != kept {
		t.Fatal("reopen after recovery changed the store")
	}
}
