package pebble

import (
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
// that would install it, and the removal of the inputs, are refused, and a
// reopen reads them all again (docs/design/failed-table-reads.md).

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
// flush, a compaction), on its own goroutine, and waits for it or for the
// store to fail. A failed store refuses every file Pebble would create, so
// such a wait may never end, inside Pebble's commit pipeline: once the store
// has been failed for failedGrace the call is left waiting, the store is
// marked stuck (it cannot be closed, as after health.await gives up; restart
// the process) and the failure is returned.
func (e *Engine) waitUnlessFailed(fn func() error) error {
	done := make(chan error, 1)
	go func() { done <- e.h.guard(fn) }()
	tick := time.NewTicker(stallPoll)
	defer tick.Stop()
	var failedFor time.Duration
	for {
		select {
		case err := <-done:
			return e.h.failedOr(err)
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

// failedGrace is how long waitUnlessFailed lets a call of a failed store
// finish before it leaves it waiting.
const failedGrace = time.Second

// failedOr returns the store's failure, if it failed, or else err.
func (h *health) failedOr(err error) error {
	if err != nil {
		if herr := h.err(); herr != nil {
			return herr
		}
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

func (f fenceFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	if isLogName(name) && f.h.failed.Load() != nil {
		return &deadLog{}, nil
	}
	if err := f.fenced(name); err != nil {
		return nil, err
	}
	file, err := f.FS.Create(name, category)
	if err != nil {
		if isLogName(name) {
			f.h.ioFail("create "+name, err)
			return &deadLog{}, nil
		}
		return nil, err
	}
	return f.wrap(name, file), nil
}

func (f fenceFS) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	if err := f.fenced(newname); err != nil {
		return nil, err
	}
	file, err := f.FS.ReuseForWrite(oldname, newname, category)
	if err != nil {
		return nil, err
	}
	return f.wrap(newname, file), nil
}

// wrap wraps a file created for writing: a write-ahead log in a walLogFile, any
// other file in a fencedFile.
func (f fenceFS) wrap(name string, file vfs.File) vfs.File {
	if !isLogName(name) {
		return fencedFile{File: file, h: f.h, name: name}
	}
	lf := &walLogFile{File: file, h: f.h, name: name}
	if f.w != nil {
		lf.wf = f.w.track(name)
	}
	return lf
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

// walLogFile is a write-ahead log open for writing. A failed write or sync fails
// the store instead of reaching Pebble, and from then on its writes and syncs
// are dropped: the log ends where the failure left it.
type walLogFile struct {
	vfs.File
	h    *health
	name string
	wf   *walFile // the synced watermark's view of it (watermark.go), if kept
	dead atomic.Bool
}

func (f *walLogFile) dropping() bool { return f.dead.Load() || f.h.failed.Load() != nil }

func (f *walLogFile) fail(what string, err error) {
	f.dead.Store(true)
	f.h.ioFail(what+" "+f.name, err)
}

func (f *walLogFile) Write(p []byte) (int, error) {
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

func (f *walLogFile) WriteAt(p []byte, off int64) (int, error) {
	if f.dropping() {
		return len(p), nil
	}
	if _, err := f.File.WriteAt(p, off); err != nil {
		f.fail("write", err)
	}
	return len(p), nil
}

func (f *walLogFile) sync(do func() error) error {
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

func (f *walLogFile) Sync() error     { return f.sync(f.File.Sync) }
func (f *walLogFile) SyncData() error { return f.sync(f.File.SyncData) }

func (f *walLogFile) SyncTo(length int64) (bool, error) {
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

func (f *walLogFile) Preallocate(off, length int64) error {
	if f.dropping() {
		return nil
	}
	_ = f.File.Preallocate(off, length) // an optimisation: a failure only costs it
	return nil
}

func (f *walLogFile) Close() error {
	_ = f.File.Close() // every write and sync that mattered has been checked
	return nil
}

// deadLog stands for a write-ahead log created after the store failed: it
// drops everything written to it and reads as empty.
type deadLog struct{}

func (*deadLog) Read([]byte) (int, error)          { return 0, io.EOF }
func (*deadLog) ReadAt([]byte, int64) (int, error) { return 0, io.EOF }
func (*deadLog) Prefetch(int64, int64) error       { return nil }
func (*deadLog) Stat() (vfs.FileInfo, error)       { return deadInfo{}, nil }

func (*deadLog) Write(p []byte) (int, error)            { return len(p), nil }
func (*deadLog) WriteAt(p []byte, _ int64) (int, error) { return len(p), nil }
func (*deadLog) Sync() error                            { return nil }
func (*deadLog) SyncData() error                        { return nil }
func (*deadLog) SyncTo(int64) (bool, error)             { return true, nil }
func (*deadLog) Preallocate(int64, int64) error         { return nil }
func (*deadLog) Close() error                           { return nil }
func (*deadLog) Fd() uintptr                            { return vfs.InvalidFd }

// deadInfo is the FileInfo of a deadLog: an empty file.
type deadInfo struct{}

func (deadInfo) Name() string           { return "dropped.log" }
func (deadInfo) Size() int64            { return 0 }
func (deadInfo) Mode() os.FileMode      { return 0o644 }
func (deadInfo) ModTime() time.Time     { return time.Time{} }
func (deadInfo) IsDir() bool            { return false }
func (deadInfo) Sys() any               { return nil }
func (deadInfo) DeviceID() vfs.DeviceID { return vfs.DeviceID{} }
