package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/engine"
	"github.com/bitempo/bitempo/engine/pebble"
	"github.com/bitempo/bitempo/layout"
)

// DB is an open bitempo store. It is safe for concurrent use: any number of
// readers, one writer at a time.
type DB struct {
	engine engine.Engine
	opts   Options
	dir    string

	// writer serialises transactions: held from BeginWrite to Commit or Abort.
	writer writerLock
	// unlockShared releases a engine.SharedEngine's cross-process write lock, taken
	// with writer (lockShared); nil while not held.
	unlockShared func()
	// snapshots counts the snapshots taken and not yet closed; Close refuses
	// while any is open, since their iterators pin the engine's files.
	snapshots atomic.Int64
	// compacting is held shared by Compact while it runs and exclusively by
	// Close before it closes the engine.
	compacting sync.RWMutex
	// gen is the generation of a engine.SharedEngine the caches below describe
	// (engine.GenerationView); unused on other engines.
	gen atomic.Int64

	mu       sync.RWMutex // guards the fields below
	closed   bool
	lastTx   int64
	nextTbl  uint32
	tables   map[string]*Table
	byID     map[uint32]*Table
	nextSK   map[uint32]uint64
	attrOrd  map[uint32]map[string]uint32     // the ordinal of each attribute name
	attrList map[uint32][]string              // the attribute names by ordinal
	attrType map[uint32]map[string]ColumnType // each attribute's established type (attrtypes.go)
	recovery *engine.Recovery                 // what the engine's open dropped
	// eraseSecret keys the hashes of erased keys (erase.go); nil until the
	// store has one.
	eraseSecret []byte

	// purge holds the erasures whose bytes may still be on disk (purge.go).
	purge purgeState

	// commits caches the times of commit numbers (commits.go).
	commits commitTimes

	// shares counts the users Share handed the store to that have not closed
	// it yet; guarded by mu.
	shares int
}

