package cli

import (
	"errors"
	"fmt"

	"github.com/bitempo/bitempo/txn"
)

// commitEvents applies rows as CDC events to a changes table, one Apply per
// transaction. Of the rows for one key, time and sequence number, only the last
// in the file is applied (lastPerEvent), so a file loads the same way every
// time. The batch id of a load in one transaction is batchID itself;
// with --batch-size, batch k (from 1) is batchID#k. Reloading the same file
// with the same batch size therefore replays nothing, and a batched load cut
// short can simply be run again: the batches that committed are skipped as
// already applied.
func (r *loadRun) commitEvents(batchID string) error {
	n := len(r.rows)
	r.rows = lastPerEvent(r.rows)
	r.batchID, r.parts = batchID, len(batches(len(r.rows), r.size))
	err := r.commitEventRows()
	r.eventsDone(err, n-len(r.rows))
	return err
}

// commitEventRows applies r.rows as the load's next CDC batches, one Apply
// per transaction, numbering them on from the batches already committed.
func (r *loadRun) commitEventRows() error {
	var res txn.ApplyResult
	return r.commit(func(tx *txn.Tx, b batch) error {
		id := r.batchID
		if r.parts > 1 {
			id = fmt.Sprintf("%s#%d", r.batchID, r.committed+1)
		}
		events := make([]txn.Event, 0, b.hi-b.lo)
		for i := b.lo; i < b.hi; i++ {
			if err := r.tick(tx, i); err != nil {
				return err
			}
			row := &r.rows[i]
			e := txn.Event{Key: row.key, At: row.at, Seq: row.seq, Op: txn.OpUpsert, Attrs: row.attrs}
			if row.del {
				e.Op, e.Attrs = txn.OpDelete, nil
			}
			events = append(events, e)
		}
		var err error
		res, err = tx.Apply(r.t.Name, id, events)
		var ee *txn.EventError
		if errors.As(err, &ee) && ee.Index >= 0 && ee.Index < len(events) {
			err = fmt.Errorf("%s line %d: %w", r.sum.file, r.rows[b.lo+ee.Index].line, ee.Err)
		}
		return err
	}, func(_ txn.Commit, b batch) {
		r.committed++
		r.addApplied(res, b.hi-b.lo)
	})
}

// eventsDone completes the summary of a changes-table load that ended with
// err, whose dropped rows were superseded by a later row of their event.
func (r *loadRun) eventsDone(err error, dropped int) {
	r.sum.events = true
	if err == nil && r.sum.replayed == r.parts {
		r.sum.unchanged += dropped // a replayed file changed nothing, its dropped rows included
	}
}

// addApplied adds what one Apply of rows rows did to the summary.
func (r *loadRun) addApplied(res txn.ApplyResult, rows int) {
	sum := r.sum
	sum.events = true
	if res.Replayed {
		sum.replayed++
		sum.unchanged += rows
		return
	}
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

// lastPerEvent keeps, of the rows with one key, time and sequence number, the
// last in the file, and the rows' order otherwise: the within-load rule that
// the last row for a key and time wins. (Between loads, events at one key,
// time and sequence are a tie that the changes table resolves the same way
// whatever their arrival order.)
func lastPerEvent(rows []loadRow) []loadRow {
	type pos struct {
		tuple   string
		at, seq int64
	}
	last := make(map[pos]int, len(rows))
	for i := range rows {
		last[pos{rows[i].tuple, rows[i].at, rows[i].seq}] = i
	}
	if len(last) == len(rows) {
		return rows
	}
	kept := rows[:0]
	for i := range rows {
		if last[pos{rows[i].tuple, rows[i].at, rows[i].seq}] == i {
			kept = append(kept, rows[i])
		}
	}
	return kept
}
