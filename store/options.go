package store

import (
	"log/slog"
	"time"
)

// Options configure Open and OpenEngine. The zero value opens or creates an
// on-disk store with synced commits. They hold no engine's settings: those
// are the engine's own options (package engine/pebble's Options for Pebble).
type Options struct {
	// ReadOnly opens an existing store for reads only; writes fail with ErrReadOnly.
	ReadOnly bool
	// MustExist fails with ErrNotExist instead of creating a new store.
	MustExist bool
	// NoSync commits without waiting for the write-ahead log to reach stable
	// storage: faster, but a crash may lose the newest commits (never a part of one).
	NoSync bool
	// Clock returns the wall-clock time in microseconds since the Unix epoch; it
	// seeds transaction times. Default: time.Now.
	Clock func() int64
	// Logger receives the store's and its engine's log lines (Pebble's Info as
	// Debug, errors as Error). Default: slog.Default().
	Logger *slog.Logger

	// LockTimeout is how long Open waits for a store another process holds,
	// trying again every few milliseconds (the Pebble engine's LockTimeout;
	// like sqlite's busy timeout). Zero: fail at once with ErrLocked.
	// OpenEngine ignores it: an engine is opened before it.
	LockTimeout time.Duration

	// InMemory opens a fresh in-memory store on the default engine (Pebble),
	// for tests and examples; its data is gone when it is closed.
	InMemory bool
}
