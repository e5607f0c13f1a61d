package pebble

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/bitempo/bitempo/engine"
	"github.com/bitempo/bitempo/internal/callstack"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// This file is how a store's file system fails once writing has gone wrong
// (fenceFS, failure.go). Pebble calls Fatalf on most failed writes to its
// logs, which the store turns into ErrFailed; but on some it panics with the
// error instead, where no recover can help: a failed write-ahead log write is
// met by the next commit's WriteRecord (panic), a failed close (sync) of the
// previous log or creation of the next one by the log rotation (panic, with
// Pebble's mutex unlocked under a deferred unlock, which ends the process), a
// failed directory sync after the next log is created likewise. TestInjected
// IOErrors found each of these. So a failure of a write-ahead log write or
// sync, or of a directory sync, is not returned to Pebble: it fails the store
// (ErrFailed, every later call refused, the commit that met it reported
// failed by Engine.Commit), and from then on the file system keeps the
// directory as the failure left it, as a crash would: writes to every
// write-ahead log are dropped (reported done), a new log is a file that drops
// its writes, and everything else that would change the directory (creating,
// renaming, linking, removing files, writing or syncing other files) is
// refused. Reopening the store replays what reached the log before the
// failure. Pebble's panics are avoided, not recovered: they leave its commit
// pipeline locked and, on the rotation path, cannot be recovered at all.

// A failed open or read of a table file fails the store too, before Pebble
// sees the error, and so does a corruption (health.corrupt): Pebble v2.1.7
// drops some read errors of a compaction (one met when its range-key
// iterator first opens an input table) and then installs a compaction with
// no output, deleting its inputs. With the store failed the MANIFEST write
// that would install it is dropped and the removal of the inputs refused, so
// a reopen reads them all again (docs/design/failed-table-reads.md).

// The MANIFEST is kept like the write-ahead logs, for another reason: before
// Pebble writes a version edit it prepares the new organisation of level 0,
// recomputing the key intervals of the level's tables in their metadata, which
// the current organisation shares. When the write, its sync or the move of the
// manifest marker that follows fails, Pebble calls Fatalf and returns the error
// without undoing that, and the rollback of the flush or compaction then
// reads the tables' intervals against the old organisation: an index out of
// range, or (with Pebble's invariants on) the panic "f.minIntervalIndex in
// TableMetadata out of sync", on a background goroutine, which ends the process.
// TestInjectedIOErrors met it in CI. So a failed write or sync of a MANIFEST, or
// a failed creation of a MANIFEST or marker file, fails the store instead of
// reaching Pebble, and once the store has stopped (failed, or met a
// corruption), MANIFEST writes and syncs are dropped (reported done) and a new
// MANIFEST or marker is a file that is never created: Pebble installs the edit
// in its memory, which a stopped store never serves, never logs a fatal error,
// and the directory keeps the MANIFEST and its marker as the failure left them
// (docs/design/failed-manifest-writes.md).

// failedPause is how long a refused change waits before it fails, once the
// store has failed: Pebble retries a failed flush at once, and without the
// pause its background goroutines would spin until Close.
const failedPause = 20 * time.Millisecond

// fencePause is how long a refused file creation waits before it fails once a
// commit gave up waiting (health.stuck).
const fencePause = time.Second

func (f fenceFS) fenced(name string) error {
	if msg := f.h.stuck.Load(); msg != nil {
		time.Sleep(fencePause)
		return fmt.Errorf("%w: %s: the store stopped writing: %s", engine.ErrIO, name, *msg)
	}
	if err := stoppedWriting(f.h, name); err != nil {
		time.Sleep(failedPause)
		return err
	}
	return nil
}

// stoppedWriting returns the error a change to the store's files gets once
// the store has failed or met a corruption, or nil. Pebble's Open itself is
// let through: when one of its own file operations fails, Open releases its
// file cache without waiting for the compactions it has already started,
// which then panic on a background goroutine (Pebble v2.1.7) and end the
// process. Open's own writes (the new write-ahead log, the OPTIONS file, the
// format marker) change no data; the compactions' installs and removals run
// on other goroutines and are refused, and the store, failed, refuses every
// call once Open returns. The call stack is looked at only while Open runs
// (health.opening): a failed store's writes after it are refused cheaply.
func stoppedWriting(h *health, name string) error {
	msg, c := h.failed.Load(), h.corrupt.Load()
	if (msg == nil && c == nil) || (h.opening.Load() && inPebbleOpen()) {
		return nil
	}
	if msg != nil {
		return fmt.Errorf("%w: %s: the store stopped writing: %s", engine.ErrFailed, name, *msg)
	}
	return fmt.Errorf("%w: %s: the store stopped writing: %s: %s", engine.ErrCorrupt, name, c.path, c.detail)
}

