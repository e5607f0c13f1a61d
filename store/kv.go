package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// This file is the storage boundary: everything the rest of the package needs from
// the underlying ordered key-value engine. It is deliberately small (bounded
// ordered iteration, point get, consistent snapshot, atomic batch commit) so the
// layout can run on another engine with the same guarantees, such as etcd (range
// reads at a revision, multi-key transactions).

// kvIter is a bounded ordered iterator. *pebble.Iterator implements it.
type kvIter interface {
	First() bool
	Last() bool
	SeekGE(key []byte) bool
	// SeekPrefixGE is SeekGE confined to the keys whose prefix (comparer.go)
	// is key's: later moves stop at the end of that prefix, Prev is not
	// allowed, and the engine may skip every file whose filter says the
	// prefix is absent. Reads of one key use it.
	SeekPrefixGE(key []byte) bool
	SeekLT(key []byte) bool
	Next() bool
	Prev() bool
	Valid() bool
	Key() []byte
	Value() []byte
	SetBounds(lower, upper []byte)
	Error() error
	Close() error
}

// kvView is a consistent, read-only view of the engine.
type kvView interface {
	newIter(lower, upper []byte) (kvIter, error)
	// get returns a copy of the value of key, or (nil, false, nil) if absent.
	get(key []byte) ([]byte, bool, error)
	close() error
}

// kvWrite is one mutation of a batch. With rangeEnd set it deletes every key
// in [key, rangeEnd) (DropTable); del and value are then ignored.
type kvWrite struct {
	key, value []byte
	del        bool
	rangeEnd   []byte
}

// kvEngine is the engine under a DB.
type kvEngine interface {
	view() (kvView, error)
	// commit applies writes atomically, in order, durably when sync is set.
	commit(writes []kvWrite, sync bool) error
	// compact rewrites every key into the engine's most compact, read-optimised
	// shape (for an LSM: the bottom levels, with no overlapping files above).
	compact(ctx context.Context) error
	// stuck returns the error of a commit that could not make progress and
	// still waits inside the engine (then close would wait for it), or nil.
	stuck() error
	// purge makes the bytes of deleted keys in spans (all keys when all)
	// leave the engine's files; see purge.go.
	purge(ctx context.Context, spans []span, all, wait bool) error
	// rotateManifest drops the engine's records of deleted files (purge.go);
	// it closes the engine, and reopens it when reopen is set.
	rotateManifest(reopen bool) error
	close() error
}

// pebbleEngine implements kvEngine on a Pebble DB.
type pebbleEngine struct {
	db *pebble.DB
	h  *health // the first fatal error or corruption Pebble reported (failure.go)
	// stallTimeout bounds a commit's wait while flushes fail (Options.StallTimeout).
	stallTimeout time.Duration
	lock         *lockFile // the LOCK file as locked at Open (lock.go); nil in memory
	dir          string
	opts         *pebble.Options // of the first open, for reopening (purge.go)
}

// compact runs a manual compaction of the whole key space, in parallel where
// Pebble can split it.
func (e *pebbleEngine) compact(ctx context.Context) error {
	if err := e.h.err(); err != nil {
		return err
	}
	return e.h.readErr(e.h.guard(func() error {
		return e.db.Compact(ctx, []byte{0x00}, []byte{0xff, 0xff}, true)
	}))
}

// view refuses to read after a fatal error (the memtable may hold the batch whose
// commit failed, which must not be shown as committed) and after a corruption.
func (e *pebbleEngine) view() (kvView, error) {
	if err := e.h.err(); err != nil {
		return nil, err
	}
	return &pebbleView{snap: e.db.NewSnapshot(), h: e.h}, nil
}

// commit applies writes as one Pebble batch. Pebble treats a failed write-ahead
// log write or sync as fatal and calls Logger.Fatalf, which slogLogger turns into a
// fatalError panic on the committing goroutine; guard turns it back into an
// error wrapping ErrFailed, and every later commit and view is refused, because
// Pebble's state is then unknown. Reopening the store recovers from the log: the
// failed batch is absent, or (when the OS kept data whose sync failed) present
// whole. A commit is refused, before anything is written, once a corruption has
// been seen, and when a value exceeds the size the decoders accept (checkWrites).
func (e *pebbleEngine) commit(writes []kvWrite, sync bool) error {
	if err := e.h.err(); err != nil {
		return err
	}
	if err := checkWrites(writes); err != nil {
		return err
	}
	if err := e.lock.check(); err != nil {
		return err
	}
	// The batch commits on its own goroutine so that a commit that cannot make
	// progress (see health.await) returns. That costs a goroutine and a channel:
	// 2.6-4.6 us on the loaded development machine, where a one-record unsynced
	// transaction took 60-240 us. (Rejected: committing inline unless a flush
	// has failed; the first commit to stall is usually already waiting when the
	// first flush fails, and it and every writer behind it would hang.)
	done := make(chan error, 1)
	go func() { done <- e.h.guard(func() error { return e.commitBatch(writes, sync) }) }()
	err := e.h.await(done, e.stallTimeout)
	if err == nil || wrapped(err) {
		return err
	}
	return fmt.Errorf("%w: commit: %s", ErrIO, oneLine(err.Error()))
}

func (e *pebbleEngine) commitBatch(writes []kvWrite, sync bool) error {
	b := e.db.NewBatch()
	defer b.Close()
	for _, w := range writes {
		var err error
		switch {
		case w.rangeEnd != nil:
			err = b.DeleteRange(w.key, w.rangeEnd, nil)
		case w.del:
			err = b.Delete(w.key, nil)
		default:
			err = b.Set(w.key, w.value, nil)
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

// stuck returns the error of a commit that gave up waiting (health.await), or nil.
func (e *pebbleEngine) stuck() error {
	if e.h.stuck.Load() == nil {
		return nil
	}
	return e.h.err()
}

// close closes Pebble. After a fatal error Pebble's Close may report it again
// (or call Fatalf), which guard turns into the error.
func (e *pebbleEngine) close() error {
	if e.db == nil { // a failed purge rotation closed it (purge.go)
		return nil
	}
	err := e.h.guard(e.db.Close)
	if err == nil || wrapped(err) {
		return err
	}
	if herr := e.h.err(); herr != nil {
		return fmt.Errorf("%w (closing: %s)", herr, oneLine(err.Error()))
	}
	return fmt.Errorf("%w: close: %s", ErrIO, oneLine(err.Error()))
}

type pebbleView struct {
	snap *pebble.Snapshot
	h    *health
}

func (v *pebbleView) newIter(lower, upper []byte) (kvIter, error) {
	it, err := v.snap.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return nil, v.h.readErr(err)
	}
	return checkedIter{it, v.h}, nil
}

// checkedIter is a Pebble iterator whose errors say ErrCorrupt for corruption.
type checkedIter struct {
	*pebble.Iterator
	h *health
}

func (it checkedIter) Error() error { return it.h.readErr(it.Iterator.Error()) }
func (it checkedIter) Close() error { return it.h.readErr(it.Iterator.Close()) }

func (v *pebbleView) get(key []byte) ([]byte, bool, error) {
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

func (v *pebbleView) close() error { return v.snap.Close() }
