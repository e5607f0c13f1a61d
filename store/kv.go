package store

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

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

// kvWrite is one mutation of a batch.
type kvWrite struct {
	key, value []byte
	del        bool
}

// kvEngine is the engine under a DB.
type kvEngine interface {
	view() (kvView, error)
	// commit applies writes atomically, in order, durably when sync is set.
	commit(writes []kvWrite, sync bool) error
	// compact rewrites every key into the engine's most compact, read-optimised
	// shape (for an LSM: the bottom levels, with no overlapping files above).
	compact(ctx context.Context) error
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
	db     *pebble.DB
	dir    string
	opts   *pebble.Options        // of the first open, for reopening (purge.go)
	failed atomic.Pointer[string] // set when Pebble reported a fatal error
}

// compact runs a manual compaction of the whole key space, in parallel where
// Pebble can split it.
func (e *pebbleEngine) compact(ctx context.Context) error {
	if msg := e.failed.Load(); msg != nil {
		return fmt.Errorf("%w: %s", ErrFailed, *msg)
	}
	return e.db.Compact(ctx, []byte{0x00}, []byte{0xff, 0xff}, true)
}

// view refuses to read after a fatal error: the memtable may hold the batch whose
// commit failed, which must not be shown as committed.
func (e *pebbleEngine) view() (kvView, error) {
	if msg := e.failed.Load(); msg != nil {
		return nil, fmt.Errorf("%w: %s", ErrFailed, *msg)
	}
	return &pebbleView{snap: e.db.NewSnapshot()}, nil
}

// commit applies writes as one Pebble batch. Pebble treats a failed write-ahead
// log write or sync as fatal and calls Logger.Fatalf, which slogLogger turns into a
// fatalError panic on the committing goroutine; commit turns it back into an
// error wrapping ErrFailed and refuses every later commit, because Pebble's state
// is then unknown (views are refused too). Reopening the store recovers from the log: the failed batch is
// absent, or (when the OS kept data whose sync failed) present whole.
func (e *pebbleEngine) commit(writes []kvWrite, sync bool) (err error) {
	if msg := e.failed.Load(); msg != nil {
		return fmt.Errorf("%w: %s", ErrFailed, *msg)
	}
	defer func() {
		if r := recover(); r != nil {
			f, ok := r.(fatalError)
			if !ok {
				panic(r)
			}
			msg := string(f)
			e.failed.Store(&msg)
			err = fmt.Errorf("%w: %s", ErrFailed, msg)
		}
	}()
	b := e.db.NewBatch()
	defer b.Close()
	for _, w := range writes {
		var err error
		if w.del {
			err = b.Delete(w.key, nil)
		} else {
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

func (e *pebbleEngine) close() error {
	if e.db == nil { // a failed purge rotation closed it (purge.go)
		return nil
	}
	return e.db.Close()
}

type pebbleView struct {
	snap *pebble.Snapshot
}

func (v *pebbleView) newIter(lower, upper []byte) (kvIter, error) {
	return v.snap.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
}

func (v *pebbleView) get(key []byte) ([]byte, bool, error) {
	val, closer, err := v.snap.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	out := append([]byte(nil), val...)
	return out, true, closer.Close()
}

func (v *pebbleView) close() error { return v.snap.Close() }