// pebbleOpenName is Pebble's Open as runtime.Frame.Function spells it
// (TestInPebbleOpen checks it).
const pebbleOpenName = "github.com/cockroachdb/pebble/v2.Open"

// inPebbleOpen reports whether the calling goroutine is inside Pebble's Open.
func inPebbleOpen() bool { return callstack.Has(pebbleOpenName) }

// waitUnlessFailed runs fn, a call into Pebble that may wait for a flush (a
// flush, a compaction), on its own goroutine, and waits for it, for the store
// to fail or for ctx to end. A failed store refuses every file Pebble would
// create, so such a wait may never end, inside Pebble's commit pipeline: once
// the store has been failed for failedGrace the call is left waiting, the
// store is marked stuck (it cannot be closed, as after health.await gives up;
// restart the process) and the failure is returned. When ctx ends first, the
// call is left to finish in the background and ctx's error is returned: fn
// must not give Pebble a context that can end (see manualCompact).
func (e *Engine) waitUnlessFailed(ctx context.Context, fn func() error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- e.h.guard(fn) }()
	tick := time.NewTicker(stallPoll)
	defer tick.Stop()
	var failedFor time.Duration
	for {
		select {
		case err := <-done:
			return e.h.failedOr(err)
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
			if e.h.failed.Load() == nil {
				continue
			}
			if failedFor += stallPoll; failedFor < failedGrace {
				continue
			}
			msg := "a flush or compaction was left waiting inside Pebble when the store failed; restart the process to reopen the store"
			e.h.stuck.CompareAndSwap(nil, &msg)
			return e.h.err()
		}
	}
}

// manualCompact compacts [start, end) through every level, as Pebble's
// Compact does, in one compaction per level and with a context that never
// ends. Pebble v2.1.7 can keep a picked manual compaction in its
// pickedCompactionCache while it waits for a compaction slot; when a sibling
// of a parallelized manual compaction fails, or the caller's context ends,
// Compact removes the queued ones from its list without invalidating that
// cache, and the cached one later runs and panics on a background goroutine
// ("did not find manual compaction with id"). TestInjectedIOErrors met it.
// Without the split there is no sibling (and with bitempo's default of one
// compaction at a time a split ran one part after another anyway); without
// the cancellation nothing is removed. waitUnlessFailed returns when the
// caller's context ends, leaving the compaction to finish.
func (e *Engine) manualCompact(start, end []byte) error {
	return e.db.Compact(context.Background(), start, end, false)
}

// failedGrace is how long waitUnlessFailed lets a call of a failed store
// finish before it leaves it waiting.
const failedGrace = time.Second

// failedOr returns the store's failure if it has failed or met a corruption,
// or else err. A call during which the store stopped is reported failed even
// when Pebble returned nil: what it changed may not have reached the disk (a
// MANIFEST write is dropped, not failed, once the store has stopped).
func (h *health) failedOr(err error) error {
	if herr := h.err(); herr != nil {
		return herr
	}
	return err
}

// ioFail fails the store on a write that Pebble must not see fail.
func (h *health) ioFail(what string, err error) {
	msg := fmt.Sprintf("%s: %s; the store stopped writing, reopen it", what, oneLine(err.Error()))
	if h.failed.CompareAndSwap(nil, &msg) {
		h.logger.Error("bitempo: "+msg, "component", "bitempo")
	}
}

func isLogName(name string) bool { return strings.HasSuffix(name, ".log") }

// fileKind is what a file is to the fence.
type fileKind int

const (
	kindOther    fileKind = iota // any other file, or a file outside the store's directory (a checkpoint's)
	kindLog                      // a write-ahead log
	kindManifest                 // a MANIFEST
	kindMarker                   // a file of the marker that names the current MANIFEST
)

// kind returns what name is to the fence. Only the store's own files are kept
// from failing (a stopFile): a checkpoint's copies of them are written
// plainly, their failure is the checkpoint's error, and the synced watermark
// does not follow a copied log (docs/design/wal-synced-watermark.md).
func (f fenceFS) kind(name string) fileKind {
	if f.FS.PathDir(name) != f.dir {
		return kindOther
	}
	base := f.FS.PathBase(name)
	switch {
	case isLogName(base):
		return kindLog
	case strings.HasPrefix(base, "MANIFEST-"):
		return kindManifest
	case strings.HasPrefix(base, "marker.manifest."):
		return kindMarker
	}
	return kindOther
}

