package pebble

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/bitempo/bitempo/engine"
)

// This file is how Open configures and opens Pebble in a directory, and the
// engine.Engine methods on it. The optional capabilities live beside the code
// they serve (ingest.go, checkpoint.go, purge.go, recover.go, failure.go).

// pebbleFormat is the Pebble format major version bitempo writes. It is pinned so
// that an upgrade of Pebble never silently ratchets a store's on-disk format. This
// version writes row-oriented sstables (TableFormatPebblev4), which are faster and
// smaller than the columnar format on bitempo's workload (docs/performance.md).
const pebbleFormat = pebble.FormatFlushableIngestExcises

// Engine is a bitempo store's Pebble database: it implements engine.Engine
// and the optional capabilities engine.Compacter, engine.Stucker,
// engine.Purger, engine.Checkpointer, engine.BulkIngester, engine.Recovered
// and engine.ReadOnly.
type Engine struct {
	db *pebble.DB
	h  *health // the first fatal error or corruption Pebble reported (failure.go)
	// stallTimeout bounds a commit's wait while flushes fail (Options.StallTimeout).
	stallTimeout time.Duration
	lock         *lockFile // the LOCK file as locked at Open (lock.go); nil in memory
	dir          string
	fs           vfs.FS
	// ownFS: the file system is one Open made (InMemory), which no caller
	// can reach to read a checkpoint or ingest from.
	ownFS    bool
	onDisk   bool
	readOnly bool
	opts     *pebble.Options // of the first open, for reopening (purge.go)
	// dirLock is held from Open to Close (lock.go); pebbleLock is the
	// engine's own reference to Pebble's directory lock, held as long too, so
	// that a reopen (purge.go) never leaves the directory unlocked.
	dirLock    *dirLock
	pebbleLock *pebble.Lock
	recovery   *engine.Recovery // what Options.RecoverWAL dropped
	watch      *walWatch        // the synced watermark (watermark.go); nil read-only
}

// Open opens (or creates, unless opts.ReadOnly or opts.MustExist) the Pebble
// database of a bitempo store in dir. It reads before it writes: a damaged
// MANIFEST or write-ahead log, or a store of another layout, is refused with
// the directory unchanged.
func Open(dir string, opts Options) (e *Engine, err error) {
	opts = opts.withDefaults()
	fsys := opts.FS
	ownFS := fsys == nil && opts.InMemory
	if ownFS {
		fsys = vfs.NewMem()
	}
	onDisk := fsys == nil
	if onDisk {
		fsys = vfs.Default
	}
	fresh, err := checkDir(fsys, dir, onDisk)
	if err != nil {
		return nil, err
	}
	if fresh && (opts.ReadOnly || opts.MustExist) {
		return nil, fmt.Errorf("%w: %s", engine.ErrNotExist, dir)
	}
	if fresh {
		if err := fsys.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("%w: create %s: %v", engine.ErrIO, dir, err)
		}
	}
	dl, lock, err := acquireLocks(dir, fsys, onDisk, opts.ReadOnly, opts.LockTimeout)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			lock.Close()
			dl.release()
		}
	}()
	lf, err := watchLockFile(dir, onDisk && !opts.ReadOnly) // only commits check it
	if err != nil {
		return nil, err
	}
	h := &health{logger: opts.Logger}
	var watch *walWatch
	if !opts.ReadOnly {
		watch = &walWatch{fsys: fsys, dir: dir, logger: opts.Logger}
	}
	popts := pebbleOptions(opts, fenceFS{fsys, h, watch, storeDir(fsys, dir)}, lock, h, fresh)
	warnSmallCache(popts, opts.Logger) // options.go
	var recovery *engine.Recovery
	// Both checks read before the read-write open writes anything: the engine
	// files first (a damaged MANIFEST or log is engine.ErrCorrupt, directory unchanged),
	// then the layout version (a store of another format is refused untouched).
	if !fresh {
		if err = h.guard(func() error { return checkComparer(fsys, dir, popts, opts.MustExist) }); err != nil { // format.go
			return nil, err
		}
		if recovery, err = checkBeforeOpen(fsys, dir, popts, opts); err != nil {
			return nil, err
		}
		if !opts.ReadOnly {
			if err = h.guard(func() error { return checkFormat(dir, popts) }); err != nil {
				return nil, err
			}
		}
	}
	var pdb *pebble.DB
	h.opening.Store(true)
	err = h.guard(func() (err error) {
		pdb, err = pebble.Open(dir, popts)
		return err
	})
	h.opening.Store(false)
	if err != nil {
		return nil, openError(fsys, dir, err, h)
	}
	return &Engine{db: pdb, h: h, stallTimeout: opts.StallTimeout, lock: lf, dir: dir, fs: fsys, ownFS: ownFS,
		onDisk: onDisk, readOnly: opts.ReadOnly, opts: popts, dirLock: dl, pebbleLock: lock, recovery: recovery, watch: watch}, nil
}

