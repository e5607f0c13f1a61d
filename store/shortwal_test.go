package store_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/bitempo/bitempo/engine/pebble"
	"github.com/bitempo/bitempo/internal/storetest"
	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// shortStore writes flushed commits, then synced commits that stay in the
// newest write-ahead log (a flush in the middle of the session rotated the
// log, so no OPTIONS file is newer than it), and closes the store.
func shortStore(t *testing.T, dir string, flushed, logged int) {
	t.Helper()
	db, put := logStore(t, dir, strings.Repeat("s", 300))
	for i := range flushed {
		put(i)
	}
	if err := db.Compact(context.Background()); err != nil { // flushes the memtable: a new log
		t.Fatal(err)
	}
	for i := flushed; i < flushed+logged; i++ {
		put(i)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// logStore opens a new store in dir with table "t" and returns it with put,
// which commits (synced) key i of "t" with attributes n = i and pad, and
// returns the commit's transaction time.
func logStore(t *testing.T, dir, pad string) (db *store.DB, put func(i int) int64) {
	t.Helper()
	db, err := store.Open(dir, store.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateTable(store.TableDef{Name: "t", Key: []store.KeyColumn{{Name: "id", Type: store.String}}}); err != nil {
		t.Fatal(err)
	}
	return db, func(i int) int64 {
		t.Helper()
		c, err := txn.Update(db, func(tx *txn.Tx) error {
			return tx.Put("t", store.Key{damageKey(i)}, store.Attrs{"n": i, "pad": pad}, 0, store.Infinity)
		})
		if err != nil {
			t.Fatal(err)
		}
		return c.Tx
	}
}

// lostCount returns the number of lost commits an error message names.
var lostCount = regexp.MustCompile(`(\d+) (?:synced, )?acknowledged commit\(s\)`)

// TestShortenedWAL cuts the newest write-ahead log of a closed store whose
// last 200 synced, acknowledged commits are only in it: to half its size, to
// nothing, or by deleting it. Without the synced watermark each of these
// opened cleanly with the commits silently gone, since a log cut short reads
// like one whose unsynced tail a crash lost. Open, read-write or read-only,
// now fails with ErrCorrupt and ErrDamagedWAL, names how many acknowledged
// commits are lost, and changes nothing; RecoverWAL accepts the loss, opens
// what is left (which has exactly that many commits fewer) and reports it,
// and the recovered store verifies clean, takes writes and reopens without
// complaint.
func TestShortenedWAL(t *testing.T) {
	const flushed, logged = 100, 200
	base := t.TempDir()
	shortStore(t, base, flushed, logged)
	for _, c := range []struct {
		name string
		cut  func(t *testing.T, log string)
	}{
		{"truncated to half", func(t *testing.T, log string) {
			st, err := os.Stat(log)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(log, st.Size()/2); err != nil {
				t.Fatal(err)
			}
		}},
		{"truncated to nothing", func(t *testing.T, log string) {
			if err := os.Truncate(log, 0); err != nil {
				t.Fatal(err)
			}
		}},
		{"deleted", func(t *testing.T, log string) {
			if err := os.Remove(log); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "db")
			copyDir(t, base, dir)
			logs := files(t, dir, "*.log")
			c.cut(t, logs[len(logs)-1])
			before := snapshotDir(t, dir)
			var named int
			for _, ro := range []bool{false, true} {
				_, err := store.Open(dir, store.Options{Logger: quiet, MustExist: true, ReadOnly: ro})
				wantCorrupt(t, "open", err, "")
				m := lostCount.FindStringSubmatch(fmt.Sprint(err))
				if !errors.Is(err, store.ErrDamagedWAL) || m == nil {
					t.Fatalf("open (read-only %v): got %v, want ErrDamagedWAL naming the acknowledged commits lost", ro, err)
				}
				named, _ = strconv.Atoi(m[1])
				sameDir(t, "after the failed open", before, dir)
			}
			t.Logf("%v commits named lost", named)

			db, err := storetest.Open(dir, pebble.Options{RecoverWAL: true}, store.Options{Logger: quiet, MustExist: true})
			if err != nil {
				t.Fatal(err)
			}
			r := db.Recovery()
			if r == nil || r.LostCommits != named {
				t.Fatalf("recovery report %v, want %d lost commits", r, named)
			}
			t.Log(r)
			kept := keysPresent(t, db, flushed+logged)
			if kept < flushed || kept+named != flushed+logged {
				t.Fatalf("recovered store holds %d of %d transactions; %d named lost", kept, flushed+logged, named)
			}
			checkRecoveredStore(t, db, dir, flushed+logged, kept)
		})
	}
}

// TestCrashKeepsSyncedCommits takes crash images (Pebble's crashable in-memory
// file system: everything synced, and a random share of what was not) of a
// store while it commits, synced and unsynced, and opens each: a crash never
// takes back a synced commit, so every open succeeds, with every synced,
// acknowledged commit present and the transactions present a prefix of those
// written. The synced watermark must not mistake a torn tail for a cut log,
// nor unsynced pages that survived out of order for damage.
func TestCrashKeepsSyncedCommits(t *testing.T) {
	const n = 120
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	for _, noSync := range []bool{false, true} {
		fs := vfs.NewCrashableMem()
		db, err := storetest.Open("db", pebble.Options{FS: fs, MemTableSize: 64 << 10}, store.Options{Logger: quiet, NoSync: noSync})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.CreateTable(store.TableDef{Name: "t", Key: []store.KeyColumn{{Name: "id", Type: store.String}}}); err != nil {
			t.Fatal(err)
		}
		for i := range n {
			if _, err := txn.Update(db, func(tx *txn.Tx) error {
				return tx.Put("t", store.Key{damageKey(i)}, store.Attrs{"n": i, "pad": strings.Repeat("c", rng.IntN(3000))}, 0, store.Infinity)
			}); err != nil {
				t.Fatal(err)
			}
			if rng.IntN(10) != 0 {
				continue
			}
			clone := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: rng.IntN(101), RNG: rng})
			cdb, err := storetest.Open("db", pebble.Options{FS: clone}, store.Options{Logger: quiet, MustExist: true})
			if err != nil {
				t.Fatalf("nosync %v: open after a crash at commit %d: %v", noSync, i, err)
			}
			kept := 0
			if _, err := cdb.Table("t"); err == nil {
				kept = keysPresent(t, cdb, n)
			} else if !noSync {
				t.Fatalf("a crash after commit %d lost the synced table declaration: %v", i, err)
			}
			if kept > i+1 || (!noSync && kept != i+1) {
				t.Fatalf("nosync %v: a crash after commit %d left %d", noSync, i, kept)
			}
			rep, err := store.Verify(cdb)
			if err != nil || !rep.OK() {
				t.Fatalf("verify after a crash: %v %v", rep, err)
			}
			if err := cdb.Close(); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestBackupLeavesTheSyncedWatermarkOnTheLiveLog takes a backup (a Pebble
// checkpoint, which copies the live write-ahead log into the backup's
// directory) between synced commits, then cuts the store's newest log back to
// its length at the backup: the commits after the backup are lost, and Open
// must say so. The synced watermark follows the store's own newest log only;
// when it also followed the backup's copy of it, it stayed on that copy, so
// the cut looked like a clean end and the later commits were silently gone.
func TestBackupLeavesTheSyncedWatermarkOnTheLiveLog(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	db, put := logStore(t, dir, "")
	for i := range 20 {
		put(i)
	}
	if err := db.Compact(context.Background()); err != nil { // a new log
		t.Fatal(err)
	}
	const before, after = 30, 40
	for i := 20; i < 20+before; i++ {
		put(i)
	}
	logs := files(t, dir, "*.log")
	live := logs[len(logs)-1]
	st, err := os.Stat(live)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Backup(context.Background(), filepath.Join(t.TempDir(), "backup")); err != nil {
		t.Fatal(err)
	}
	for i := 20 + before; i < 20+before+after; i++ {
		put(i)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if logs := files(t, dir, "*.log"); logs[len(logs)-1] != live {
		t.Fatalf("the newest log changed from %s to %s; the test needs the commits after the backup in the same log", live, logs[len(logs)-1])
	}
	if err := os.Truncate(live, st.Size()); err != nil {
		t.Fatal(err)
	}
	_, err = store.Open(dir, store.Options{Logger: quiet, MustExist: true})
	m := lostCount.FindStringSubmatch(fmt.Sprint(err))
	if !errors.Is(err, store.ErrDamagedWAL) || m == nil {
		t.Fatalf("open of a store whose log was cut back to its length at a backup: got %v, want ErrDamagedWAL naming the %d commits lost", err, after)
	}
	// The backup's checkpoint flushes the log with a record of its own, after
	// the cut too: the count is the commits after the backup, or one more.
	if n, _ := strconv.Atoi(m[1]); n != after && n != after+1 {
		t.Fatalf("open names %d commits lost, want %d (or %d with the checkpoint's record): %v", n, after, after+1, err)
	}
}
