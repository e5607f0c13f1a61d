package store

import (
	"context"
	"errors"
	"fmt"
)

// This file is the storage boundary: everything a DB needs from the ordered
// key-value engine under it. It is deliberately small (bounded ordered
// iteration, point get, consistent view, atomic ordered commit) so that the
// layout runs unchanged on another engine with the same guarantees. Two engines
// implement it: Pebble (engine_pebble.go, opened by Open) and etcd (the nested
// module github.com/bitempo/bitempo/etcd, opened through OpenEngine). What only
// Pebble can do (bulk ingestion of spilled transactions, checkpoints, purging
// erased bytes from files, write-ahead log recovery, compaction) is reached
// through optional interfaces that the DB finds by type assertion; on an engine
// without them the call fails with an error wrapping ErrUnsupported.

// Engine is an ordered key-value store under a DB. Keys are compared as byte
// strings. An Engine is used by one DB; the DB calls View from any goroutine,
// and Commit from one goroutine at a time.
type Engine interface {
	// Name names the engine in messages ("pebble", "etcd").
	Name() string
	// View returns a consistent read-only view of the engine: every read
	// through it, however long after, sees exactly the commits that completed
	// before View returned and none after. The caller closes it.
	View() (View, error)
	// Commit applies writes atomically (all of them or none, also across a
	// crash) and in order (a later write to a key wins over an earlier one in
	// the same batch). With sync set it returns only once the commit is
	// durable. An error means the commit is not visible, or, where the engine
	// cannot tell (a lost connection after the request was sent), that it is
	// visible whole or not at all; never in part.
	Commit(writes []Write, sync bool) error
	// Close releases the engine. Views must be closed first.
	Close() error
}

// View is a consistent, read-only view of an Engine (see Engine.View). It is
// used by one goroutine at a time.
type View interface {
	// NewIter returns an iterator over the keys in [lower, upper) (nil: no
	// bound on that side), positioned nowhere until a positioning call.
	NewIter(lower, upper []byte) (Iter, error)
	// Get returns a copy of the value of key, or (nil, false, nil) if absent.
	Get(key []byte) ([]byte, bool, error)
	// Close releases the view. Its iterators must be closed first.
	Close() error
}

// Iter is a bounded ordered iterator of a View (*pebble.Iterator implements
// it). Positioning calls return whether the iterator is now at a key within the
// bounds; after one returns false the iterator is exhausted and Error says
// whether that was an error rather than the end. Key and Value are valid until
// the next positioning call; callers copy what they keep.
type Iter interface {
	// First and Last position at the smallest and largest key in the bounds.
	First() bool
	Last() bool
	// SeekGE positions at the first key >= key (and within the bounds).
	SeekGE(key []byte) bool
	// SeekPrefixGE positions at the first key >= key, like SeekGE, as a read
	// of one key: the engine may confine the later moves to the keys that
	// share key's prefix (comparer.go: the part of a key the layout names as
	// its engine prefix) and skip every file whose filter says the prefix is
	// absent, as Pebble does; or it may implement it as SeekGE, as etcd does.
	// So every caller checks the prefix of each key it lands on, and none
	// calls Prev after it.
	SeekPrefixGE(key []byte) bool
	// SeekLT positions at the last key < key (and within the bounds).
	SeekLT(key []byte) bool
	Next() bool
	Prev() bool
	Valid() bool
	Key() []byte
	Value() []byte
	// SetBounds changes the bounds to [lower, upper); the iterator is
	// positioned nowhere until the next positioning call.
	SetBounds(lower, upper []byte)
	// Error returns the error that stopped the iteration, or nil.
	Error() error
	Close() error
}

// Write is one mutation of a commit: Key is set to Value, or deleted when
// Delete is set. With RangeEnd set it deletes every key in [Key, RangeEnd)
// instead (DropTable); Value and Delete are then ignored.
type Write struct {
	Key, Value []byte
	Delete     bool
	RangeEnd   []byte
}

// ErrUnsupported is returned for an operation the store's engine cannot do,
// such as a checkpoint backup or a purge of erased bytes on etcd. The message
// names the operation and the engine.
var ErrUnsupported = errors.New("bitempo: not supported by this storage engine")