// Create creates a file for writing. A write-ahead log, MANIFEST or manifest
// marker of the store created once the store has stopped, or whose creation
// fails (which fails the store), is a deadFile.
func (f fenceFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	kind := f.kind(name)
	neverFails := kind != kindOther
	if neverFails && f.h.stopped() {
		return &deadFile{}, nil
	}
	if err := f.fenced(name); err != nil {
		return nil, err
	}
	file, err := f.FS.Create(name, category)
	if err != nil {
		if neverFails {
			f.h.ioFail("create "+name, err)
			return &deadFile{}, nil
		}
		return nil, err
	}
	return f.wrap(name, kind, file), nil
}

func (f fenceFS) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	if err := f.fenced(newname); err != nil {
		return nil, err
	}
	file, err := f.FS.ReuseForWrite(oldname, newname, category)
	if err != nil {
		return nil, err
	}
	return f.wrap(newname, f.kind(newname), file), nil
}

// wrap wraps a file created for writing: a write-ahead log, a MANIFEST or a
// manifest marker of the store in a stopFile, any other file in a fencedFile.
func (f fenceFS) wrap(name string, kind fileKind, file vfs.File) vfs.File {
	if kind == kindOther {
		return fencedFile{File: file, h: f.h, name: name}
	}
	sf := &stopFile{File: file, h: f.h, name: name}
	if f.w != nil && kind == kindLog {
		sf.wf = f.w.track(name)
	}
	return sf
}

func isTableName(name string) bool { return strings.HasSuffix(name, ".sst") }

// Open opens a file for reading. A table file that fails to open fails the
// store (see the top of this file).
func (f fenceFS) Open(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	file, err := f.FS.Open(name, opts...)
	if !isTableName(name) {
		return file, err
	}
	if err != nil {
		f.h.ioFail("open "+name, err)
		return nil, err
	}
	return tableFile{File: file, h: f.h, name: name}, nil
}

// tableFile is a table file open for reading: a failed read fails the store.
type tableFile struct {
	vfs.File
	h    *health
	name string
}

func (f tableFile) ReadAt(p []byte, off int64) (int, error) {
	n, err := f.File.ReadAt(p, off)
	if err != nil && (n < len(p) || !errors.Is(err, io.EOF)) {
		f.h.ioFail("read "+f.name, err)
	}
	return n, err
}

func (f tableFile) Read(p []byte) (int, error) {
	n, err := f.File.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		f.h.ioFail("read "+f.name, err)
	}
	return n, err
}

func (f fenceFS) OpenDir(name string) (vfs.File, error) {
	d, err := f.FS.OpenDir(name)
	if err != nil {
		return nil, err
	}
	return dirFile{File: d, h: f.h, name: name}, nil
}

func (f fenceFS) OpenReadWrite(name string, category vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	if err := f.fenced(name); err != nil {
		return nil, err
	}
	file, err := f.FS.OpenReadWrite(name, category, opts...)
	if err != nil {
		return nil, err
	}
	return fencedFile{File: file, h: f.h, name: name}, nil
}

func (f fenceFS) Remove(name string) error {
	if err := f.fenced(name); err != nil {
		return err
	}
	return f.FS.Remove(name)
}

func (f fenceFS) RemoveAll(name string) error {
	if err := f.fenced(name); err != nil {
		return err
	}
	return f.FS.RemoveAll(name)
}

func (f fenceFS) Rename(oldname, newname string) error {
	if err := f.fenced(newname); err != nil {
		return err
	}
	return f.FS.Rename(oldname, newname)
}

func (f fenceFS) Link(oldname, newname string) error {
	if err := f.fenced(newname); err != nil {
		return err
	}
	return f.FS.Link(oldname, newname)
}

// fencedFile is a file other than a write-ahead log, open for writing: once
// the store has failed its writes and syncs are refused.
type fencedFile struct {
	vfs.File
	h    *health
	name string
}

func (f fencedFile) check() error { return stoppedWriting(f.h, f.name) }

func (f fencedFile) Write(p []byte) (int, error) {
	if err := f.check(); err != nil {
		return 0, err
	}
	return f.File.Write(p)
}

func (f fencedFile) WriteAt(p []byte, off int64) (int, error) {
	if err := f.check(); err != nil {
		return 0, err
	}
	return f.File.WriteAt(p, off)
}

func (f fencedFile) Sync() error {
	if err := f.check(); err != nil {
		return err
	}
	return f.File.Sync()
}

func (f fencedFile) SyncData() error {
	if err := f.check(); err != nil {
		return err
	}
	return f.File.SyncData()
}

