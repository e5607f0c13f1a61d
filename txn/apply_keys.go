package txn

import (
	"bytes"
	"errors"
	"fmt"
	"slices"

	"github.com/bitempo/bitempo/store"
)

// ErrKeyOrder: a KeyBatch was given a key out of order (not after the previous
// key in the table's key encoding) or events of several keys in one call.
var ErrKeyOrder = errors.New("bitempo: keys of a key-by-key batch out of order")

// KeyBatch applies one CDC batch that is too large to hold in memory, one key
// at a time: the caller sorts the batch's events by key (an external sort, say)
// and hands each key's events to Key, in ascending order of the table's key
// encoding (store.Table.AppendKey), then calls Finish. Between keys the caller
// may Flush the transaction, so that with SpillTo only the current key's
// events and versions are in memory.
//
// The result is exactly that of Apply with the whole batch: the same event
// log, checkpoints, versions and surrogate keys (Apply, too, goes through the
// keys in encoding order), the same ApplyResult, and the same error. Apply
// reads every key before it writes any, so a batch with an invalid or too-late
// event leaves no trace; a KeyBatch has written the keys before the bad one
// when it meets it. It then writes nothing more, goes on checking the keys it
// is given (so that Finish reports the batch's first error by position, as
// Apply does: an invalid event before a too-late one), and marks the
// transaction failed: the transaction cannot commit, and the caller returns
// Finish's error from the Update function to roll it back
// (docs/design/cdc-keybatch-errors.md).
type KeyBatch struct {
	tx       *Tx
	t        *store.Table
	id       string
	replayed bool
	replayTx int64
	res      ApplyResult
	last     []byte // the previous key's encoding
	started  bool
	invalid  *EventError // the first invalid event by position
	late     *EventError // the first too-late event by position
	finished bool
	buf      []byte
}

// ApplyByKey starts a key-by-key CDC batch on a changes table (see KeyBatch).
// A batch id applied already makes the batch a replay: Key ignores the events
// and Finish returns Replayed, as Apply does.
func (tx *Tx) ApplyByKey(table, batchID string) (*KeyBatch, error) {
	if tx.done {
		return nil, ErrFinished
	}
	t, err := tx.table(table, store.Changes)
	if err != nil {
		return nil, err
	}
	if batchID == "" || len(batchID) > store.MaxBatchIDLen {
		return nil, fmt.Errorf("%w: table %q: batch id must be 1-%d bytes, got %d", ErrInvalidBatch, t.Name, store.MaxBatchIDLen, len(batchID))
	}
	applied, ok, err := tx.changesState().batchTx(tx.w.Snapshot(), t, batchID)
	if err != nil {
		return nil, err
	}
	return &KeyBatch{tx: tx, t: t, id: batchID, replayed: ok, replayTx: applied}, nil
}

// Replayed reports whether the batch id had been applied already.
func (b *KeyBatch) Replayed() bool { return b.replayed }

// Failed reports whether the batch met an invalid or too-late event: Key then
// only checks, and Finish returns the error.
func (b *KeyBatch) Failed() bool { return b.invalid != nil || b.late != nil }

// Key applies the batch's events of one key, all of them, in any order. pos[i]
// is the position of events[i] in the batch: it orders errors as Apply's event
// indexes do, and an *EventError reports it as Index. An invalid or too-late
// event is not returned here but by Finish (see KeyBatch); Key returns
// ErrKeyOrder for a key not after the previous one, and storage errors.
func (b *KeyBatch) Key(events []Event, pos []int) error {
	tx, t := b.tx, b.t
	switch {
	case tx.done || b.finished:
		return ErrFinished
	case len(pos) != len(events):
		return fmt.Errorf("bitempo: KeyBatch.Key: %d events but %d positions", len(events), len(pos))
	case b.replayed || len(events) == 0:
		return nil
	}
	kev := &keyEvents{events: make([]store.CDCEvent, 0, len(events))}
	var invalid *EventError
	for i := range events {
		e := &events[i]
		ev, err := tx.validateEvent(t, e, &b.buf)
		if err != nil {
			if invalid == nil || pos[i] < invalid.Index {
				invalid = &EventError{Table: t.Name, Index: pos[i], Err: err}
			}
			continue
		}
		ev.Index = pos[i]
		if kev.tuple == nil {
			kev.key, kev.tuple = slices.Clone(e.Key), bytes.Clone(b.buf)
		} else if !bytes.Equal(kev.tuple, b.buf) {
			return fmt.Errorf("%w: table %q: one call holds events of two keys", ErrKeyOrder, t.Name)
		}
		kev.events = append(kev.events, ev)
	}
	if kev.tuple != nil {
		if b.started && bytes.Compare(kev.tuple, b.last) <= 0 {
			return fmt.Errorf("%w: table %q: a key at or before the previous one", ErrKeyOrder, t.Name)
		}
		b.last, b.started = append(b.last[:0], kev.tuple...), true
	}
	if invalid != nil {
		if b.invalid == nil || invalid.Index < b.invalid.Index {
			b.invalid = invalid
		}
		b.fail()
		return nil
	}
	if b.invalid != nil {
		return nil // the batch fails with an invalid event: lateness no longer matters
	}
	slices.SortStableFunc(kev.events, compareFresh)
	p, err := tx.planKey(t, kev)
	if err != nil {
		return err
	}
	var ee *EventError
	if errors.As(p.tooLate(), &ee) {
		if b.late == nil || ee.Index < b.late.Index {
			b.late = ee
		}
		b.fail()
		return nil
	}
	if b.late != nil {
		return nil
	}
	return tx.applyKey(p, &b.res)
}

// fail marks the transaction failed with the batch's error so far.
func (b *KeyBatch) fail() {
	if b.invalid != nil {
		b.tx.failed = b.invalid
	} else {
		b.tx.failed = b.late
	}
}

// Finish ends the batch: it records the batch id and returns the result of
// the whole batch, or the batch's first error (an *EventError, as Apply's),
// after which the transaction cannot commit.
func (b *KeyBatch) Finish() (ApplyResult, error) {
	tx := b.tx
	if tx.done || b.finished {
		return ApplyResult{}, ErrFinished
	}
	b.finished = true
	if b.replayed {
		return ApplyResult{Replayed: true, Tx: b.replayTx}, nil
	}
	if b.Failed() {
		b.fail()
		return ApplyResult{}, tx.failed
	}
	if err := tx.w.PutBatch(b.t, b.id); err != nil {
		return ApplyResult{}, err
	}
	b.res.Tx = tx.w.Tx()
	tx.changesState().batches[logKey(b.t, []byte(b.id))] = b.res.Tx
	return b.res, nil
}
