package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bitempo/bitempo/encoding"
	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/vmihailenco/msgpack/v5"
)

// pebbleFormat is the Pebble format major version bitempo writes. It is pinned so
// that an upgrade of Pebble never silently ratchets a store's on-disk format. This
// version writes row-oriented sstables (TableFormatPebblev4), which measured about
// 20% faster and smaller than the columnar format on bitempo's workload (100k
// keys x 10 versions on a 2-core machine, 64 MB cache; measured 2026-11-29).
const pebbleFormat = pebble.FormatFlushableIngestExcises

// Options configure Open. The zero value opens or creates an on-disk store with
// synced commits.
type Options struct {
	// FS replaces the operating system's file system, e.g. vfs.NewMem() for an
	// in-memory store in tests, or an error-injecting FS.
	FS vfs.FS
	// InMemory opens a fresh in-memory store (shorthand for FS: vfs.NewMem()).
	InMemory bool
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
	// Logger receives Pebble's log lines (Info as Debug, errors as Error).
	// Default: slog.Default().
	Logger *slog.Logger
	// CacheSize is the block cache size in bytes. Default 64 MiB.
	CacheSize int64
	// MemTableSize is the memtable size in bytes. Default 16 MiB.
	MemTableSize uint64
	// StallTimeout bounds how long a commit waits for room while the store's
	// background writes (flushes, compactions) fail, as they do when the disk is
	// full: after it, the commit returns an error wrapping ErrIO (it did not
	// commit) and the store refuses every later call. Such a store cannot be
	// closed, since Pebble's commit pipeline is held by the waiting commit: Close
	// returns ErrIO and the directory stays locked until the process exits. A
	// commit waiting behind background writes that succeed, however slowly, is
	// not bounded. Default 30s; negative: wait for ever.
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
	RecoverWAL bool
	// Tune, if set, is called with the Pebble options just before opening, for
	// tests and benchmarks that need to force flushes or compactions.
	Tune func(*pebble.Options)
}

// DB is an open bitempo store. It is safe for concurrent use: any number of
// readers, one writer at a time.
type DB struct {
	engine kvEngine
	opts   Options
	dir    string

	// writer serialises transactions: held from BeginWrite to Commit or Abort.
	writer writerLock
	// snapshots counts the snapshots taken and not yet closed; Close refuses
	// while any is open, since their iterators pin the engine's files.
	snapshots atomic.Int64
	// compacting is held shared by Compact while it runs and exclusively by
	// Close before it closes the engine.
	compacting sync.RWMutex

	mu       sync.RWMutex // guards the fields below
	closed   bool
	lastTx   int64
	nextTbl  uint32
	tables   map[string]*Table
	byID     map[uint32]*Table
	nextSK   map[uint32]uint64
	attrOrd  map[uint32]map[string]uint32 // the ordinal of each attribute name
	attrList map[uint32][]string          // the attribute names by ordinal
	recovery *Recovery                    // what Open with RecoverWAL dropped
	dirLock  *dirLock                     // held from Open to Close (lock.go)
	// eraseSecret keys the hashes of erased keys (erase.go); nil until the
	// store has one.
	eraseSecret []byte

	// purge holds the erasures whose bytes may still be on disk (purge.go).
	purge purgeState
}

