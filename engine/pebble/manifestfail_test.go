package pebble_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"

	cpebble "github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/bitempo/bitempo/engine"
	"github.com/bitempo/bitempo/engine/pebble"
)

// manifestFault fails, while armed, the first operation of one kind on a file
// whose name starts with prefix, and counts the operations it failed.
type manifestFault struct {
	kind   errorfs.OpKind
	prefix string
	armed  atomic.Bool
	failed atomic.Int64
}

func (f *manifestFault) MaybeError(op errorfs.Op) error {
	if !f.armed.Load() || op.Kind != f.kind {
		return nil
	}
	base := op.Path[strings.LastIndex(op.Path, "/")+1:]
	if !strings.HasPrefix(base, f.prefix) || !f.armed.CompareAndSwap(true, false) {
		return nil
	}
	f.failed.Add(1)
	return fmt.Errorf("%s: %w", op.Path, errorfs.ErrInjected)
}

func (f *manifestFault) String() string { return f.prefix }

// TestFailedManifestWriteFailsTheStore checks that a failed write or sync of
// the MANIFEST, or a failed creation of the marker that names it, never
// reaches Pebble (which, after preparing a version edit, meets such a failure
// with Fatalf and a rollback that can panic on a background goroutine): the
// store fails with ErrFailed, Pebble logs nothing fatal, every call after it
// is refused, and reopening the store finds every key committed before the
// failure, the one whose flush met it included. A tiny MaxManifestFileSize
// makes Pebble move to a new MANIFEST (and marker) after a few edits.
func TestFailedManifestWriteFailsTheStore(t *testing.T) {
	for _, c := range []struct {
		name   string
		kind   errorfs.OpKind
		prefix string
	}{
		{"MANIFEST write", errorfs.OpFileWrite, "MANIFEST-"},
		{"MANIFEST sync", errorfs.OpFileSync, "MANIFEST-"},
		{"manifest marker creation", errorfs.OpCreate, "marker.manifest."},
	} {
		t.Run(c.name, func(t *testing.T) {
			mem := vfs.NewMem()
			fault := &manifestFault{kind: c.kind, prefix: c.prefix}
			var logs bytes.Buffer
			opts := pebble.Options{
				FS:     errorfs.Wrap(mem, fault),
				Logger: slog.New(slog.NewTextHandler(&logs, nil)),
				Tune:   func(o *cpebble.Options) { o.MaxManifestFileSize = 1 },
			}
			e, err := pebble.Open("db", opts)
			if err != nil {
				t.Fatal(err)
			}
			fault.armed.Store(true)
			var committed [][]byte
			var failed error
			for i := 0; i < 20 && failed == nil; i++ {
				k := fmt.Appendf(nil, "key%02d", i)
				if err := e.Commit([]engine.Write{{Key: k, Value: []byte("v")}}, true); err != nil {
					t.Fatalf("commit %s: %v", k, err)
				}
				committed = append(committed, k)
				failed = e.Compact(context.Background())
			}
			if fault.failed.Load() == 0 {
				t.Fatalf("no %s failed in 20 flushes and compactions", c.name)
			}
			if !errors.Is(failed, engine.ErrFailed) {
				t.Fatalf("compaction that met the failed %s: got %v, want an error wrapping engine.ErrFailed", c.name, failed)
			}
			if _, err := e.View(); !errors.Is(err, engine.ErrFailed) {
				t.Fatalf("view after the failure: got %v, want an error wrapping engine.ErrFailed", err)
			}
			if err := e.Close(); !errors.Is(err, engine.ErrFailed) {
				t.Fatalf("close after the failure: got %v, want an error wrapping engine.ErrFailed", err)
			}
			if strings.Contains(logs.String(), "fatal=true") {
				t.Fatalf("Pebble saw the failed %s as fatal; logs:\n%s", c.name, logs.String())
			}
			checkFailedStoreReopens(t, mem, "db", committed)
		})
	}
}

// TestCompactReturnsWhenContextEnds checks Compact's and Purge's answer to a
// context that has ended: its error, at once, with the store unharmed (a
// later compaction and purge succeed, and Close is clean). Pebble is never
// given the caller's context (manualCompact, fence.go).
func TestCompactReturnsWhenContextEnds(t *testing.T) {
	e, err := pebble.Open("db", pebble.Options{InMemory: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Commit([]engine.Write{{Key: []byte("a"), Value: []byte("v")}}, true); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := e.Compact(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("compact with an ended context: got %v, want context.Canceled", err)
	}
	if err := e.Purge(ctx, nil, true, true); !errors.Is(err, context.Canceled) {
		t.Fatalf("purge with an ended context: got %v, want context.Canceled", err)
	}
	if err := e.Compact(context.Background()); err != nil {
		t.Fatalf("compact after the ended one: %v", err)
	}
	if err := e.Purge(context.Background(), nil, true, true); err != nil {
		t.Fatalf("purge after the ended one: %v", err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestFailedManifestWriteFailsAnIngestion checks the bulk ingestion's side of
// the same rule: when the MANIFEST write that would install the ingested
// table fails, Pebble sees nothing (its Ingest returns nil, the edit dropped),
// so IngestSorted must report the store's failure itself (health.failedOr),
// and the store reopens with what was committed before.
func TestFailedManifestWriteFailsAnIngestion(t *testing.T) {
	dir := t.TempDir()
	fault := &manifestFault{kind: errorfs.OpFileWrite, prefix: "MANIFEST-"}
	var logs bytes.Buffer
	e, err := pebble.Open(dir+"/db", pebble.Options{FS: errorfs.Wrap(vfs.Default, fault), Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	committed := []byte("a")
	if err := e.Commit([]engine.Write{{Key: committed, Value: []byte("v")}}, true); err != nil {
		t.Fatal(err)
	}
	fault.armed.Store(true)
	sent := false
	err = e.IngestSorted(t.TempDir(), func() (engine.Write, bool, error) {
		if sent {
			return engine.Write{}, false, nil
		}
		sent = true
		return engine.Write{Key: []byte("b"), Value: []byte("v")}, true, nil
	})
	if fault.failed.Load() == 0 {
		t.Fatalf("no MANIFEST write failed (ingestion: %v)", err)
	}
	if !errors.Is(err, engine.ErrFailed) {
		t.Fatalf("ingestion that met the failed MANIFEST write: got %v, want an error wrapping engine.ErrFailed", err)
	}
	if err := e.Close(); !errors.Is(err, engine.ErrFailed) {
		t.Fatalf("close after the failure: got %v, want an error wrapping engine.ErrFailed", err)
	}
	if strings.Contains(logs.String(), "fatal=true") {
		t.Fatalf("Pebble saw the failed MANIFEST write as fatal; logs:\n%s", logs.String())
	}
	checkFailedStoreReopens(t, vfs.Default, dir+"/db", [][]byte{committed})
}
