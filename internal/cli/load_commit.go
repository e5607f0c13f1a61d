package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// This file drives the transactions of a load. By default a load is one
// transaction: every row commits at one transaction time or none does, so the
// transaction log never holds a state that was not a whole file, and an
// interrupted or failed load leaves the store exactly as it was. With
// --batch-size N the rows are committed N at a time instead; an interruption
// then stops between batches and names the rows that committed
// (docs/design/load-one-transaction.md).

// errInterrupted is returned from inside a load's transaction when SIGINT or
// SIGTERM arrived: the transaction rolls back.
var errInterrupted = errors.New("interrupted")

// interruptCheckRows is how many rows a load applies between two looks at its
// interrupt signal.
const interruptCheckRows = 1024

// loadRun is one load's commit phase.
type loadRun struct {
	a         *app
	ctx       context.Context // cancelled by SIGINT or SIGTERM
	db        *store.DB
	t         *store.Table
	mode      loadMode
	rows      []loadRow
	attrNames []string
	size      int // --batch-size; 0: one transaction
	sum       *loadSummary
	bar       *progress
	// grouped: the rows are sorted by key and the transaction is flushed key by
	// key, its writes spilling to disk (spillRows); lastFlush is the row of the
	// last flush.
	grouped    bool
	lastFlush  int
	spillBytes int64
	// flushEvery is how many rows a streamed load applies between flushes
	// (flushInterval).
	flushEvery int
	// A streamed batched load (commitMergedBatches) commits rows a part at a
	// time: rows is the part, total the load's rows, in key order.
	streamed bool
	total    int
	lastLine int // the file line of the last row committed
	// The CDC batches of a load into a changes table: batchID names them,
	// parts is how many the load's rows make (one is named batchID, more
	// batchID#k for batch k from 1), committed how many have committed.
	batchID          string
	parts, committed int
}

// defaultSpillBytes is the memory a spilling load's writes may take before they
// go to a sorted run on disk, and the memory a streamed load's rows take before
// they go to a run (--spill-bytes: tests make it tiny).
const defaultSpillBytes = 64 << 20

// flushRows is the fewest rows between two flushes of a grouped load.
const flushRows = 4096

// batch is one transaction's rows, rows[lo:hi].
type batch struct{ lo, hi int }

// commit runs body for each batch in a transaction of its own and then calls
// done with the commit. body must call r.tick for every row it applies.
func (r *loadRun) commit(body func(tx *txn.Tx, b batch) error, done func(c txn.Commit, b batch)) error {
	if r.bar == nil {
		r.bar = r.a.newProgress("loading "+r.t.Name, len(r.rows))
		defer r.bar.finish()
	}
	r.fitBatches()
	queue := batches(len(r.rows), r.size)
	for len(queue) > 0 {
		b := queue[0]
		queue = queue[1:]
		if r.ctx.Err() != nil {
			return r.interrupted()
		}
		c, err := txn.Update(r.db, func(tx *txn.Tx) error {
			if err := tx.DeclareAttrNames(r.t.Name, r.attrNames); err != nil {
				return err
			}
			r.lastFlush = b[0]
			if r.grouped {
				if err := tx.SpillTo(r.db.Dir(), r.spillBytes); errors.Is(err, store.ErrBulkUnsupported) {
					r.grouped = false // the engine cannot: keep the transaction in memory
				} else if err != nil {
					return err
				}
			}
			if err := body(tx, batch{b[0], b[1]}); err != nil {
				return err
			}
			if r.ctx.Err() != nil { // the last moment at which the batch can still be rolled back
				return errInterrupted
			}
			return nil
		})
		if errors.Is(err, errInterrupted) {
			return r.interrupted()
		}
		if errors.Is(err, store.ErrCommitTooLarge) && r.size > 0 && r.mode != modeEvents && b[1]-b[0] > 1 {
			// The engine refused the batch before writing anything: commit
			// it as two halves instead. (Not for changes tables, whose batch
			// ids follow from --batch-size so that a rerun skips them.)
			mid := b[0] + (b[1]-b[0])/2
			queue = append([][2]int{{b[0], mid}, {mid, b[1]}}, queue...)
			continue
		}
		if err != nil {
			return r.midway(err)
		}
		r.sum.committedRows += b[1] - b[0]
		r.lastLine = r.rows[b[1]-1].line
		done(c, batch{b[0], b[1]})
	}
	return nil
}