// Open opens the store in dir, creating it unless opts.ReadOnly or opts.MustExist.
func Open(dir string, opts Options) (*DB, error) {
	if opts.Clock == nil {
		opts.Clock = func() int64 { return time.Now().UnixMicro() }
	}
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
	fsys := opts.FS
	if fsys == nil && opts.InMemory {
		fsys = vfs.NewMem()
	}
	onDisk := fsys == nil
	if onDisk {
		fsys = vfs.Default
	}
	fresh, err := checkDir(fsys, dir, onDisk)
	if err != nil {
		return nil, err
	}
	if fresh && (opts.ReadOnly || opts.MustExist) {
		return nil, fmt.Errorf("%w: %s", ErrNotExist, dir)
	}
	if fresh {
		if err := fsys.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("%w: create %s: %v", ErrIO, dir, err)
		}
	}
	var dl *dirLock
	if onDisk {
		if dl, err = lockDir(dir); err != nil {
			return nil, err
		}
	}
	opened := false
	defer func() {
		if !opened {
			dl.release()
		}
	}()
	lock, err := pebble.LockDirectory(dir, fsys)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrLocked, dir, err)
	}
	defer lock.Close() // Open takes its own reference; this drops ours.
	lf, err := watchLockFile(dir, onDisk)
	if err != nil {
		return nil, err
	}
	h := &health{logger: opts.Logger}
	popts := &pebble.Options{
		FS:                 fenceFS{fsys, h},
		Lock:               lock,
		ReadOnly:           opts.ReadOnly,
		ErrorIfNotExists:   !fresh,
		FormatMajorVersion: pebbleFormat,
		Logger:             slogLogger{opts.Logger, h},
		MemTableSize:       opts.MemTableSize,
		CacheSize:          opts.CacheSize,
		EventListener:      h.listener(),
		Cleaner:            noRecycleCleaner{}, // purge.go
	}
	applyLayoutOptions(popts) // comparer.go
	popts.EnsureDefaults()
	if opts.Tune != nil {
		opts.Tune(popts)
	}
	// Both checks read before the read-write open writes anything: the engine
	// files first (a damaged MANIFEST or log is ErrCorrupt, directory unchanged),
	// then the layout version (a store of another format is refused untouched).
	var recovery *Recovery
	if !fresh {
		if err := h.guard(func() error { return checkComparer(fsys, dir, popts, opts.MustExist) }); err != nil { // format.go
			return nil, err
		}
		if recovery, err = checkBeforeOpen(fsys, dir, popts, opts); err != nil {
			return nil, err
		}
		if !opts.ReadOnly {
			if err := h.guard(func() error { return checkFormat(dir, popts) }); err != nil {
				return nil, err
			}
		}
	}
	var pdb *pebble.DB
	err = h.guard(func() (err error) {
		pdb, err = pebble.Open(dir, popts)
		return err
	})
	if err != nil {
		return nil, openError(fsys, dir, err, h)
	}
	db := &DB{
		engine: &pebbleEngine{db: pdb, h: h, stallTimeout: opts.StallTimeout, lock: lf, dir: dir, opts: popts},
		opts:   opts, dir: dir, dirLock: dl,
		tables: map[string]*Table{}, byID: map[uint32]*Table{}, nextSK: map[uint32]uint64{},
		attrOrd: map[uint32]map[string]uint32{}, attrList: map[uint32][]string{},
	}
	if err := db.load(fresh); err != nil {
		_ = db.engine.close()
		if recovery != nil {
			// Every commit, the store's own declaration included, was in the
			// lost log: say so rather than only that the store does not exist.
			return nil, fmt.Errorf("%w: %s: nothing of the store survived its write-ahead log (%s): %w", ErrCorrupt, dir, recovery, err)
		}
		return nil, err
	}
	if recovery != nil {
		recovery.KeptLastTx = db.lastTx
		db.recovery = recovery
		opts.Logger.Warn("bitempo: recovered a store with a damaged write-ahead log", "dir", dir, "report", recovery.String())
	}
	if err := db.purgeAfterOpen(); err != nil {
		return nil, errors.Join(err, db.engine.close())
	}
	opened = true
	return db, nil
}

// Recovery returns what Open with Options.RecoverWAL dropped, or nil if the
// store's write-ahead log was intact.
func (db *DB) Recovery() *Recovery { return db.recovery }

// checkDir reports whether dir holds no store yet, and refuses a directory that
// holds files but no Pebble store (such as a home directory given by mistake).
func checkDir(fsys vfs.FS, dir string, onDisk bool) (fresh bool, err error) {
	names, err := fsys.List(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || os.IsNotExist(err) {
			return true, nil
		}
		if onDisk {
			if st, serr := os.Stat(dir); serr == nil && !st.IsDir() {
				return false, fmt.Errorf("%w: %s is a file, not a directory", ErrNotBitempo, dir)
			}
		}
		return false, fmt.Errorf("%w: read %s: %v", ErrIO, dir, err)
	}
	if len(names) == 0 {
		return true, nil
	}
	for _, n := range names {
		if strings.HasPrefix(n, "MANIFEST-") || n == "CURRENT" || strings.HasPrefix(n, "marker.manifest") {
			return false, nil
		}
	}
	return false, fmt.Errorf("%w: %s holds files but no store", ErrNotBitempo, dir)
}

