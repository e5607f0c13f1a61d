package store

import (
	"context"
	"fmt"
	"maps"

	"github.com/bitempo/bitempo/engine"
	"github.com/bitempo/bitempo/layout"
)

// This file keeps a DB's caches right on a engine.SharedEngine, which other processes
// write too (see engine.SharedEngine). The caches are the last transaction time, the
// next table id, the catalog, the surrogate key counters, the attribute names
// and the erase secret: everything load reads at Open. Each is reloaded whole
// from one view when the view's generation is not the one the caches describe.
// Reloading only what changed, found by scanning the keys written since, would
// save little on a catalog of a few tables and add a second way to be wrong.
// Tables keep their *Table across a reload when their id is
// unchanged, so callers' handles stay valid; a table another process dropped
// is gone from the catalog, and writes to it through an old handle write keys
// that no catalog entry names (as on Pebble after DropTable).

// lockWriter takes the writer lock for op and, on a engine.SharedEngine, the
// cross-process write lock with it, and then brings the caches up to date: a
// write starts from every commit of every process. unlockWriter releases both.
func (db *DB) lockWriter(op string) error {
	if err := db.writer.lock(op); err != nil {
		return err
	}
	se, ok := db.engine.(engine.SharedEngine)
	if !ok {
		return nil
	}
	unlock, err := se.LockWrites(context.Background())
	if err != nil {
		db.writer.unlock()
		return fmt.Errorf("bitempo: %s: %w", op, err)
	}
	db.unlockShared = unlock
	if err := db.refresh(); err != nil {
		db.unlockWriter()
		return fmt.Errorf("bitempo: %s: %w", op, err)
	}
	return nil
}

// unlockWriter releases what lockWriter took.
func (db *DB) unlockWriter() {
	if db.unlockShared != nil {
		db.unlockShared()
		db.unlockShared = nil
	}
	db.writer.unlock()
}

// refresh reloads the caches from a fresh view if another process committed
// since they were loaded.
func (db *DB) refresh() error {
	v, err := db.engine.View()
	if err != nil {
		return err
	}
	err = db.refreshFrom(v)
	if cerr := v.Close(); err == nil {
		err = cerr
	}
	return err
}

// refreshFrom reloads the caches from v if v is a engine.GenerationView whose
// generation is not the caches'. The caller does not hold mu.
func (db *DB) refreshFrom(v engine.View) error {
	gv, ok := v.(engine.GenerationView)
	if !ok {
		return nil
	}
	g := gv.Generation()
	if g == db.gen.Load() {
		return nil
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	if g == db.gen.Load() {
		return nil
	}
	if err := db.reloadLocked(v); err != nil {
		return err
	}
	db.gen.Store(g)
	return nil
}

// reloadLocked replaces the caches with what v holds. The caller holds mu.
func (db *DB) reloadLocked(v engine.View) error {
	old := maps.Clone(db.byID)
	saved := struct {
		lastTx      int64
		nextTbl     uint32
		tables      map[string]*Table
		byID        map[uint32]*Table
		nextSK      map[uint32]uint64
		attrOrd     map[uint32]map[string]uint32
		attrList    map[uint32][]string
		attrType    map[uint32]map[string]ColumnType
		eraseSecret []byte
	}{db.lastTx, db.nextTbl, db.tables, db.byID, db.nextSK, db.attrOrd, db.attrList, db.attrType, db.eraseSecret}
	db.tables, db.byID, db.nextSK = map[string]*Table{}, map[uint32]*Table{}, map[uint32]uint64{}
	db.attrOrd, db.attrList, db.attrType = map[uint32]map[string]uint32{}, map[uint32][]string{}, map[uint32]map[string]ColumnType{}
	err := getMeta(v, layout.MetaLastTx, &db.lastTx)
	if err == nil {
		err = getMeta(v, layout.MetaNextTable, &db.nextTbl)
	}
	if err == nil {
		err = db.loadSecret(v)
	}
	if err == nil {
		err = db.loadCatalog(v)
	}
	if err != nil {
		db.lastTx, db.nextTbl, db.tables, db.byID = saved.lastTx, saved.nextTbl, saved.tables, saved.byID
		db.nextSK, db.attrOrd, db.attrList, db.attrType, db.eraseSecret = saved.nextSK, saved.attrOrd, saved.attrList, saved.attrType, saved.eraseSecret
		return err
	}
	for id, t := range db.byID {
		if o, ok := old[id]; ok && o.Name == t.Name && sameDeclaration(o, t) {
			db.byID[id], db.tables[t.Name] = o, o
		}
	}
	return nil
}
