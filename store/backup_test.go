package store_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// TestBackupUnderLoad takes backups while a writer keeps committing, and checks
// that each opens as a store, verifies clean and holds a prefix of the commits:
// every commit up to its last transaction time, none after.
func TestBackupUnderLoad(t *testing.T) {
	dir := t.TempDir()
	db, err := store.Open(filepath.Join(dir, "db"), store.Options{NoSync: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	def := store.TableDef{Name: "counters", Key: []store.KeyColumn{{Name: "id", Type: store.Int64}}}
	if _, err := db.CreateTable(def); err != nil {
		t.Fatal(err)
	}
	// Commit i puts key i and overwrites key -1 with n=i, so a backup must hold
	// keys 0..k and key -1 at k for one k, matching its last transaction time.
	var mu sync.Mutex
	txOf := map[int64]int64{} // commit number -> transaction time
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		for i := int64(0); ; i++ {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			c, err := txn.Update(db, func(tx *txn.Tx) error {
				if err := tx.Put("counters", store.Key{i}, store.Attrs{"n": i}, 0, store.Infinity); err != nil {
					return err
				}
				return tx.Put("counters", store.Key{int64(-1)}, store.Attrs{"n": i}, 0, store.Infinity)
			})
			if err != nil {
				done <- err
				return
			}
			mu.Lock()
			txOf[i] = c.Tx
			mu.Unlock()
		}
	}()
	var backups []string
	for b := range 3 {
		time.Sleep(20 * time.Millisecond)
		dest := filepath.Join(dir, fmt.Sprintf("backup-%d", b))
		if err := db.Backup(context.Background(), dest); err != nil {
			t.Fatal(err)
		}
		backups = append(backups, dest)
	}
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for _, dest := range backups {
		checkBackupPrefix(t, dest, txOf)
	}
	if err := db.Backup(context.Background(), backups[0]); !errors.Is(err, store.ErrBackupExists) {
		t.Fatalf("backup over an existing directory: got %v, want ErrBackupExists", err)
	}
}

func checkBackupPrefix(t *testing.T, dir string, txOf map[int64]int64) {
	t.Helper()
	b, err := store.Open(dir, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("open backup %s: %v", dir, err)
	}
	defer b.Close()
	mustVerify(t, b)
	last := b.LastTx()
	s, err := b.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tbl, err := b.Table("counters")
	if err != nil {
		t.Fatal(err)
	}
	var k int64 = -1 // the last commit in the backup
	for i := int64(0); ; i++ {
		tx, ok := txOf[i]
		if !ok || tx > last {
			break
		}
		k = i
	}
	for i := int64(-1); i <= k+1; i++ {
		tuple, err := tbl.AppendKey(nil, store.Key{i})
		if err != nil {
			t.Fatal(err)
		}
		v, reason, err := s.VersionAt(tbl, tuple, 0, last)
		if err != nil {
			t.Fatal(err)
		}
		found := reason == store.Found
		switch {
		case i == -1 && k >= 0 && (!found || v.Attrs["n"] != k):
			t.Fatalf("%s: key -1 = %v (found %v), want n=%d (last tx %d)", dir, v.Attrs, found, k, last)
		case i >= 0 && i <= k && (!found || v.Attrs["n"] != i):
			t.Fatalf("%s: commit %d (tx %d <= last tx %d) is missing", dir, i, txOf[i], last)
		case i == k+1 && found:
			t.Fatalf("%s: commit %d (tx %d) is there, after last tx %d", dir, i, txOf[i], last)
		}
	}
	if k < 0 && last != 0 {
		t.Fatalf("%s: last tx %d matches no commit", dir, last)
	}
	t.Logf("%s holds commits 0..%d", dir, k)
}

func TestBackupErrors(t *testing.T) {
	db, err := store.Open("mem", store.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Backup(context.Background(), "copy"); err == nil {
		t.Fatal("backup of an InMemory store without FS succeeded")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := db.Backup(ctx, "copy"); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: got %v", err)
	}
	db.Close()
	dir := t.TempDir()
	db, err = store.Open(filepath.Join(dir, "db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	ro, err := store.Open(filepath.Join(dir, "db"), store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := ro.Backup(context.Background(), filepath.Join(dir, "b")); !errors.Is(err, store.ErrReadOnly) {
		t.Fatalf("backup of a read-only store: got %v, want ErrReadOnly", err)
	}
	ro.Close()
	if err := db.Backup(context.Background(), filepath.Join(dir, "b")); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("backup of a closed store: got %v, want ErrClosed", err)
	}
}
