package pebble

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/engine"
	"github.com/bitempo/bitempo/layout"
)

// Purge flushes the memtable, compacts spans (everything when all) to the
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
func (e *Engine) Purge(ctx context.Context, spans []engine.Span, all, wait bool) error {
	if err := e.h.err(); err != nil {
		return err
	}
	if all {
		spans = []engine.Span{{Start: []byte{0x00}, End: []byte{0xff, 0xff}}}
	}
	err := e.waitUnlessFailed(ctx, func() error {
		for _, sp := range spans {
			start, end := rangeKeyBounds(sp.Start, sp.End)
			if err := e.db.RangeKeyDelete(start, end, pebble.NoSync); err != nil {
				return err
			}
		}
		if err := e.db.Flush(); err != nil {
			return err
		}
		for _, sp := range spans {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := e.manualCompact(sp.Start, sp.End); err != nil { // fence.go
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
		if err := e.h.err(); err != nil {
			return err
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
// A fresh log file per memtable, not a recycled log overwritten with zeros:
// the first costs a file creation per flush, small against a flush; the
// second would cost a write of the whole log.
type noRecycleCleaner struct {
	pebble.DeleteCleaner
	needsContents
}

type needsContents struct{ pebble.ArchiveCleaner }

func (noRecycleCleaner) String() string { return "delete (no WAL recycling)" }

// ForgetDeletedFiles (engine.Purger) closes the engine and opens it twice with one write (the
// delete of meta "purge_pending") and a flush each time: each open writes a
// fresh MANIFEST holding only the live sstables' bounds, and Pebble keeps one
// previous MANIFEST (Options.NumPrevManifest cannot go below 1), so after the
// second the MANIFESTs that named the erased keys' sstables are deleted. With
// reopen the engine is opened a third time for use.
func (e *Engine) ForgetDeletedFiles(clearKey []byte, reopen bool) error {
	if err := e.h.err(); err != nil {
		return err
	}
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
		db, err := e.reopen()
		if err != nil {
			return err
		}
		if i == 2 {
			e.db = db
			return nil
		}
		err = e.h.guard(func() error {
			err := db.Delete(clearKey, pebble.Sync)
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
// open and the engine's own reference to the directory lock, which it holds
// from Open to Close, so the directory is never unlocked in between.
func (e *Engine) reopen() (*pebble.DB, error) {
	o := e.opts.Clone()
	o.Lock = e.pebbleLock
	o.ErrorIfNotExists = true
	var db *pebble.DB
	err := e.h.guard(func() (err error) {
		db, err = pebble.Open(e.dir, o)
		return err
	})
	return db, err
}

// rangeKeyBounds widens [start, end) to bounds a range key may have: Pebble
// takes only prefix keys (keys that layout.Split leaves whole) as range-key
// bounds, and a span of erased records can start or end inside a prefix (the
// records of a key of several components, whose first component alone is
// the prefix, or one record of a key). start becomes its prefix, which
// sorts at or before it and splits as itself; end, when it has a suffix, the
// first key after every key of its prefix (encoding.PrefixEnd), which ends
// the prefix's last component early or breaks its escape and so splits as
// itself too (layout.ImmediateSuccessor relies on the same). The tombstone
// only marks the span for compaction, so a wider one is harmless.
func rangeKeyBounds(start, end []byte) ([]byte, []byte) {
	start = start[:layout.Split(start)]
	if n := layout.Split(end); n != len(end) {
		end = encoding.PrefixEnd(end[:n])
	}
	return start, end
}
