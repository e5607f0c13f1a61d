package txn

import (
	"errors"
	"fmt"

	"github.com/bitempo/bitempo/store"
)

var (
	// ErrKeyFlushed: a key touched again after Flush handed its changes to the
	// store.Writer. Its timeline would be read from the snapshot, without this
	// transaction's changes, so the write is refused.
	ErrKeyFlushed = errors.New("bitempo: key already flushed in this transaction")
	// ErrFlushEvents was returned by Flush in a transaction that had applied
	// CDC events.
	//
	// Deprecated: Flush now releases the event-log state of the keys it
	// flushes too (KeyBatch), and no longer returns it.
	ErrFlushEvents = errors.New("bitempo: a transaction that applied CDC events cannot flush")
)

// Flush hands the changes of every key touched so far to the store.Writer and
// forgets their timelines, so a transaction over many keys holds only the keys
// touched since the last Flush; with spilling on (SpillTo), the writes then go
// to disk as they pass the budget. A flushed key must not be touched again in
// the transaction (ErrKeyFlushed): callers group their writes by key. Keys of
// changes tables (Apply, KeyBatch) are flushed too: their event-log overlay is
// released with their timelines. The committed result is the same as without
// Flush.
func (tx *Tx) Flush() error {
	if tx.done {
		return ErrFinished
	}
	if tx.flushed == nil {
		tx.flushed = map[string]struct{}{}
	}
	for _, ks := range tx.order {
		retired, asserted := diff(ks.orig, ks.cur)
		for _, v := range retired {
			if err := tx.w.Retire(ks.table, v); err != nil {
				return err
			}
		}
		for _, v := range asserted {
			if err := tx.w.Assert(ks.table, v); err != nil {
				return err
			}
		}
		tx.flushedStats.Retired += len(retired)
		tx.flushedStats.Asserted += len(asserted)
	}
	for k := range tx.keys {
		tx.flushed[k] = struct{}{}
		if tx.cdc != nil {
			// Apply wrote the key's events to the Writer already; the overlay
			// only served reads of the key, which can no longer come.
			delete(tx.cdc.keys, k)
		}
	}
	clear(tx.keys)
	tx.order = tx.order[:0]
	return tx.w.Spill()
}

// SpillTo lets the transaction's writes go to sorted files in a new directory
// under dir (on the store's file system) whenever they pass budget bytes, and
// commit by atomic ingestion (store.Writer.EnableSpill); writes are spilled at
// Flush. It returns store.ErrBulkUnsupported when the storage engine cannot.
func (tx *Tx) SpillTo(dir string, budget int64) error {
	if tx.done {
		return ErrFinished
	}
	return tx.w.EnableSpill(dir, budget)
}

// checkNotFlushed refuses a key handed to the Writer by Flush.
func (tx *Tx) checkNotFlushed(k string, t *store.Table) error {
	if _, ok := tx.flushed[k]; ok {
		return fmt.Errorf("%w: table %q", ErrKeyFlushed, t.Name)
	}
	return nil
}
