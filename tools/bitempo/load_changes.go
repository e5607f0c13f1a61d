package main

import (
	"errors"
	"fmt"

	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// commitEvents applies rows as CDC events to a changes table, one Apply (one
// transaction) per batch of rows. The batch id of a file that fits one batch is
// batchID itself; otherwise batch k (from 1) is batchID#k. Reloading the same
// file with the same batch size therefore replays nothing, and a load cut short
// by a failed commit can simply be run again: the batches that committed are
// skipped as already applied.
func (a *app) commitEvents(db *store.DB, t *store.Table, rows []loadRow, size int, batchID string, sum *loadSummary) error {
	bar := a.newProgress("loading "+t.Name, len(rows))
	defer bar.finish()
	parts := batches(len(rows), size)
	for k, b := range parts {
		id := batchID
		if len(parts) > 1 {
			id = fmt.Sprintf("%s#%d", batchID, k+1)
		}
		events := make([]txn.Event, 0, b[1]-b[0])
		for i := b[0]; i < b[1]; i++ {
			r := &rows[i]
			e := txn.Event{Key: r.key, At: r.at, Seq: r.seq, Op: txn.OpUpsert, Attrs: r.attrs}
			if r.del {
				e.Op, e.Attrs = txn.OpDelete, nil
			}
			events = append(events, e)
		}
		res, err := txn.Apply(db, t.Name, id, events)
		var ee *txn.EventError
		if errors.As(err, &ee) && ee.Index >= 0 && ee.Index < len(events) {
			err = fmt.Errorf("%s line %d: %w", sum.file, rows[b[0]+ee.Index].line, ee.Err)
		}
		if err != nil {
			return midwayError(t.Name, sum, len(rows), err)
		}
		sum.committedRows += b[1] - b[0]
		if res.Replayed {
			sum.replayed++
			sum.unchanged += b[1] - b[0]
		} else {
			sum.txs = append(sum.txs, res.Tx)
			sum.inserted += res.Inserted + res.Split
			sum.closed += res.Closed + res.Removed
			sum.unchanged += res.Duplicates
			sum.conflicts += res.Conflicts
			sum.duplicates += res.Duplicates
			sum.merged += res.Merged
			sum.overwritten += res.Updated
			sum.split += res.Split
			sum.tombstones += res.Tombstones
			sum.collapsed += res.Collapsed
		}
		bar.add(b[1] - b[0])
	}
	sum.events = true
	return nil
}
