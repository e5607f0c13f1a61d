package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/bitempo/bitempo/engine"
	"github.com/bitempo/bitempo/layout"
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
	if _, ok := db.engine.(engine.Purger); len(spans) == 0 || !ok {
		return
	}
	db.purge.mu.Lock()
	defer db.purge.mu.Unlock()
	db.purge.spans = append(db.purge.spans, spans...)
	db.purge.pending = true
}

// loadPurgePending notes a purge that a crash interrupted.
func (db *DB) loadPurgePending(v engine.View) error {
	_, ok, err := v.Get(layout.MetaPurgePending)
	if _, canPurge := db.engine.(engine.Purger); ok && canPurge {
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

// finishPurge has the engine forget its deleted files (closing the engine, and
// reopening it when reopen is set) and clears the pending mark, once every span is compacted and
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
	err := db.engine.(engine.Purger).ForgetDeletedFiles(layout.MetaPurgePending, reopen)
	if err != nil {
		err = fmt.Errorf("bitempo: purge: %w", err)
	} else {
		db.purge.pending = false
	}
	if !reopen {
		// The engine is closed; Close releases what it still holds (its locks).
		err = errors.Join(err, db.engine.Close())
	}
	return err
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
	release, err := db.holdWritable("purge")
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
	if err := db.engine.(engine.Purger).Purge(ctx, mergeSpans(spans), all, clean); err != nil {
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
func mergeSpans(spans []span) []engine.Span {
	byTable := map[string]*span{}
	var order []string
	for _, sp := range spans {
		id := string(sp.start[:max(layout.TableIDEnd(sp.start), min(len(sp.start), 1))])
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
	out := make([]engine.Span, 0, len(order))
	for _, id := range order {
		out = append(out, engine.Span{Start: byTable[id].start, End: byTable[id].end})
	}
	return out
}
