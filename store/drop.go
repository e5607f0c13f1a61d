package store

import (
	"fmt"

	"github.com/bitempo/bitempo/engine"
	"github.com/bitempo/bitempo/layout"
)

// DropTable deletes a table: its catalog entry and every key it owns (records,
// history, indexes, events), in one atomic commit of range deletions, so its
// memory and time do not grow with the table. A reader's snapshot taken before
// still sees the table. Table ids are never reused, so a table created later
// under the same name starts empty. It fails with ErrUnknownTable for a name
// not in the catalog.
//
// The transaction log of the dropped table goes with it: dropping is not a
// bitemporal change that as-of reads can look behind (the alternative, retiring
// every record, keeps the history, which is what a user asking to drop a table
// does not want).
func (db *DB) DropTable(name string) error {
	unlock, err := db.lockCatalog("DropTable")
	if err != nil {
		return err
	}
	defer unlock()
	t, ok := db.tables[name]
	if !ok {
		return fmt.Errorf("%w: %q", ErrUnknownTable, name)
	}
	writes := []engine.Write{{Key: layout.CatalogKey(name), Delete: true}}
	for _, ks := range layout.PerTableKeyspaces() {
		lo := layout.AppendTablePrefix(nil, ks, t.ID)
		hi := layout.AppendTablePrefix(nil, ks, t.ID+1)
		if t.ID == ^uint32(0) {
			hi = []byte{ks + 1}
		}
		writes = append(writes, engine.Write{Key: lo, RangeEnd: hi})
	}
	if err := db.commit(writes, !db.opts.NoSync); err != nil {
		return fmt.Errorf("bitempo: drop table %q: %w", name, err)
	}
	delete(db.tables, name)
	delete(db.byID, t.ID)
	delete(db.nextSK, t.ID)
	delete(db.attrOrd, t.ID)
	delete(db.attrList, t.ID)
	return nil
}