// load reads meta and the catalog, or initialises a fresh store.
func (db *DB) load(fresh bool) error {
	v, err := db.engine.view()
	if err != nil {
		return err
	}
	defer v.close()
	raw, ok, err := v.get(metaFormat)
	if err != nil {
		return err
	}
	if !ok {
		empty, err := isEmpty(v)
		if err != nil {
			return err
		}
		if !empty {
			return fmt.Errorf("%w: %s: a Pebble database without bitempo's format marker", ErrNotBitempo, db.dir)
		}
		if db.opts.ReadOnly || db.opts.MustExist {
			// MustExist: an empty Pebble database is not a store yet, and
			// may be someone else's; it is left without bitempo's meta keys.
			return fmt.Errorf("%w: %s is an empty Pebble database", ErrNotExist, db.dir)
		}
		return db.initialise()
	}
	if err := formatOK(db.dir, raw); err != nil {
		return err
	}
	if err := getMeta(v, metaLastTx, &db.lastTx); err != nil {
		return err
	}
	if err := getMeta(v, metaNextTable, &db.nextTbl); err != nil {
		return err
	}
	if err := db.loadSecret(v); err != nil {
		return err
	}
	if err := db.loadPurgePending(v); err != nil {
		return err
	}
	return db.loadCatalog(v)
}

func isEmpty(v kvView) (bool, error) {
	it, err := v.newIter(nil, nil)
	if err != nil {
		return false, err
	}
	empty := !it.First()
	return empty, errors.Join(it.Error(), it.Close())
}

func (db *DB) initialise() error {
	db.nextTbl = 1
	writes := []kvWrite{
		{key: metaFormat, value: mustMarshal(uint64(formatVersion))},
		{key: metaLastTx, value: mustMarshal(int64(0))},
		{key: metaNextTable, value: mustMarshal(db.nextTbl)},
	}
	secret, key, err := newSecretWrite()
	if err != nil {
		return err
	}
	if err := db.engine.commit(append(writes, secret), true); err != nil {
		return err
	}
	db.eraseSecret = key
	return nil
}

func getMeta(v kvView, key []byte, dst any) error {
	raw, ok, err := v.get(key)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: meta %q missing", ErrCorrupt, key[1:])
	}
	if err := encoding.UnmarshalBounded(raw, dst); err != nil {
		return fmt.Errorf("%w: meta %q: %v", ErrCorrupt, key[1:], err)
	}
	return nil
}

func mustMarshal(v any) []byte {
	b, err := msgpack.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("bitempo: marshal %T: %v", v, err)) // only called with plain scalars
	}
	return b
}

func (db *DB) loadCatalog(v kvView) error {
	it, err := v.newIter([]byte{ksCatalog}, []byte{ksCatalog + 1})
	if err != nil {
		return err
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		var rec catalogRecord
		if err := encoding.UnmarshalBounded(it.Value(), &rec); err != nil {
			return fmt.Errorf("%w: catalog entry %q: %v", ErrCorrupt, it.Key()[1:], err)
		}
		if err := rec.Def.validate(); err != nil || rec.Def.Name != string(it.Key()[1:]) {
			return fmt.Errorf("%w: catalog entry %q: %v", ErrCorrupt, it.Key()[1:], err)
		}
		t := newTable(rec.Def, rec.ID)
		db.tables[t.Name] = t
		db.byID[t.ID] = t
		var next uint64 = 1
		if raw, ok, err := v.get(skCounterKey(t.ID)); err != nil {
			return err
		} else if ok {
			if next, _, err = encoding.DecodeUint64(raw); err != nil {
				return fmt.Errorf("%w: sk counter of %q: %v", ErrCorrupt, t.Name, err)
			}
		}
		db.nextSK[t.ID] = next
		if err := db.loadAttrNames(v, t.ID); err != nil {
			return err
		}
	}
	return it.Error()
}