// withDefaults fills in the defaults of the zero fields.
func (opts Options) withDefaults() Options {
	if opts.Clock == nil {
		opts.Clock = func() int64 { return time.Now().UnixMicro() }
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return opts
}

func newDB(e engine.Engine, opts Options, dir string) *DB {
	return &DB{
		engine: e, opts: opts, dir: dir,
		tables: map[string]*Table{}, byID: map[uint32]*Table{}, nextSK: map[uint32]uint64{},
		attrOrd: map[uint32]map[string]uint32{}, attrList: map[uint32][]string{}, attrType: map[uint32]map[string]ColumnType{},
	}
}

// Open opens the store in dir on the Pebble engine with its default settings,
// creating it unless opts.ReadOnly or opts.MustExist. To tune Pebble (cache
// and memtable sizes, a file system, write-ahead log recovery), open the
// engine with package engine/pebble and pass it to OpenEngine.
func Open(dir string, opts Options) (*DB, error) {
	e, err := pebble.Open(dir, pebble.Options{ReadOnly: opts.ReadOnly, MustExist: opts.MustExist,
		LockTimeout: opts.LockTimeout, InMemory: opts.InMemory, Logger: opts.Logger})
	if err != nil {
		return nil, err
	}
	return OpenEngine(e, dir, opts)
}

// OpenEngine opens the store held by an engine (the Pebble engine of package
// engine/pebble, or the etcd engine of the module
// github.com/bitempo/bitempo/etcd, whose Open calls it), creating it in an
// empty engine unless opts.ReadOnly or opts.MustExist. name says where the
// store is, for messages and Dir. An engine opened read-only makes the store
// read-only whatever opts says. The DB owns e from then on: Close closes it,
// and so does a failed OpenEngine. What the engine cannot do (engine's
// optional capabilities: Backup, erased bytes' Purge, spilled transactions)
// fails with an error wrapping ErrUnsupported; Compact does nothing.
func OpenEngine(e engine.Engine, name string, opts Options) (*DB, error) {
	opts = opts.withDefaults()
	if ro, ok := e.(engine.ReadOnly); ok && ro.ReadOnly() {
		opts.ReadOnly = true
	}
	var recovery *engine.Recovery
	if r, ok := e.(engine.Recovered); ok {
		recovery = r.Recovery()
	}
	db := newDB(e, opts, name)
	if err := db.load(); err != nil {
		if recovery != nil {
			// Every commit, the store's own declaration included, was in the
			// lost log: say so rather than only that the store does not exist.
			err = fmt.Errorf("%w: %s: nothing of the store survived its write-ahead log (%s): %w", ErrCorrupt, name, recovery, err)
		}
		return nil, errors.Join(err, e.Close())
	}
	if recovery != nil {
		recovery.KeptLastTx = db.lastTx
		db.recovery = recovery
		opts.Logger.Warn("bitempo: recovered a store with a damaged write-ahead log", "dir", name, "report", recovery.String())
	}
	if err := db.purgeAfterOpen(); err != nil {
		return nil, errors.Join(err, db.engine.Close())
	}
	return db, nil
}

// Recovery returns what the engine dropped from a damaged write-ahead log when
// it was opened (the Pebble engine's RecoverWAL option), or nil if nothing was
// dropped.
func (db *DB) Recovery() *engine.Recovery { return db.recovery }

// load reads meta and the catalog, or initialises a fresh store.
func (db *DB) load() error {
	v, err := db.engine.View()
	if err != nil {
		return err
	}
	defer v.Close()
	if gv, ok := v.(engine.GenerationView); ok {
		db.gen.Store(gv.Generation())
	}
	raw, ok, err := v.Get(layout.MetaFormat)
	if err != nil {
		return err
	}
	if !ok {
		empty, err := isEmpty(v)
		if err != nil {
			return err
		}
		if !empty {
			return fmt.Errorf("%w: %s: an %s store without bitempo's format marker", ErrNotBitempo, db.dir, db.engine.Name())
		}
		if db.opts.ReadOnly || db.opts.MustExist {
			// MustExist: an empty Pebble database is not a store yet, and
			// may be someone else's; it is left without bitempo's meta keys.
			return fmt.Errorf("%w: %s is an empty %s store", ErrNotExist, db.dir, db.engine.Name())
		}
		return db.initialise()
	}
	if err := layout.CheckFormat(db.dir, raw); err != nil {
		return err
	}
	if raw, ok, err = v.Get(layout.MetaLayout); err != nil {
		return err
	}
	if err := layout.CheckLayout(db.dir, raw, ok); err != nil {
		return err
	}
	if err := getMeta(v, layout.MetaLastTx, &db.lastTx); err != nil {
		return err
	}
	if err := getMeta(v, layout.MetaNextTable, &db.nextTbl); err != nil {
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

func isEmpty(v engine.View) (bool, error) {
	it, err := v.NewIter(nil, nil)
	if err != nil {
		return false, err
	}
	empty := !it.First()
	return empty, errors.Join(it.Error(), it.Close())
}

func (db *DB) initialise() error {
	db.nextTbl = 1
	writes := []engine.Write{
		{Key: layout.MetaFormat, Value: mustMarshal(uint64(layout.FormatVersion))},
		{Key: layout.MetaLayout, Value: mustMarshal(layout.ComparerName)},
		{Key: layout.MetaLastTx, Value: mustMarshal(int64(0))},
		{Key: layout.MetaLastCommit, Value: mustMarshal(uint64(0))},
		{Key: layout.MetaNextTable, Value: mustMarshal(db.nextTbl)},
	}
	secret, key, err := newSecretWrite()
	if err != nil {
		return err
	}
	if err := db.commit(append(writes, secret), true); err != nil {
		return err
	}
	db.eraseSecret = key
	return nil
}

func getMeta(v engine.View, key []byte, dst any) error {
	raw, ok, err := v.Get(key)
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

func (db *DB) loadCatalog(v engine.View) error {
	it, err := v.NewIter([]byte{layout.Catalog}, []byte{layout.Catalog + 1})
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
		if raw, ok, err := v.Get(layout.SKCounterKey(t.ID)); err != nil {
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
		if db.attrType[t.ID], err = readAttrTypes(v, t.ID, db.attrList[t.ID]); err != nil {
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
	db.mu.Lock()
	if db.shares > 0 {
		db.shares--
		db.mu.Unlock()
		if db.PurgePending() {
			// As an owner's Close would: the erased bytes go now, unless a
			// snapshot of another user still reads them.
			return db.Purge(context.Background())
		}
		return nil
	}
	db.mu.Unlock()
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
	if err := stuck(db.engine); err != nil {
		// A commit is still waiting inside Pebble, holding its commit
		// pipeline, which Pebble's Close would wait for: the store cannot be
		// closed, only abandoned. fenceFS keeps it from writing anything more,
		// and its lock stays held until the process exits.
		return fmt.Errorf("bitempo: close: the store cannot be closed, only abandoned (restart the process to reopen it): %w", err)
	}
	db.compacting.Lock() // Pebble may not close under a running compaction
	defer db.compacting.Unlock()
	if _, ok := db.engine.(engine.Purger); !ok {
		return db.engine.Close()
	}
	// No snapshot is open: a purge now removes every erased byte (purge.go).
	if err := db.purgeLocked(context.Background(), true); err != nil {
		return errors.Join(err, db.engine.Close())
	}
	return db.finishPurge(false)
}

// Share hands the open store to one more user, such as one request of a
// server: that user's Close only ends its share, and the store stays open for
// the others; the Close of the store's owner, once every share has ended,
// closes it. A share is the same DB, not a second DB over the same engine,
// whose catalog and transaction-time caches would drift from the first's.
func (db *DB) Share() *DB {
	db.mu.Lock()
	db.shares++
	db.mu.Unlock()
	return db
}

// Compact rewrites the whole store into its read-optimised shape and returns when
// that is done. Pebble compacts in the background as writes arrive, but a bulk
// load (or a CDC backfill) writes faster than one background compaction keeps
// up with, and leaves a deep level 0 whose files every read must consult
// (docs/design/load-compaction.md). Call it after bulk loads, before serving reads;
// readers and writers may run meanwhile (they see no change but speed). It is
// refused on a read-only store. When ctx ends first it returns ctx's error at
// once, and the compaction already under way goes on in the background (Pebble
// cannot stop one safely).
// On an engine without such a shape (etcd, which keeps its keys in a B-tree
// and whose history compaction is the cluster operator's) it does nothing.
func (db *DB) Compact(ctx context.Context) error {
	release, err := db.holdWritable("compact")
	if err != nil {
		return err
	}
	defer release()
	c, ok := db.engine.(engine.Compacter)
	if !ok {
		return nil // nothing to do: see Compact's comment
	}
	start := time.Now()
	if err := c.Compact(ctx); err != nil {
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
	if err := db.lockWriter(op); err != nil {
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
		db.unlockWriter()
		return nil, err
	}
	return func() {
		db.mu.Unlock()
		db.unlockWriter()
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

// holdWritable is holdOpen on a store opened for writing; on a read-only one
// it fails with ErrReadOnly, which what (the refused operation) details.
func (db *DB) holdWritable(what string) (release func(), err error) {
	if db.opts.ReadOnly {
		return nil, fmt.Errorf("%w: %s", ErrReadOnly, what)
	}
	return db.holdOpen()
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
	writes := []engine.Write{
		{Key: layout.CatalogKey(def.Name), Value: value},
		{Key: layout.MetaNextTable, Value: mustMarshal(id + 1)},
	}
	decl, err := schemaWrite(&def, id)
	if err != nil {
		return nil, fmt.Errorf("bitempo: encode the declaration of %q: %w", def.Name, err)
	}
	writes = append(writes, decl...)
	if err := db.commit(writes, !db.opts.NoSync); err != nil {
		return nil, fmt.Errorf("bitempo: create table %q: %w", def.Name, err)
	}
	db.nextTbl = id + 1
	t := newTable(def, id)
	db.tables[t.Name], db.byID[id], db.nextSK[id] = t, t, 1
	db.attrOrd[id] = map[string]uint32{}
	db.attrType[id] = map[string]ColumnType{}
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
	var writes []engine.Write
	var added []string
	ords := db.attrOrd[t.ID]
	for _, name := range names {
		if _, seen := ords[name]; seen || slices.Contains(added, name) {
			continue
		}
		writes = append(writes, engine.Write{Key: layout.AttrNameKey(t.ID, uint32(len(db.attrList[t.ID])+len(added))), Value: []byte(name)})
		added = append(added, name)
	}
	if len(writes) == 0 {
		return nil
	}
	if err := db.commit(writes, !db.opts.NoSync); err != nil {
		return fmt.Errorf("bitempo: declare attributes of %q: %w", t.Name, err)
	}
	for _, name := range added {
		ords[name] = uint32(len(db.attrList[t.ID]))
		db.attrList[t.ID] = append(db.attrList[t.ID], name)
	}
	return nil
}
