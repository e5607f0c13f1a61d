package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// This file makes erased bytes leave the disk. An erasure's deletes hide the
// key at once, but Pebble keeps the deleted values until a compaction drops
// them: in older sstables, in the memtable and its write-ahead log, and (by
// default) in recycled write-ahead log files, which are renamed and reused
// rather than deleted. A purge ends all three:
//
//  1. it flushes the memtable, so the write-ahead log that holds the erased
//     values (and the erasure's tombstones, whose keys hold the natural key)
//     becomes obsolete and is deleted: bitempo opens Pebble with a cleaner
//     that deletes and turns WAL recycling off (noRecycleCleaner), so no
//     reused log file keeps old bytes;
//  2. it compacts the key ranges the erasures emptied down to the bottom
//     level, where the deletes and the values they shadow are both dropped
//     (every range of one keyspace and table is merged into one span, so an
//     erasure rewrites at most that stretch of the table's files);
//  3. it waits until Pebble has deleted the obsolete files.
//
// A compaction cannot drop what an open snapshot still reads, so a purge that
// started while any snapshot was open stays pending and runs again. The
// guarantee: the erased bytes are gone from the store's files when the
// erasing Update returns if no other snapshot was open; otherwise at the next
// Purge with none open, and at the latest when the store is closed (Close
// refuses while snapshots are open, and purges first) or, after a crash, when
// it is next opened (meta "purge_pending", written by the erasing commit, makes
// Open purge the whole store before it returns). Pebble's MANIFEST keeps the
// smallest and largest key of every sstable it has seen since it was last
// rewritten, so a purge also rotates it (rotateManifest). Copies made earlier
// (backups, checkpoints, file-system snapshots, replicas) are not touched: the
// operator must erase the key in them too, or destroy them.

// purgeState is the set of erasures whose bytes may still be on disk.
type purgeState struct {
	mu    sync.Mutex
	spans []span // key ranges not yet compacted since their erasure
	all   bool   // a purge found pending at Open: its spans are unknown
	// pending mirrors meta "purge_pending": some erased bytes may still be in
	// the store's files, if only as sstable bounds in the MANIFEST. Close and
	// Open clear it once they have rotated the MANIFEST.
	pending bool
}

// notePurge adds the spans of a committed erasure. The caller holds the
// writer lock.
func (db *DB) notePurge(spans []span) {
	if _, ok := db.engine.(purger); len(spans) == 0 || !ok {
		return
	}
	db.purge.mu.Lock()
	defer db.purge.mu.Unlock()
	db.purge.spans = append(db.purge.spans, spans...)
	db.purge.pending = true
}

// loadPurgePending notes a purge that a crash interrupted.
func (db *DB) loadPurgePending(v View) error {
	_, ok, err := v.Get(metaPurgePending)
	if _, canPurge := db.engine.(purger); ok && canPurge {
		db.purge.all, db.purge.pending = true, true
	}
	return err
}

// purgeAfterOpen finishes a purge that a crash interrupted: the whole store
// is compacted and the MANIFEST rotated before Open returns. A read-only open
// cannot, and leaves it to the next writable open.
func (db *DB) purgeAfterOpen() error {
	if db.opts.ReadOnly || !db.purge.pending {
		return nil
	}
	if err := db.purgeLocked(context.Background(), true); err != nil {
		return err
	}
	return db.finishPurge(true)
}

// finishPurge rotates the MANIFEST (closing the engine, and reopening it when
// reopen is set) and clears the pending mark, once every span is compacted and
// no snapshot is open. The caller holds the writer lock and no one else uses
// the engine.
func (db *DB) finishPurge(reopen bool) error {
	db.purge.mu.Lock()
	defer db.purge.mu.Unlock()
	if !db.purge.pending || len(db.purge.spans) > 0 || db.purge.all || db.snapshots.Load() != 0 {
		if reopen {
			return nil
		}
		return db.engine.Close()
	}
	if err := db.engine.(purger).rotateManifest(reopen); err != nil {
		return fmt.Errorf("bitempo: purge: %w", err)
	}
	db.purge.pending = false
	return nil
}