// pebbleOptions builds the Pebble options of a store from its Options. Every
// Pebble setting bitempo makes is here, the Tune hook last.
func pebbleOptions(opts Options, fsys vfs.FS, lock *pebble.Lock, h *health, fresh bool) *pebble.Options {
	popts := &pebble.Options{
		FS:                 fsys,
		Lock:               lock,
		ReadOnly:           opts.ReadOnly,
		ErrorIfNotExists:   !fresh,
		FormatMajorVersion: pebbleFormat,
		Logger:             slogLogger{opts.Logger, h},
		MemTableSize:       opts.MemTableSize,
		CacheSize:          opts.CacheSize,
		EventListener:      h.listener(),
		Cleaner:            noRecycleCleaner{}, // purge.go
	}
	applyLayoutOptions(popts) // comparer.go; before EnsureDefaults, which registers the filter
	popts.EnsureDefaults()
	if opts.Tune != nil {
		opts.Tune(popts)
	}
	return popts
}

// lockRetry is how often Open tries again for the store's locks while it
// waits for them (Options.LockTimeout).
const lockRetry = 25 * time.Millisecond

// acquireLocks takes the store's two locks (lock.go): the directory lock and
// Pebble's LOCK file, both shared for a read-only open, so that read-only opens
// run beside each other but never beside a writer. While another process
// holds them it tries again until timeout has passed, and then fails with
// engine.ErrLocked saying how long it waited.
func acquireLocks(dir string, fsys vfs.FS, onDisk, shared bool, timeout time.Duration) (*dirLock, *pebble.Lock, error) {
	start := time.Now()
	for {
		dl, lock, err := tryLocks(dir, fsys, onDisk, shared)
		if err == nil || !errors.Is(err, engine.ErrLocked) {
			return dl, lock, err
		}
		if waited := time.Since(start); waited >= timeout {
			if timeout > 0 {
				err = fmt.Errorf("%w (waited %s)", err, timeout)
			}
			return nil, nil, err
		}
		time.Sleep(min(lockRetry, timeout-time.Since(start)+time.Millisecond))
	}
}

// tryLocks takes the store's locks once, or fails with engine.ErrLocked.
func tryLocks(dir string, fsys vfs.FS, onDisk, shared bool) (*dirLock, *pebble.Lock, error) {
	var dl *dirLock
	if onDisk {
		var err error
		if dl, err = lockDir(dir, shared); err != nil {
			return nil, nil, err
		}
		if shared {
			fsys = sharedLockFS{fsys}
		}
	}
	lock, err := pebble.LockDirectory(dir, fsys)
	if err != nil {
		dl.release()
		return nil, nil, fmt.Errorf("%w: %s: %v", engine.ErrLocked, dir, err)
	}
	return dl, lock, nil
}

// Name implements engine.Engine.
func (e *Engine) Name() string { return "pebble" }

// Compact runs a manual compaction of the whole key space, one level after
// another (engine.Compacter). When ctx ends it returns ctx's error and leaves
// the compaction running in the background (manualCompact, fence.go).
func (e *Engine) Compact(ctx context.Context) error {
	if err := e.h.err(); err != nil {
		return err
	}
	return e.h.readErr(e.waitUnlessFailed(ctx, func() error {
		return e.manualCompact([]byte{0x00}, []byte{0xff, 0xff}) // fence.go
	}))
}

// View refuses to read after a fatal error (the memtable may hold the batch whose
// commit failed, which must not be shown as committed) and after a corruption.
func (e *Engine) View() (engine.View, error) {
	if err := e.h.err(); err != nil {
		return nil, err
	}
	return &pebbleView{snap: e.db.NewSnapshot(), h: e.h}, nil
}

// Commit applies writes as one Pebble batch. A failed write or sync of the
// write-ahead log never reaches Pebble (which would panic on some): it fails
// the store (fence.go), and the commit that met it returns an error wrapping
// engine.ErrFailed; every later commit and view is refused until the store is
// reopened. A Fatalf of Pebble's on the committing goroutine (slogLogger)
// becomes the same error through guard. Reopening the store recovers from the
// log: the failed batch is absent, or (when the OS kept data whose sync
// failed) present whole. A commit is refused, before anything is written, once
// a corruption has been seen.
func (e *Engine) Commit(writes []engine.Write, sync bool) error {
	if err := e.h.err(); err != nil {
		return err
	}
	if err := e.lock.check(); err != nil {
		return err
	}
	// The batch commits on its own goroutine so that a commit that cannot make
	// progress (see health.await) returns, even the first to stall, which is
	// usually already waiting when the first flush fails
	// (docs/design/commit-goroutine.md).
	done := make(chan error, 1)
	go func() { done <- e.h.guard(func() error { return e.commitBatch(writes, sync) }) }()
	err := e.h.await(done, e.stallTimeout)
	if err == nil {
		// A failed write or sync of the log fails the store without
		// reaching Pebble (fence.go): this commit then did not land whole.
		err = e.h.err()
	}
	if err == nil && sync {
		e.watch.persist(false)
	}
	if err == nil || wrapped(err) {
		return err
	}
	return fmt.Errorf("%w: commit: %s", engine.ErrIO, oneLine(err.Error()))
}