// writesPerRow is the most engine writes one loaded row makes (retiring a
// version: a delete and a history record; asserting one: the record and a
// surrogate key index entry; transaction log entries), for sizing batches to
// an engine's bound on one commit.
const writesPerRow = 6

// fitBatches shrinks --batch-size to what one commit of an engine with
// bounded commits (etcd) can hold, and says so.
func (r *loadRun) fitBatches() {
	maxWrites, _, ok := r.db.CommitLimits()
	if !ok || r.size == 0 {
		return
	}
	fit := max(1, (maxWrites-64)/writesPerRow)
	if r.size > fit && r.mode != modeEvents {
		if !r.a.quiet {
			fmt.Fprintf(r.a.stderr, "bitempo: --batch-size %d is more than one %s transaction holds (%d writes): committing %d rows per transaction, fewer where a batch's bytes need it\n",
				r.size, r.db.EngineName(), maxWrites, fit)
		}
		r.size = fit
	}
}

// tick is called before row i is applied: it flushes a grouped load's finished
// keys and reports an interruption, checked every interruptCheckRows rows.
func (r *loadRun) tick(tx *txn.Tx, i int) error {
	r.bar.add(1)
	if r.grouped && i-r.lastFlush >= flushRows && r.rows[i].tuple != r.rows[i-1].tuple {
		// Every row of the keys before row i is applied: hand them to the Writer.
		if err := tx.Flush(); err != nil {
			return err
		}
		r.lastFlush = i
	}
	if i%interruptCheckRows == 0 && r.ctx.Err() != nil {
		return errInterrupted
	}
	return nil
}

// order names the order in which the rows of this load are applied.
func (r *loadRun) order() string {
	if r.streamed && r.mode != modeEvents { // a changes table's batches keep file order
		return "in key order, each key's rows in " + map[bool]string{true: "--at", false: "file"}[r.mode == modeUpserts] + " order"
	}
	if r.mode == modeUpserts {
		return "in --at order"
	}
	return "in file order"
}

// committedPart describes the rows committed so far, for an interruption or a
// failure midway through a batched load.
func (r *loadRun) committedPart() string {
	n, total := r.sum.committedRows, len(r.rows)
	if r.streamed {
		total = r.total
	}
	return fmt.Sprintf("rows 1-%d of %d (%s; the last committed is %s line %d) were committed in %s; the rest is not loaded",
		n, total, r.order(), r.sum.file, r.lastLine, describeTxs(r.sum.txs))
}

// howToContinue says how to finish a batched load that stopped midway.
func (r *loadRun) howToContinue() string {
	if r.mode == modeEvents {
		return fmt.Sprintf("to continue, run the same command again with the same --batch-size %d: the committed batches are recognised by their batch ids and skipped", r.size)
	}
	return "to continue, run the same command again: rows already loaded change nothing"
}

// groupByKey sorts the rows by key, stably, for a load too large to hold its
// transaction in memory: each key's rows keep their order, and keys are then
// done one after the other and flushed. Per-key results are independent of the
// other keys, so the versions are those of the file order; only surrogate keys
// are numbered in key order instead of file order.
func (r *loadRun) groupByKey() {
	slices.SortStableFunc(r.rows, func(x, y loadRow) int { return strings.Compare(x.tuple, y.tuple) })
}

// interrupted is the error of a load stopped by a signal.
func (r *loadRun) interrupted() error {
	if r.sum.committedRows == 0 {
		return &interruptedError{fmt.Sprintf("load %s: interrupted; nothing loaded, the store is as it was before", r.t.Name)}
	}
	return &interruptedError{fmt.Sprintf("load %s: interrupted; %s; %s", r.t.Name, r.committedPart(), r.howToContinue())}
}

// midway is the error of a commit that failed, after earlier batches committed
// or not.
func (r *loadRun) midway(err error) error {
	if r.sum.committedRows == 0 && r.size == 0 && errors.Is(err, store.ErrCommitTooLarge) {
		return fmt.Errorf("load %s: %w; nothing loaded: the file does not fit one transaction of the %s engine, and a load is one transaction unless --batch-size N commits it N rows at a time (then not atomic: a failure stops between batches and names the rows that committed)",
			r.t.Name, err, r.db.EngineName())
	}
	if r.sum.committedRows == 0 {
		return fmt.Errorf("load %s: %w; nothing loaded, the store is as it was before", r.t.Name, err)
	}
	return fmt.Errorf("load %s: %w; %s; %s", r.t.Name, err, r.committedPart(), r.howToContinue())
}