// PurgePending reports whether erased bytes may still be in the store's
// files: an erasure was committed and the store has not been closed (or
// reopened after a crash) since. Values leave at the erasing Update's purge;
// the key itself may stay in the MANIFEST as an sstable bound until Close.
func (db *DB) PurgePending() bool {
	db.purge.mu.Lock()
	defer db.purge.mu.Unlock()
	return db.purge.pending
}

// Purge compacts away the bytes of every erasure committed so far that no open
// snapshot still reads (see purge.go's comment for the exact guarantee).
// Package txn calls it after a transaction that erased; tools call it from
// bitempo compact. It returns at once when nothing is left to compact.
func (db *DB) Purge(ctx context.Context) error {
	if db.opts.ReadOnly {
		return fmt.Errorf("%w: purge", ErrReadOnly)
	}
	release, err := db.holdOpen()
	if err != nil {
		return err
	}
	defer release()
	return db.purgeLocked(ctx, false)
}

// purgeLocked compacts the pending spans; writerHeld says the caller holds the
// writer lock.
func (db *DB) purgeLocked(ctx context.Context, writerHeld bool) error {
	db.purge.mu.Lock()
	spans, all := slices.Clone(db.purge.spans), db.purge.all
	db.purge.mu.Unlock()
	if len(spans) == 0 && !all {
		return nil
	}
	clean := db.snapshots.Load() == 0
	start := time.Now()
	if err := db.engine.(purger).purge(ctx, mergeSpans(spans), all, clean); err != nil {
		return fmt.Errorf("bitempo: purge: %w", err)
	}
	if !clean || db.snapshots.Load() != 0 {
		db.opts.Logger.Info("bitempo: purge deferred: snapshots are open", "dir", db.dir)
		return nil
	}
	if !writerHeld {
		if err := db.writer.lock("Purge"); err != nil {
			return err
		}
		defer db.writer.unlock()
	}
	db.purge.mu.Lock()
	defer db.purge.mu.Unlock()
	db.purge.spans = db.purge.spans[len(spans):]
	if all {
		db.purge.all = false
	}
	db.opts.Logger.Info("bitempo: purged erased data", "dir", db.dir, "took", time.Since(start))
	return nil
}

// mergeSpans merges the spans of one keyspace and table into one span from the
// least start to the greatest end: one manual compaction per stretch.
func mergeSpans(spans []span) []span {
	byTable := map[string]*span{}
	var order []string
	for _, sp := range spans {
		id := string(sp.start[:max(tableIDEnd(sp.start), min(len(sp.start), 1))])
		m := byTable[id]
		if m == nil {
			byTable[id] = &span{sp.start, sp.end}
			order = append(order, id)
			continue
		}
		if bytes.Compare(sp.start, m.start) < 0 {
			m.start = sp.start
		}
		if bytes.Compare(sp.end, m.end) > 0 {
			m.end = sp.end
		}
	}
	slices.Sort(order)
	out := make([]span, 0, len(order))
	for _, id := range order {
		out = append(out, *byTable[id])
	}
	return out
}