func (e *Engine) commitBatch(writes []engine.Write, sync bool) error {
	b := e.db.NewBatch()
	defer b.Close()
	for _, w := range writes {
		var err error
		switch {
		case w.RangeEnd != nil:
			err = b.DeleteRange(w.Key, w.RangeEnd, nil)
		case w.Delete:
			err = b.Delete(w.Key, nil)
		default:
			err = b.Set(w.Key, w.Value, nil)
		}
		if err != nil {
			return err
		}
	}
	opt := pebble.NoSync
	if sync {
		opt = pebble.Sync
	}
	return b.Commit(opt)
}

// Stuck returns the error of a commit that gave up waiting (health.await), or
// nil (engine.Stucker).
func (e *Engine) Stuck() error {
	if e.h.stuck.Load() == nil {
		return nil
	}
	return e.h.err()
}

// Close closes Pebble. After a fatal error Pebble's Close may report it again
// (or call Fatalf), which guard turns into the error.
func (e *Engine) Close() error {
	defer e.dirLock.release()
	defer e.pebbleLock.Close()
	if e.db == nil { // a failed purge rotation closed it (purge.go)
		e.watch.abandon()
		return nil
	}
	err := e.h.guard(e.db.Close)
	if err == nil && e.h.err() == nil {
		e.watch.close()
	} else {
		e.watch.abandon()
	}
	if err == nil && e.h.failed.Load() != nil {
		// A failed store closes cleanly now that its failed writes never
		// reach Pebble (fence.go); Close still says it failed.
		err = e.h.err()
	}
	if err == nil || wrapped(err) {
		return err
	}
	if herr := e.h.err(); herr != nil {
		return fmt.Errorf("%w (closing: %s)", herr, oneLine(err.Error()))
	}
	return fmt.Errorf("%w: close: %s", engine.ErrIO, oneLine(err.Error()))
}

type pebbleView struct {
	snap *pebble.Snapshot
	h    *health
}

func (v *pebbleView) NewIter(lower, upper []byte) (engine.Iter, error) {
	it, err := v.snap.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return nil, v.h.readErr(err)
	}
	return checkedIter{it, v.h}, nil
}

// checkedIter is a Pebble iterator whose errors say engine.ErrCorrupt for corruption.
type checkedIter struct {
	*pebble.Iterator
	h *health
}

func (it checkedIter) Error() error { return it.h.readErr(it.Iterator.Error()) }
func (it checkedIter) Close() error { return it.h.readErr(it.Iterator.Close()) }

func (v *pebbleView) Get(key []byte) ([]byte, bool, error) {
	val, closer, err := v.snap.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, v.h.readErr(err)
	}
	out := append([]byte(nil), val...)
	return out, true, closer.Close()
}

func (v *pebbleView) Close() error { return v.snap.Close() }

// checkDir reports whether dir holds no store yet, and refuses a directory that
// holds files but no Pebble store (such as a home directory given by mistake).
func checkDir(fsys vfs.FS, dir string, onDisk bool) (fresh bool, err error) {
	names, err := fsys.List(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || os.IsNotExist(err) {
			return true, nil
		}
		if onDisk {
			if st, serr := os.Stat(dir); serr == nil && !st.IsDir() {
				return false, fmt.Errorf("%w: %s is a file, not a directory", engine.ErrNotBitempo, dir)
			}
		}
		return false, fmt.Errorf("%w: read %s: %v", engine.ErrIO, dir, err)
	}
	if len(names) == 0 {
		return true, nil
	}
	for _, n := range names {
		if strings.HasPrefix(n, "MANIFEST-") || n == "CURRENT" || strings.HasPrefix(n, "marker.manifest") {
			return false, nil
		}
	}
	return false, fmt.Errorf("%w: %s holds files but no store", engine.ErrNotBitempo, dir)
}

// Recovery returns what Options.RecoverWAL dropped from a damaged write-ahead
// log, or nil if the log was intact (engine.Recovered).
func (e *Engine) Recovery() *engine.Recovery { return e.recovery }

// ReadOnly reports whether the engine was opened read-only (engine.ReadOnly).
func (e *Engine) ReadOnly() bool { return e.readOnly }

// Metrics returns Pebble's metrics of the engine: its levels, caches and
// files, for tools and benchmarks that report what a workload cost.
func (e *Engine) Metrics() *pebble.Metrics { return e.db.Metrics() }
