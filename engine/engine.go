// Package engine is the boundary between a bitempo store and the ordered
// key-value engine that holds its bytes: bounded ordered iteration, point get,
// a consistent read view and an atomic ordered commit. That is all an ordered
// replicated store such as etcd offers too, so the store's layout and
// transactions run unchanged on any engine that keeps the contracts below.
//
// Two engines implement it: Pebble (package engine/pebble, which store.Open
// uses) and etcd (the nested module github.com/bitempo/bitempo/etcd). What only
// some engines can do is an optional interface of this package that the store
// finds by type assertion (Compacter, Purger, Checkpointer, BulkIngester,
// Stucker, Recovered, SharedEngine, CommitLimiter, LimitSource); on an engine without it the
// store's call fails with an error wrapping ErrUnsupported, or does nothing
// where nothing is the right answer (Compact).
//
// The contracts every engine keeps:
//
//  1. Keys are compared as byte strings.
//  2. A View sees exactly the commits that completed before it was taken, for
//     as long as it is open.
//  3. Commit applies its writes all or none, also across a crash, and in order;
//     a synced commit has reached stable storage when it returns.
//  4. Every error wraps one of this package's sentinels (or a context error).
package engine

import (
	"context"
	"fmt"
	"strings"
)

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
	// share key's prefix (the part of a key the layout names as
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

// Span is the key range [Start, End).
type Span struct{ Start, End []byte }

// CommitLimiter is implemented by an engine that bounds one commit (etcd):
// CommitLimits returns the most writes (distinct keys) and the most bytes of
// keys and values one commit may hold, what the engine adds taken off. The
// store's Writer fails a transaction with ErrCommitTooLarge as soon as its
// writes pass them, and tools size batched loads with them
// (DB.CommitLimits). An engine without it (Pebble) has no bound a
// transaction must keep to: a Writer that spills to disk commits more than
// memory.
type CommitLimiter interface {
	CommitLimits() (maxWrites, maxBytes int)
}

// LimitSource is implemented by a CommitLimiter whose bounds follow from
// settings a user can change: SourceOfLimits names them ("--max-txn-ops 128
// and --max-request-bytes 1572864 of the etcd cluster").
type LimitSource interface {
	SourceOfLimits() string
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

// Compacter is an engine that rewrites every key into its most compact,
// read-optimised shape (for an LSM: the bottom levels, with no overlapping
// files above). Compact on an engine without it has nothing to do.
type Compacter interface {
	Compact(ctx context.Context) error
}

// Stucker is an engine whose commits can be left waiting inside it (Pebble's
// write stalls): Stuck returns the error of a commit that could not make
// progress and still waits inside the engine (then Close would wait for it),
// or nil.
type Stucker interface {
	Stuck() error
}

// Purger is an engine that can make the bytes of deleted keys leave its files.
type Purger interface {
	// Purge makes the bytes of deleted keys in spans (all keys when all)
	// leave the engine's files; with wait it returns only once the files that
	// held them are deleted.
	Purge(ctx context.Context, spans []Span, all, wait bool) error
	// ForgetDeletedFiles drops the engine's own records of deleted files (for
	// Pebble: the MANIFESTs naming them). It deletes the key clearKey (the
	// store's mark that a purge is pending) in the same step. It closes the
	// engine, and reopens it for use when reopen is set.
	ForgetDeletedFiles(clearKey []byte, reopen bool) error
}

// Checkpointer is an engine that writes consistent on-disk copies of itself.
type Checkpointer interface {
	// Checkpoint writes a copy of every commit made so far (commits made
	// without sync included) to destDir, which must not exist: an error
	// wrapping fs.ErrExist says it does. A failed checkpoint removes what it
	// wrote.
	Checkpoint(destDir string) error
}

// BulkIngester is an engine that adds a sorted stream of writes larger than
// memory atomically, as one step.
type BulkIngester interface {
	// CanIngestFrom returns nil if files written by the operating system's file
	// system under dir can be ingested (the engine is on that file system).
	CanIngestFrom(dir string) error
	// IngestSorted writes the writes yielded by next (sorted by key, one per
	// key) to a file under dir and adds it to the engine atomically.
	IngestSorted(dir string, next func() (Write, bool, error)) error
}

// Recovered is an engine that was opened by dropping part of a damaged
// write-ahead log; Recovery says what was dropped (nil if nothing was).
type Recovered interface {
	Recovery() *Recovery
}

// ReadOnly is an engine opened for reads only; a store on it refuses writes.
type ReadOnly interface {
	ReadOnly() bool
}

// Recovery describes what Open with Options.RecoverWAL dropped from a damaged
// write-ahead log. Transactions are the store's commits, in commit order; those
// after the damage are dropped too, so that the store holds a prefix of its
// history and never a transaction whose predecessor is missing.
type Recovery struct {
	// Missing, if set, says that a live log was missing (deleted) rather than
	// damaged: the store opened with what its table files hold, nothing was
	// moved, File, Offset, SavedTo and LostTxs are unset, and Unreadable is set
	// (the missing log's commits cannot be counted).
	Missing string
	// Shortened, if set, says that the newest write-ahead log was cut short
	// or deleted after commits in it were synced and acknowledged: the store
	// opened with what is left, nothing was moved, LostCommits counts the
	// acknowledged commits known lost (more that were never synced may be
	// gone too), and File, Offset, SavedTo and LostTxs are unset.
	Shortened string
	// File is the damaged log and Offset where its damage begins.
	File   string
	Offset int64
	// SavedTo is the directory the original log files were moved to, untouched.
	SavedTo string
	// KeptLastTx is the transaction time of the newest transaction that survived.
	KeptLastTx int64
	// LostTxs are the transaction times of the dropped transactions that could
	// still be read after the damage, ascending.
	LostTxs []int64
	// LostCommits counts the dropped commits that could be read (transactions,
	// and table or attribute declarations, which carry no transaction time).
	LostCommits int
	// Unreadable is set when part of the log could not be read at all, so that
	// more transactions than LostTxs may have been lost: those between
	// KeptLastTx and the first of LostTxs.
	Unreadable bool
}

func (r *Recovery) String() string {
	var b strings.Builder
	if r.Shortened != "" {
		fmt.Fprintf(&b, "%s; accepted the loss of %d acknowledged commit(s) and kept every transaction through tx %d", r.Shortened, r.LostCommits, r.KeptLastTx)
		return b.String()
	}
	if r.Missing != "" {
		fmt.Fprintf(&b, "%s; kept every transaction through tx %d that the table files hold; the commits in the missing log are lost and cannot be listed", r.Missing, r.KeptLastTx)
		if r.LostCommits > 0 {
			fmt.Fprintf(&b, " (%d of them synced and acknowledged)", r.LostCommits)
		}
		return b.String()
	}
	fmt.Fprintf(&b, "write-ahead log %s is damaged at offset %d; kept every transaction through tx %d", r.File, r.Offset, r.KeptLastTx)
	fmt.Fprintf(&b, "; dropped %d readable commit(s)", r.LostCommits)
	if len(r.LostTxs) > 0 {
		fmt.Fprintf(&b, " with transaction times %d..%d (%d transactions)", r.LostTxs[0], r.LostTxs[len(r.LostTxs)-1], len(r.LostTxs))
	}
	if r.Unreadable {
		b.WriteString(" and the unreadable commit(s) at the damage")
		if len(r.LostTxs) > 0 {
			fmt.Fprintf(&b, " (transaction times between %d and %d)", r.KeptLastTx, r.LostTxs[0])
		}
	}
	fmt.Fprintf(&b, "; the original log files are in %s", r.SavedTo)
	return b.String()
}
