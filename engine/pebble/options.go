package pebble

import (
	"log/slog"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// Options configure Open. The zero value opens or creates an on-disk store.
type Options struct {
	// ReadOnly opens an existing store without creating or changing any file
	// of its directory, which may be read-only: the store's locks are taken
	// shared (lock.go), so several read-only opens run at once, but none beside
	// a read-write one.
	ReadOnly bool
	// MustExist fails with engine.ErrNotExist instead of creating a new store.
	MustExist bool
	// LockTimeout is how long Open waits for the store while another process
	// holds it (like sqlite's busy timeout), trying again every few
	// milliseconds; after it Open fails with engine.ErrLocked, saying how long
	// it waited. Zero: fail at once. A read-only open waits only for a writer:
	// read-only opens share the store.
	LockTimeout time.Duration
	// Logger receives Pebble's log lines (Info as Debug, errors as Error).
	// Default: slog.Default().
	Logger *slog.Logger
	// InMemory opens a fresh in-memory store (shorthand for FS: vfs.NewMem()).
	InMemory bool
	// FS replaces the operating system's file system, e.g. vfs.NewMem() for an
	// in-memory store whose files a test reads, or an error-injecting FS.
	FS vfs.FS
	// CacheSize is the memory, in bytes, of the block cache, which Pebble
	// shares with the memtables: it charges each memtable's size against the
	// cache from its creation until it is freed, the one taking writes, any
	// waiting to be flushed, and one flushed memtable it keeps for reuse. So
	// in steady state twice MemTableSize is reserved and the rest holds table
	// blocks: with the defaults, 32 of the 64 MiB. Size it as the blocks the
	// reads should find in memory plus twice MemTableSize. Open logs a warning
	// when the reservations leave less than a quarter of it for blocks.
	// Default 64 MiB.
	CacheSize int64
	// MemTableSize is the memtable size in bytes; see CacheSize for what it
	// takes from the cache. Default 16 MiB.
	MemTableSize uint64
	// StallTimeout bounds how long a commit waits for room while the store's
	// background writes (flushes, compactions) fail, as they do when the disk is
	// full: after it, the commit returns an error wrapping engine.ErrIO (it did
	// not commit) and the engine refuses every later call. Such an engine cannot
	// be closed, since Pebble's commit pipeline is held by the waiting commit:
	// Close returns engine.ErrIO and the directory stays locked until the
	// process exits. A commit waiting behind background writes that succeed,
	// however slowly, is not bounded. Default 30s; negative: wait for ever.
	StallTimeout time.Duration
	// RecoverWAL opens a store whose write-ahead log is damaged (which Open
	// otherwise refuses with engine.ErrCorrupt and engine.ErrDamagedWAL) by
	// keeping every transaction before the damage and dropping the rest; the
	// original log files are moved to a lost-wal-* directory of the store and
	// Engine.Recovery reports what was lost. It also opens a store whose live
	// log was deleted (which Open otherwise refuses, when it can tell): with
	// what the table files hold, moving nothing; Recovery says the log was
	// missing. It also opens a store whose newest log was cut short or deleted
	// after synced commits (which Open otherwise refuses, from the synced
	// watermark), with what is left; Recovery says how many acknowledged
	// commits were lost. A log whose last record was torn by a crash is not
	// damaged: its torn record was never acknowledged, and Open drops it
	// silently either way.
	RecoverWAL bool
	// Tune, if set, is called with the Pebble options just before opening, for
	// tests and benchmarks that need to force flushes or compactions, and for
	// settings bitempo leaves at Pebble's defaults, such as the data block
	// size (Levels[i].BlockSize; docs/performance.md, "Tuning", measures it).
	// It must not change what the store relies on: the comparer (the key
	// order) and the format major version.
	Tune func(*pebble.Options)
}

// withDefaults fills in the defaults of the zero fields.
func (opts Options) withDefaults() Options {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.CacheSize == 0 {
		opts.CacheSize = 64 << 20
	}
	if opts.StallTimeout == 0 {
		opts.StallTimeout = 30 * time.Second
	}
	if opts.MemTableSize == 0 {
		opts.MemTableSize = 16 << 20
	}
	return opts
}

// warnSmallCache logs a warning when the memtables' reservations in the
// block cache (Options.CacheSize) leave less than a quarter of it for table
// blocks: reads then miss the cache far more often than its size suggests.
func warnSmallCache(popts *pebble.Options, logger *slog.Logger) {
	size := popts.CacheSize
	if popts.Cache != nil {
		size = popts.Cache.MaxSize()
	}
	blocks := size - 2*int64(popts.MemTableSize)
	if blocks >= size/4 {
		return
	}
	logger.Warn("bitempo: the memtables leave the block cache little room for table blocks",
		"cache_size", size, "memtable_size", popts.MemTableSize, "room_for_blocks", max(blocks, 0))
}
