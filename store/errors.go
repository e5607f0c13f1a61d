package store

import (
	"errors"
	"fmt"

	"github.com/bitempo/bitempo/engine"
	"github.com/bitempo/bitempo/layout"
)

// Sentinel errors. Errors returned by this package wrap one of them with context,
// so errors.Is works on every error a caller sees. Those an engine or the
// layout returns are defined there and re-exported here under the same name.
var (
	// ErrNotExist: see engine.ErrNotExist.
	ErrNotExist = engine.ErrNotExist
	// ErrLocked: see engine.ErrLocked.
	ErrLocked = engine.ErrLocked
	// ErrNotBitempo: see engine.ErrNotBitempo.
	ErrNotBitempo = engine.ErrNotBitempo
	// ErrNewerFormat: see layout.ErrNewerFormat.
	ErrNewerFormat = layout.ErrNewerFormat
	// ErrFormat: see layout.ErrFormat; the error is a *FormatError.
	ErrFormat = layout.ErrFormat
	// ErrReadOnly: see engine.ErrReadOnly.
	ErrReadOnly = engine.ErrReadOnly
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
	// ErrSchema: a value that does not fit its column's declared type, a null
	// in a column that is not nullable, or an undeclared attribute of a strict
	// table (the error is a *SchemaError naming table, column, type and value);
	// nothing of the transaction is written.
	ErrSchema = errors.New("bitempo: value does not fit the table's schema")
	// ErrKeyShape: a key whose component count or types do not match the table's schema.
	ErrKeyShape = errors.New("bitempo: key does not match the table's key schema")
	// ErrInvalidPeriod: an interval with from >= to.
	ErrInvalidPeriod = errors.New("bitempo: invalid period")
	// ErrFailed: see engine.ErrFailed.
	ErrFailed = engine.ErrFailed
	// ErrCorrupt: see engine.ErrCorrupt.
	ErrCorrupt = engine.ErrCorrupt
	// ErrReentrant: a write (a transaction, CreateTable, DeclareAttrNames,
	// RawWrite) or Close called on a store from inside the function of one of
	// its own write transactions (Writer.Run); it would wait for itself.
	ErrReentrant = errors.New("bitempo: re-entrant call on a store inside its own write transaction")
	// ErrInvalidUse: a call the API does not allow, such as a Writer used after
	// it finished, a retire of a record that is not current, an empty raw key,
	// out-of-order lookup probes, an invalid event operation or batch id.
	ErrInvalidUse = errors.New("bitempo: invalid use")
	// ErrIO: see engine.ErrIO.
	ErrIO = engine.ErrIO
	// ErrDamagedWAL: see engine.ErrDamagedWAL.
	ErrDamagedWAL = engine.ErrDamagedWAL
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

// Errors of the storage engine boundary, re-exported (see package engine).
var (
	ErrUnsupported    = engine.ErrUnsupported
	ErrCommitTooLarge = engine.ErrCommitTooLarge
	ErrUnavailable    = engine.ErrUnavailable
	ErrSnapshotTooOld = engine.ErrSnapshotTooOld
)

// FormatError is returned by Open for a store whose layout version this build
// does not read (see layout.FormatError).
type FormatError = layout.FormatError
