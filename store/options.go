package store

import (
	"log/slog"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// Options configure Open and OpenEngine. The zero value opens or creates an
// on-disk store with synced commits.
//
// The fields from FS on configure the Pebble engine only (Open) and are
// ignored by OpenEngine. (Rejected: a nested PebbleOptions struct, which would
// break every caller's Options literal for no gain in what can be said.)
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

	// FS replaces the operating system's file system, e.g. vfs.NewMem() for an
	// in-memory store in tests, or an error-injecting FS. Pebble only.
	FS vfs.FS
	// InMemory opens a fresh in-memory store (shorthand for FS: vfs.NewMem()).
	// Pebble only.
	InMemory bool
	// CacheSize is the block cache size in bytes. Default 64 MiB. Pebble only.
	CacheSize int64
	// MemTableSize is the memtable size in bytes. Default 16 MiB. Pebble only.
	MemTableSize uint64
	// StallTimeout bounds how long a commit waits for room while the store's
	// background writes (flushes, compactions) fail, as they do when the disk is
	// full: after it, the commit returns an error wrapping ErrIO (it did not
	// commit) and the store refuses every later call. Such a store cannot be
	// closed, since Pebble's commit pipeline is held by the waiting commit: Close
	// returns ErrIO and the directory stays locked until the process exits. A
	// commit waiting behind background writes that succeed, however slowly, is
	// not bounded. Default 30s; negative: wait for ever. Pebble only.
	StallTimeout time.Duration
	// RecoverWAL opens a store whose write-ahead log is damaged (which Open
	// otherwise refuses with ErrCorrupt) by keeping every transaction before the
	// damage and dropping the rest; the original log files are moved to a
	// lost-wal-* directory of the store and DB.Recovery reports what was lost.
	// It also opens a store whose live log was deleted (which Open otherwise
	// refuses, when it can tell, with ErrCorrupt): with what the table files
	// hold, moving nothing; DB.Recovery says the log was missing.
	// A log whose last record was torn by a crash is not damaged: its torn
	// record was never acknowledged, and Open drops it silently either way.
	// Pebble only: OpenEngine refuses it with ErrUnsupported.
	RecoverWAL bool
	// Tune, if set, is called with the Pebble options just before opening, for
	// tests and benchmarks that need to force flushes or compactions. Pebble only.
	Tune func(*pebble.Options)
}