// catalogRecord is the catalog value: the definition and the table id.
type catalogRecord struct {
	ID  uint32   `msgpack:"id"`
	Def TableDef `msgpack:"def"`
}

// Close closes the store. Snapshots must be closed first: while any is open,
// Close returns an error wrapping ErrSnapshotsOpen and leaves the store open.
func (db *DB) Close() error {
	if err := db.writer.lock("Close"); err != nil {
		return err
	}
	defer db.writer.unlock()
	db.mu.Lock()
	if db.closed {
		db.mu.Unlock()
		return ErrClosed
	}
	if n := db.snapshots.Load(); n > 0 {
		db.mu.Unlock()
		return fmt.Errorf("%w: %d; close them before the store", ErrSnapshotsOpen, n)
	}
	db.closed = true // from here every call is refused; none holds mu any more
	db.mu.Unlock()
	if err := db.engine.stuck(); err != nil {
		// A commit is still waiting inside Pebble, holding its commit
		// pipeline, which Pebble's Close would wait for: the store cannot be
		// closed, only abandoned. fenceFS keeps it from writing anything more,
		// and its lock stays held until the process exits.
		return fmt.Errorf("bitempo: close: the store cannot be closed, only abandoned (restart the process to reopen it): %w", err)
	}
	db.compacting.Lock() // Pebble may not close under a running compaction
	defer db.compacting.Unlock()
	// No snapshot is open: a purge now removes every erased byte (purge.go).
	if err := db.purgeLocked(context.Background(), true); err != nil {
		err = errors.Join(err, db.engine.close())
		db.dirLock.release()
		return err
	}
	err := db.finishPurge(false)
	db.dirLock.release()
	return err
}

// Compact rewrites the whole store into its read-optimised shape and returns when
// that is done. Pebble compacts in the background as writes arrive, but a bulk
// load (or a CDC backfill) writes faster than one background compaction keeps
// up with, and leaves a deep level 0 whose files every read must consult: on the
// peer benchmark's 1M-version load, point reads right after the load were about
// 2.5x slower than after Compact. Call it after bulk loads, before serving reads;
// readers and writers may run meanwhile (they see no change but speed). It is
// refused on a read-only store and stops early, with ctx's error, when ctx ends.
func (db *DB) Compact(ctx context.Context) error {
	if db.opts.ReadOnly {
		return fmt.Errorf("%w: compact", ErrReadOnly)
	}
	release, err := db.holdOpen()
	if err != nil {
		return err
	}
	defer release()
	start := time.Now()
	if err := db.engine.compact(ctx); err != nil {
		return fmt.Errorf("bitempo: compact: %w", err)
	}
	db.opts.Logger.Info("bitempo: compacted", "dir", db.dir, "took", time.Since(start))
	return nil
}

// lockCatalog takes the writer lock and mu for a change to the catalog or the
// attribute names outside a transaction (CreateTable, DropTable,
// DeclareAttrNames), refusing a closed or read-only store; unlock releases
// both.
func (db *DB) lockCatalog(op string) (unlock func(), err error) {
	if err := db.writer.lock(op); err != nil {
		return nil, err
	}
	db.mu.Lock()
	switch {
	case db.closed:
		err = ErrClosed
	case db.opts.ReadOnly:
		err = ErrReadOnly
	}
	if err != nil {
		db.mu.Unlock()
		db.writer.unlock()
		return nil, err
	}
	return func() {
		db.mu.Unlock()
		db.writer.unlock()
	}, nil
}

// holdOpen keeps the engine open for a maintenance call (Compact, Purge,
// Backup) that runs beside readers and writers. Close takes compacting
// exclusively before it closes the engine, so holding it shared is enough; mu
// is not held, since every commit takes it to publish its transaction time and
// would stall, and every new snapshot behind it, for the whole call.
func (db *DB) holdOpen() (release func(), err error) {
	db.compacting.RLock()
	db.mu.RLock()
	closed := db.closed
	db.mu.RUnlock()
	if closed {
		db.compacting.RUnlock()
		return nil, ErrClosed
	}
	return db.compacting.RUnlock, nil
}

