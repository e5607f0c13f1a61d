package store_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/bitempo/bitempo/engine/pebble"
	"github.com/bitempo/bitempo/internal/storetest"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// countingHandler counts the records logged at Error level.
type countingHandler struct{ errors atomic.Int64 }

func (h *countingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *countingHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Level >= slog.LevelError {
		h.errors.Add(1)
	}
	return nil
}
func (h *countingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *countingHandler) WithGroup(string) slog.Handler      { return h }

// TestFullDiskDuringFlush fills the "disk" under the store's table files: once
// armed, every write to an sstable fails with ENOSPC, so no flush or compaction
// can finish, while the write-ahead log still takes writes. Commits go on until
// the memtables are full; the commit that then has to wait for room returns an
// error wrapping ErrIO within StallTimeout (it used to wait for ever while
// Pebble retried the flush thousands of times a second, logging each failure),
// every later call fails at once, the error log stays short, Close returns, and
// the store reopened on a disk with space holds every acknowledged commit.
func TestFullDiskDuringFlush(t *testing.T) {
	const timeout = time.Second
	mem := vfs.NewCrashableMem()
	full := &errorfs.Toggle{Injector: errorfs.InjectorFunc(func(op errorfs.Op) error {
		if strings.HasSuffix(op.Path, ".sst") && (op.Kind == errorfs.OpFileWrite || op.Kind == errorfs.OpCreate || op.Kind == errorfs.OpFileSync) {
			return &os.PathError{Op: "write", Path: op.Path, Err: syscall.ENOSPC}
		}
		return nil
	})}
	logs := &countingHandler{}
	db, err := storetest.Open("db", pebble.Options{FS: errorfs.Wrap(mem, full), MemTableSize: 256 << 10, StallTimeout: timeout}, store.Options{Logger: slog.New(logs)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateTable(store.TableDef{Name: "t", Key: []store.KeyColumn{{Name: "id", Type: store.String}}}); err != nil {
		t.Fatal(err)
	}
	pad := strings.Repeat("f", 20<<10)
	write := func(i int) error {
		_, err := txn.Update(db, func(tx *txn.Tx) error {
			return tx.Put("t", store.Key{damageKey(i)}, store.Attrs{"n": i, "pad": pad}, 0, store.Infinity)
		})
		return err
	}
	full.On()
	acked := 0
	var failure error
	for i := 0; i < 1000 && failure == nil; i++ {
		start := time.Now()
		failure = write(i)
		if took := time.Since(start); took > timeout+5*time.Second {
			t.Fatalf("commit %d took %v", i, took)
		}
		if failure == nil {
			acked++
		}
	}
	if !errors.Is(failure, store.ErrIO) {
		t.Fatalf("after %d commits: got %v, want an error wrapping ErrIO", acked, failure)
	}
	t.Logf("%d commits acknowledged, then: %v", acked, failure)
	start := time.Now()
	if err := write(acked + 1); !errors.Is(err, store.ErrIO) || time.Since(start) > time.Second {
		t.Fatalf("the next commit: %v after %v, want ErrIO at once", err, time.Since(start))
	}
	if _, err := db.Snapshot(); !errors.Is(err, store.ErrIO) {
		t.Fatalf("snapshot: %v, want ErrIO", err)
	}
	if n := logs.errors.Load(); n > 40 {
		t.Fatalf("%d error lines logged", n)
	}
	closed := make(chan error, 1)
	go func() { closed <- db.Close() }()
	select {
	case err := <-closed:
		if !errors.Is(err, store.ErrIO) {
			t.Fatalf("close of a stuck store: %v, want ErrIO", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close hung")
	}

	// The abandoned store keeps its lock; a process restart finds the disk
	// as it was synced.
	full.Off()
	db, err = storetest.Open("db", pebble.Options{FS: mem.CrashClone(vfs.CrashCloneCfg{})}, store.Options{MustExist: true, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for i := range acked {
		if _, err := query.Get(db, "t", store.Key{damageKey(i)}, query.AsOf{Valid: 1}, query.GetOptions{}); err != nil {
			t.Fatalf("acknowledged commit %d: %v", i, err)
		}
	}
	rep, err := store.Verify(db)
	if err != nil || !rep.OK() {
		t.Fatal(rep, err)
	}
}
