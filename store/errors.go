package store

import (
	"errors"
	"fmt"
)

// Sentinel errors. Errors returned by this package wrap one of them with context,
// so errors.Is works on every error a caller sees.
var (
	// ErrNotExist: the directory holds no database and the options forbid creating one.
	ErrNotExist = errors.New("bitempo: store does not exist")
	// ErrLocked: another process (or another DB in this process) holds the store.
	ErrLocked = errors.New("bitempo: store is locked by another process")
	// ErrNotBitempo: the directory holds files that are not a bitempo store.
	ErrNotBitempo = errors.New("bitempo: not a bitempo store")
	// ErrNewerFormat: the store was written by a newer bitempo layout version.
	ErrNewerFormat = errors.New("bitempo: store format is newer than this version supports")
	// ErrFormat: the store's layout version is not the one this build reads
	// (older or newer); the error is a *FormatError that says how to move the data.
	ErrFormat = errors.New("bitempo: unsupported store format")
	// ErrReadOnly: a write on a store opened read-only.
	ErrReadOnly = errors.New("bitempo: store is read-only")
	// ErrClosed: use of a closed DB or Snapshot.
	ErrClosed = errors.New("bitempo: store is closed")
	// ErrSnapshotsOpen: Close of a DB whose snapshots are not all closed; the DB
	// stays open.
	ErrSnapshotsOpen = errors.New("bitempo: snapshots still open")
	// ErrUnknownTable: a table name not in the catalog.
	ErrUnknownTable = errors.New("bitempo: unknown table")
	// ErrTableExists: CreateTable of a name already in the catalog.
	ErrTableExists = errors.New("bitempo: table already exists")
	// ErrInvalidTable: a table definition that cannot be created.
	ErrInvalidTable = errors.New("bitempo: invalid table definition")
	// ErrKeyShape: a key whose component count or types do not match the table's schema.
	ErrKeyShape = errors.New("bitempo: key does not match the table's key schema")
	// ErrInvalidPeriod: an interval with from >= to.
	ErrInvalidPeriod = errors.New("bitempo: invalid period")
	// ErrFailed: the storage engine reported a fatal error (such as a failed
	// write-ahead log write); the DB refuses further writes and must be reopened.
	ErrFailed = errors.New("bitempo: store failed; close and reopen it")
	// ErrCorrupt: damage to the store's files (a checksum mismatch in a table
	// file, a damaged MANIFEST, write-ahead log, OPTIONS file or marker), or a
	// stored key or value that cannot be decoded. The message names the file
	// where it is known. Once a DB has seen corruption it refuses every read and
	// write until it is reopened.
	ErrCorrupt = errors.New("bitempo: corrupt store")
	// ErrReentrant: a write (a transaction, CreateTable, DeclareAttrNames,
	// RawWrite) or Close called on a store from inside the function of one of
	// its own write transactions (Writer.Run); it would wait for itself.
	ErrReentrant = errors.New("bitempo: re-entrant call on a store inside its own write transaction")
	// ErrInvalidUse: a call the API does not allow, such as a Writer used after
	// it finished, a retire of a record that is not current, an empty raw key,
	// out-of-order lookup probes, an invalid event operation or batch id.
	ErrInvalidUse = errors.New("bitempo: invalid use")
	// ErrIO: the operating system refused to read or write the store's files
	// (permissions, no space left, an I/O error). Nothing is known to be damaged;
	// fix the cause and reopen.
	ErrIO = errors.New("bitempo: store files cannot be read or written")
	// ErrDamagedWAL: the store's write-ahead log is damaged (not merely torn by a
	// crash): Open refuses it, and errors carrying ErrDamagedWAL also wrap
	// ErrCorrupt. Options.RecoverWAL (the tool's recover command) opens it
	// keeping the transactions before the damage.
	ErrDamagedWAL = errors.New("bitempo: damaged write-ahead log")
	// ErrTooLarge: a write whose value exceeds the size the store can read back
	// (encoding.MaxValueSize); nothing of the transaction is written.
	ErrTooLarge = errors.New("bitempo: value too large")
)

// PeriodError is returned for a zero-width or inverted interval.
type PeriodError struct {
	From, To int64
}

func (e *PeriodError) Error() string {
	return fmt.Sprintf("bitempo: invalid period [%d, %d): from must be before to", e.From, e.To)
}

// Is makes errors.Is(err, ErrInvalidPeriod) true.
func (e *PeriodError) Is(target error) bool { return target == ErrInvalidPeriod }

// CheckPeriod returns a *PeriodError unless from < to.
func CheckPeriod(from, to int64) error {
	if from >= to {
		return &PeriodError{From: from, To: to}
	}
	return nil
}