// Dir returns the directory the store was opened in.
func (db *DB) Dir() string { return db.dir }

// ReadOnly reports whether the store was opened read-only.
func (db *DB) ReadOnly() bool { return db.opts.ReadOnly }

// LastTx returns the transaction time of the newest commit (0 for a new store).
func (db *DB) LastTx() int64 {
	db.mu.RLock()
	defer db.mu.RUnlock()
	return db.lastTx
}

// CreateTable adds a table to the catalog. The definition is immutable afterwards.
func (db *DB) CreateTable(def TableDef) (*Table, error) {
	def = cloneDef(def)
	if err := def.validate(); err != nil {
		return nil, err
	}
	unlock, err := db.lockCatalog("CreateTable")
	if err != nil {
		return nil, err
	}
	defer unlock()
	if _, ok := db.tables[def.Name]; ok {
		return nil, fmt.Errorf("%w: %q", ErrTableExists, def.Name)
	}
	id := db.nextTbl
	value, err := msgpack.Marshal(&catalogRecord{ID: id, Def: def})
	if err != nil {
		return nil, fmt.Errorf("bitempo: encode table %q: %w", def.Name, err)
	}
	writes := []kvWrite{
		{key: catalogKey(def.Name), value: value},
		{key: metaNextTable, value: mustMarshal(id + 1)},
	}
	if err := db.engine.commit(writes, !db.opts.NoSync); err != nil {
		return nil, fmt.Errorf("bitempo: create table %q: %w", def.Name, err)
	}
	db.nextTbl = id + 1
	t := newTable(def, id)
	db.tables[t.Name], db.byID[id], db.nextSK[id] = t, t, 1
	db.attrOrd[id] = map[string]uint32{}
	return t, nil
}

// Table returns the named table or an error wrapping ErrUnknownTable.
func (db *DB) Table(name string) (*Table, error) {
	db.mu.RLock()
	defer db.mu.RUnlock()
	t, ok := db.tables[name]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownTable, name)
	}
	return t, nil
}

// Tables returns every table, sorted by name.
func (db *DB) Tables() []*Table {
	db.mu.RLock()
	defer db.mu.RUnlock()
	out := make([]*Table, 0, len(db.tables))
	for _, t := range db.tables {
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b *Table) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// AttrNames returns the attribute names of a table in the order its writes first
// used them.
func (db *DB) AttrNames(t *Table) []string {
	db.mu.RLock()
	defer db.mu.RUnlock()
	return slices.Clone(db.attrList[t.ID])
}

func (db *DB) tableByID(id uint32) *Table {
	db.mu.RLock()
	defer db.mu.RUnlock()
	return db.byID[id]
}

// DeclareAttrNames records attribute names of table t in the given order, ahead of
// the writes that use them, so that tools print columns in the order of a loaded
// file's header rather than the sorted order in which a write's attribute map
// reports them. Names the table has already seen keep their place. It commits on
// its own: the order is presentation, not data, and survives a failed load.
func (db *DB) DeclareAttrNames(t *Table, names []string) error {
	unlock, err := db.lockCatalog("DeclareAttrNames")
	if err != nil {
		return err
	}
	defer unlock()
	var writes []kvWrite
	var added []string
	ords := db.attrOrd[t.ID]
	for _, name := range names {
		if _, seen := ords[name]; seen || slices.Contains(added, name) {
			continue
		}
		writes = append(writes, kvWrite{key: attrNameKey(t.ID, uint32(len(db.attrList[t.ID])+len(added))), value: []byte(name)})
		added = append(added, name)
	}
	if len(writes) == 0 {
		return nil
	}
	if err := db.engine.commit(writes, !db.opts.NoSync); err != nil {
		return fmt.Errorf("bitempo: declare attributes of %q: %w", t.Name, err)
	}
	for _, name := range added {
		ords[name] = uint32(len(db.attrList[t.ID]))
		db.attrList[t.ID] = append(db.attrList[t.ID], name)
	}
	return nil
}