func (f fencedFile) SyncTo(length int64) (bool, error) {
	if err := f.check(); err != nil {
		return false, err
	}
	return f.File.SyncTo(length)
}

// dirFile is a directory of the store: a failed sync of it fails the store
// instead of reaching Pebble, and syncs after that do nothing.
type dirFile struct {
	vfs.File
	h    *health
	name string
}

func (d dirFile) Sync() error {
	if d.h.failed.Load() != nil {
		return nil
	}
	if err := d.File.Sync(); err != nil {
		d.h.ioFail("sync directory "+d.name, err)
	}
	return nil
}

// stopFile is a write-ahead log, a MANIFEST or a manifest marker open for
// writing: a file whose failed write Pebble must not see (see the top of this
// file). A failed write or sync fails the store instead of reaching Pebble,
// and from then on, as once the store has failed or met a corruption, its
// writes and syncs are dropped and reported done: the file ends where the
// failure left it.
type stopFile struct {
	vfs.File
	h    *health
	name string
	wf   *walFile // a log's view in the synced watermark (watermark.go), if kept
	dead atomic.Bool
}

func (f *stopFile) dropping() bool { return f.dead.Load() || f.h.stopped() }

func (f *stopFile) fail(what string, err error) {
	f.dead.Store(true)
	f.h.ioFail(what+" "+f.name, err)
}

func (f *stopFile) Write(p []byte) (int, error) {
	if f.dropping() {
		return len(p), nil
	}
	n, err := f.File.Write(p)
	if f.wf != nil {
		f.wf.count(p[:n])
	}
	if err != nil {
		f.fail("write", err)
	}
	return len(p), nil
}

func (f *stopFile) WriteAt(p []byte, off int64) (int, error) {
	if f.dropping() {
		return len(p), nil
	}
	if _, err := f.File.WriteAt(p, off); err != nil {
		f.fail("write", err)
	}
	return len(p), nil
}

func (f *stopFile) sync(do func() error) error {
	if f.dropping() {
		return nil
	}
	if err := do(); err != nil {
		f.fail("sync", err)
		return nil
	}
	if f.wf != nil && !f.dropping() {
		f.wf.synced()
	}
	return nil
}

func (f *stopFile) Sync() error     { return f.sync(f.File.Sync) }
func (f *stopFile) SyncData() error { return f.sync(f.File.SyncData) }

func (f *stopFile) SyncTo(length int64) (bool, error) {
	if f.dropping() {
		return true, nil
	}
	full, err := f.File.SyncTo(length)
	if err != nil {
		f.fail("sync", err)
		return true, nil
	}
	return full, nil
}

func (f *stopFile) Preallocate(off, length int64) error {
	if f.dropping() {
		return nil
	}
	_ = f.File.Preallocate(off, length) // an optimisation: a failure only costs it
	return nil
}

func (f *stopFile) Close() error {
	_ = f.File.Close() // every write and sync that mattered has been checked
	return nil
}

// deadFile stands for a write-ahead log, MANIFEST or manifest marker created
// after the store stopped: it is never created, drops everything written to it
// and reads as empty.
type deadFile struct{}

func (*deadFile) Read([]byte) (int, error)          { return 0, io.EOF }
func (*deadFile) ReadAt([]byte, int64) (int, error) { return 0, io.EOF }
func (*deadFile) Prefetch(int64, int64) error       { return nil }
func (*deadFile) Stat() (vfs.FileInfo, error)       { return deadInfo{}, nil }

func (*deadFile) Write(p []byte) (int, error)            { return len(p), nil }
func (*deadFile) WriteAt(p []byte, _ int64) (int, error) { return len(p), nil }
func (*deadFile) Sync() error                            { return nil }
func (*deadFile) SyncData() error                        { return nil }
func (*deadFile) SyncTo(int64) (bool, error)             { return true, nil }
func (*deadFile) Preallocate(int64, int64) error         { return nil }
func (*deadFile) Close() error                           { return nil }
func (*deadFile) Fd() uintptr                            { return vfs.InvalidFd }

// deadInfo is the FileInfo of a deadFile: an empty file.
type deadInfo struct{}

func (deadInfo) Name() string           { return "dropped" }
func (deadInfo) Size() int64            { return 0 }
func (deadInfo) Mode() os.FileMode      { return 0o644 }
func (deadInfo) ModTime() time.Time     { return time.Time{} }
func (deadInfo) IsDir() bool            { return false }
func (deadInfo) Sys() any               { return nil }
func (deadInfo) DeviceID() vfs.DeviceID { return vfs.DeviceID{} }
