package engine

import "errors"

// Sentinel errors that engines wrap, with context; package store re-exports
// each under the same name, so errors.Is(err, store.ErrCorrupt) holds for an
// engine's errors too.
var (
	// ErrNotExist: the directory holds no store and the options forbid creating one.
	ErrNotExist = errors.New("bitempo: store does not exist")
	// ErrLocked: another process (or another DB in this process) holds the
	// store, or a shared engine's write lock was lost to another process.
	ErrLocked = errors.New("bitempo: store is locked by another process")
	// ErrNotBitempo: the directory holds files that are not a bitempo store.
	ErrNotBitempo = errors.New("bitempo: not a bitempo store")
	// ErrReadOnly: a write on a store opened read-only.
	ErrReadOnly = errors.New("bitempo: store is read-only")
	// ErrFailed: the engine reported a fatal error (such as a failed
	// write-ahead log write); the store refuses further calls and must be reopened.
	ErrFailed = errors.New("bitempo: store failed; close and reopen it")
	// ErrCorrupt: damage to the store's files (a checksum mismatch in a table
	// file, a damaged MANIFEST, write-ahead log, OPTIONS file or marker), or a
	// stored key or value that cannot be decoded. The message names the file
	// or key where it is known. Once a store has seen corruption it refuses
	// every read and write until it is reopened.
	ErrCorrupt = errors.New("bitempo: corrupt store")
	// ErrIO: the operating system refused to read or write the store's files
	// (permissions, no space left, an I/O error). Nothing is known to be
	// damaged; fix the cause and reopen.
	ErrIO = errors.New("bitempo: store files cannot be read or written")
	// ErrDamagedWAL: the store's write-ahead log is damaged (not merely torn by
	// a crash): opening refuses it, and errors carrying ErrDamagedWAL also wrap
	// ErrCorrupt. The Pebble engine's RecoverWAL option opens it keeping the
	// transactions before the damage.
	ErrDamagedWAL = errors.New("bitempo: damaged write-ahead log")
	// ErrUnsupported: an operation the engine cannot do, such as a checkpoint
	// backup or a purge of erased bytes on etcd. The message names the
	// operation and the engine.
	ErrUnsupported = errors.New("bitempo: not supported by this storage engine")
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

// Sentinels lists the sentinel errors of this package, for an engine that
// must tell an error it already classified from one it must wrap.
var Sentinels = []error{ErrNotExist, ErrLocked, ErrNotBitempo, ErrReadOnly, ErrFailed,
	ErrCorrupt, ErrIO, ErrDamagedWAL, ErrUnsupported, ErrCommitTooLarge, ErrUnavailable, ErrSnapshotTooOld}

// Wrapped reports whether err already wraps one of Sentinels.
func Wrapped(err error) bool {
	for _, s := range Sentinels {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}
