package cli

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// The bounded load of a changes table: the rows, checked and sorted by key
// through runs on disk as for a periods table (load_stream.go; a key's rows
// keep file order), are applied as one CDC batch key by key (txn.KeyBatch),
// the transaction flushed between keys and its writes spilling to disk. The
// batch has the versions, event log, surrogate keys, counts and errors that
// one Apply of the whole file gives in memory; only the order of work differs.
// A bad event (a --seq null, a too-late event) fails the load with the same
// file line; the rows applied before it are rolled back with the transaction.

// fileBatchID is a load's default batch id: the hash of the file's content,
// as the in-memory path computes it from the bytes it holds.
func fileBatchID(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)[:16]), nil
}

// commitMergedEvents applies the sorted rows of rs key by key as the CDC batch
// batchID, in one transaction.
func (r *loadRun) commitMergedEvents(rs *runSorter, nrows int, in *input, batchID string) error {
	r.bar = r.a.newProgress("loading "+r.t.Name, nrows)
	defer r.bar.finish()
	var res txn.ApplyResult
	_, err := txn.Update(r.db, func(tx *txn.Tx) error {
		if err := tx.DeclareAttrNames(r.t.Name, r.attrNames); err != nil {
			return err
		}
		if err := tx.SpillTo(r.db.Dir(), r.spillBytes); err != nil && !errors.Is(err, store.ErrBulkUnsupported) {
			return err
		}
		kb, err := tx.ApplyByKey(r.t.Name, batchID)
		if err != nil {
			return err
		}
		if !kb.Replayed() {
			if err := r.applyKeys(tx, kb, rs, in); err != nil {
				return err
			}
		}
		res, err = kb.Finish()
		if ee := (*txn.EventError)(nil); errors.As(err, &ee) {
			return fmt.Errorf("%s line %d: %w", r.sum.file, ee.Index, ee.Err)
		}
		if err != nil {
			return err
		}
		if r.ctx.Err() != nil { // the last moment at which the load can still be rolled back
			return errInterrupted
		}
		return nil
	})
	switch {
	case errors.Is(err, errInterrupted):
		return r.interrupted()
	case err != nil:
		return r.midway(err)
	}
	r.sum.committedRows = nrows
	r.addApplied(res, nrows)
	return nil
}

// applyKeys hands the merged rows to kb key by key, as events whose position
// is their file line, flushing the transaction every r.flushEvery rows.
func (r *loadRun) applyKeys(tx *txn.Tx, kb *txn.KeyBatch, rs *runSorter, in *input) error {
	m, err := rs.merge()
	if err != nil {
		return err
	}
	defer m.close()
	var group []loadRow
	var events []txn.Event
	var pos []int
	sinceFlush := 0
	for {
		if group, err = r.nextKeyRows(tx, m, group[:0], in, &sinceFlush); err != nil {
			return err
		}
		if len(group) == 0 {
			return nil
		}
		group = lastPerEvent(group)
		events, pos = events[:0], pos[:0]
		for i := range group {
			row := &group[i]
			e := txn.Event{Key: row.key, At: row.at, Seq: row.seq, Op: txn.OpUpsert, Attrs: row.attrs}
			if row.del {
				e.Op, e.Attrs = txn.OpDelete, nil
			}
			events, pos = append(events, e), append(pos, row.line)
		}
		if err := kb.Key(events, pos); err != nil {
			return err
		}
		r.bar.add(len(group))
	}
}