// Errors an engine's methods wrap, besides the package's others (ErrIO,
// ErrCorrupt, ErrLocked for a write lock lost to another process).
var (
	// ErrCommitTooLarge: a commit larger than the engine accepts in one
	// transaction (etcd's --max-txn-ops and --max-request-bytes); nothing of it
	// was written. The message names the commit's size and both limits.
	ErrCommitTooLarge = errors.New("bitempo: commit too large for one transaction of the storage engine")
	// ErrUnavailable: the engine did not answer within its time bound (an etcd
	// cluster without quorum). A commit that fails with it is not visible, or
	// (its request having reached the cluster) becomes visible whole later;
	// never in part.
	ErrUnavailable = errors.New("bitempo: storage engine unavailable")
	// ErrSnapshotTooOld: a read of a view older than what the engine still
	// keeps (etcd's compaction); take a new snapshot.
	ErrSnapshotTooOld = errors.New("bitempo: snapshot older than the storage engine keeps")
)

// CommitLimiter is implemented by an engine that bounds one commit (etcd):
// CommitLimits returns the most writes and the most request bytes one commit
// may hold. Tools size batched loads with it (DB.CommitLimits).
type CommitLimiter interface {
	CommitLimits() (maxWrites, maxBytes int)
}

// CommitLimits returns the engine's bounds of one commit (see CommitLimiter);
// ok is false on an engine without bounds (Pebble).
func (db *DB) CommitLimits() (maxWrites, maxBytes int, ok bool) {
	cl, ok := db.engine.(CommitLimiter)
	if !ok {
		return 0, 0, false
	}
	maxWrites, maxBytes = cl.CommitLimits()
	return maxWrites, maxBytes, true
}

// EngineName names the store's engine ("pebble", "etcd").
func (db *DB) EngineName() string { return db.engine.Name() }

// unsupported returns an error wrapping ErrUnsupported for op on the DB's engine.
func (db *DB) unsupported(op string) error {
	return fmt.Errorf("%w: %s on the %s engine", ErrUnsupported, op, db.engine.Name())
}

// SharedEngine is implemented by an engine that several processes open and
// write at once (etcd): each holds a DB whose caches (the last transaction
// time, the catalog, surrogate key counters, attribute names, the erase secret)
// go stale when another process commits. The DB keeps them right with it:
//
//   - before every write transaction and catalog change it calls LockWrites,
//     and holds the lock until the commit or abort; the engine refuses a commit
//     made without the lock, or after it was lost, or after another process
//     committed since LockWrites;
//   - a View of a shared engine implements Generation, which changes with every
//     commit of any process; when a view's generation is not the one the DB's
//     caches were loaded at (or were last committed at, CommitGeneration), the
//     DB reloads its caches from that view before using it.
type SharedEngine interface {
	Engine
	// LockWrites takes the cross-process write lock, waiting for it until ctx
	// ends. unlock releases it.
	LockWrites(ctx context.Context) (unlock func(), err error)
	// CommitGeneration returns the generation of this engine's last
	// successful commit, 0 before the first.
	CommitGeneration() int64
}

// GenerationView is implemented by the views of a SharedEngine.
type GenerationView interface {
	View
	// Generation identifies the last commit visible in the view.
	Generation() int64
}

// compacter is the part of an engine that rewrites every key into its most
// compact, read-optimised shape (for an LSM: the bottom levels, with no
// overlapping files above). Compact on an engine without it has nothing to do.
type compacter interface {
	compact(ctx context.Context) error
}

// stucker is the part of an engine whose commits can be left waiting inside it
// (Pebble's write stalls): stuck returns the error of a commit that could not
// make progress and still waits inside the engine (then Close would wait for
// it), or nil.
type stucker interface {
	stuck() error
}

// purger is the part of an engine that can make the bytes of deleted keys
// leave its files (purge.go).
type purger interface {
	// purge makes the bytes of deleted keys in spans (all keys when all)
	// leave the engine's files.
	purge(ctx context.Context, spans []span, all, wait bool) error
	// rotateManifest drops the engine's records of deleted files; it closes
	// the engine, and reopens it when reopen is set.
	rotateManifest(reopen bool) error
}

// commit checks writes and commits them through the engine; on a shared
// engine it records the generation the DB's caches now describe. The caller
// holds the writer lock.
func (db *DB) commit(writes []Write, sync bool) error {
	if err := checkWrites(writes); err != nil {
		return err
	}
	if err := db.engine.Commit(writes, sync); err != nil {
		return err
	}
	if se, ok := db.engine.(SharedEngine); ok {
		db.gen.Store(se.CommitGeneration())
	}
	return nil
}

// stuck returns the error of a commit left waiting inside e, or nil.
func stuck(e Engine) error {
	if s, ok := e.(stucker); ok {
		return s.stuck()
	}
	return nil
}