// purge flushes the memtable, compacts spans (everything when all) to the
// bottom level, rotates the MANIFEST and, when wait is set, waits until the
// obsolete files are deleted.
//
// Pebble's manual compaction never rewrites a file that is already in the
// bottom level, so erased values that reached it next to their tombstones
// (a compaction that ran while a snapshot still read them must keep both)
// would stay there. So each span first gets a range-key tombstone: bitempo
// stores no range keys, so it changes no read, but the flushed file that
// holds it overlaps the whole span, and compacting it down rewrites every
// bottom-level file of the span, dropping what the point tombstones delete.
func (e *pebbleEngine) purge(ctx context.Context, spans []span, all, wait bool) error {
	if err := e.h.err(); err != nil {
		return err
	}
	if all {
		spans = []span{{[]byte{0x00}, []byte{0xff, 0xff}}}
	}
	err := e.h.guard(func() error {
		for _, sp := range spans {
			if err := e.db.RangeKeyDelete(sp.start, sp.end, pebble.NoSync); err != nil {
				return err
			}
		}
		if err := e.db.Flush(); err != nil {
			return err
		}
		for _, sp := range spans {
			if err := e.db.Compact(ctx, sp.start, sp.end, true); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return e.h.readErr(err)
	}
	if !wait {
		return nil
	}
	// Pebble deletes obsolete files in the background; an iterator still
	// open elsewhere keeps its tables (zombies) until it closes. The wait is
	// bounded so that such a reader cannot hang the purge: the erasure then
	// stays pending and Close finishes it.
	deadline := time.Now().Add(purgeWait)
	for {
		m := e.db.Metrics()
		if m.Table.ObsoleteCount == 0 && m.Table.ZombieCount == 0 && m.WAL.ObsoleteFiles == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("obsolete files still present after %s (%d tables, %d zombie tables, %d logs)", purgeWait, m.Table.ObsoleteCount, m.Table.ZombieCount, m.WAL.ObsoleteFiles)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// purgeWait bounds how long a purge waits for Pebble to delete obsolete files.
const purgeWait = 10 * time.Second

// noRecycleCleaner deletes obsolete files like Pebble's default cleaner, and
// also turns off write-ahead log recycling: Pebble recycles log files only
// when the cleaner does not need their contents (an unexported marker method
// that the ArchiveCleaner embedded one level deeper supplies; Clean comes from
// the DeleteCleaner, which is shallower). A recycled log keeps the bytes of its
// old records until they are overwritten, erased data included.
// Decision: a fresh log file per memtable costs a file creation per flush,
// which is small against a flush; the rejected alternative, overwriting
// recycled logs with zeros, would cost a write of the whole log.
type noRecycleCleaner struct {
	pebble.DeleteCleaner
	needsContents
}

type needsContents struct{ pebble.ArchiveCleaner }

func (noRecycleCleaner) String() string { return "delete (no WAL recycling)" }

// rotateManifest closes the engine and opens it twice with one write (the
// delete of meta "purge_pending") and a flush each time: each open writes a
// fresh MANIFEST holding only the live sstables' bounds, and Pebble keeps one
// previous MANIFEST (Options.NumPrevManifest cannot go below 1), so after the
// second the MANIFESTs that named the erased keys' sstables are deleted. With
// reopen the engine is opened a third time for use.
func (e *pebbleEngine) rotateManifest(reopen bool) error {
	err := e.h.guard(e.db.Close)
	e.db = nil // closed: close() of a failed rotation is a no-op
	if err != nil {
		return err
	}
	rounds := 2
	if reopen {
		rounds = 3
	}
	for i := range rounds {
		db, err := e.reopen(reopen)
		if err != nil {
			return err
		}
		if i == 2 {
			e.db = db
			return nil
		}
		err = e.h.guard(func() error {
			err := db.Delete(metaPurgePending, pebble.Sync)
			if err == nil {
				err = db.Flush()
			}
			return errors.Join(err, db.Close())
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// reopen opens the engine's directory again with the options of its first
// open. inOpen says it runs inside Open, which still holds its reference to
// the directory lock of the first open (Open drops it when it returns), so
// that lock is reused; from Close the lock was released with the engine and
// a fresh one is taken.
func (e *pebbleEngine) reopen(inOpen bool) (*pebble.DB, error) {
	o := e.opts.Clone()
	if !inOpen {
		lock, err := pebble.LockDirectory(e.dir, o.FS)
		if err != nil {
			return nil, err
		}
		defer lock.Close() // Open takes its own reference
		o.Lock = lock
	}
	o.ErrorIfNotExists = true
	var db *pebble.DB
	err := e.h.guard(func() (err error) {
		db, err = pebble.Open(e.dir, o)
		return err
	})
	return db, err
}
