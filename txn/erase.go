package txn

import (
	"errors"
	"fmt"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/store"
)

// ErrErased: a transaction touched a key it erased, or erased a key it had
// already changed. An erasure must be the only thing its transaction does to
// the key: it removes the committed state, and a write in the same
// transaction would either be removed with it or outlive the erasure
// unnoticed. The error is an *EraseConflictError.
var ErrErased = errors.New("bitempo: key erased in this transaction")

// EraseConflictError names the key of an ErrErased.
type EraseConflictError struct {
	Table string
	Key   store.Key
}

func (e *EraseConflictError) Error() string {
	return fmt.Sprintf("bitempo: %s %s: an erased key cannot be written in the transaction that erases it", e.Table, e.Key)
}

// Is makes errors.Is(err, ErrErased) true.
func (e *EraseConflictError) Is(target error) bool { return target == ErrErased }

// Erase removes every trace of key's data from table (a periods or a changes
// table) in this transaction, as a right-to-erasure request needs: all its
// records at every transaction time, their surrogate-key index entries and
// group-index copies, its transaction-log entries and, in a changes table, its
// events and checkpoint. After the commit every read at every transaction time
// answers as for a key that never existed, GetBySK of one of its surrogate
// keys says it was erased, and the transaction log keeps an erasure entry with
// a keyed hash of the key (no personal data). Update then purges the erased
// bytes from the store's files (store.DB.Purge). A key the table holds nothing
// of is an error wrapping store.ErrUnknownKey, and nothing is written.
//
// Semantics decided here: an erasure of a changes table removes the key's
// events too, so a later Apply of new events for the key derives its versions
// from those alone, and re-applying an already applied batch id changes
// nothing (the batch ids are kept, so an old feed's replay cannot resurrect
// the data; docs/design/erasure-keeps-batch-ids.md).
func (tx *Tx) Erase(table string, key store.Key) error {
	return tx.EraseFor(table, key, "")
}

// EraseFor is Erase with the operator's reason, kept in the erasure entry (it
// must itself hold no personal data).
func (tx *Tx) EraseFor(table string, key store.Key, reason string) error {
	if tx.done {
		return ErrFinished
	}
	t, err := tx.db.Table(table)
	if err != nil {
		return err
	}
	id, err := t.AppendKey(encoding.AppendUint32(nil, t.ID), key)
	if err != nil {
		return err
	}
	conflict := &EraseConflictError{Table: table, Key: key}
	if tx.erased[string(id)] {
		return conflict
	}
	if ks, ok := tx.keys[string(id)]; ok {
		if _, asserted := diff(ks.orig, ks.cur); len(asserted) > 0 || len(ks.orig) != len(ks.cur) {
			return conflict
		}
	}
	if tx.cdc != nil && tx.cdc.keys[string(id)] != nil {
		return conflict
	}
	if _, ok := tx.flushed[string(id)]; ok { // written and handed to the Writer
		return conflict
	}
	if _, err := tx.w.Erase(t, id[4:], reason); err != nil {
		return err
	}
	if ks, ok := tx.keys[string(id)]; ok { // read but unchanged: forget it
		delete(tx.keys, string(id))
		for i, o := range tx.order {
			if o == ks {
				tx.order = append(tx.order[:i], tx.order[i+1:]...)
				break
			}
		}
	}
	if tx.erased == nil {
		tx.erased = map[string]bool{}
	}
	tx.erased[string(id)] = true
	tx.erasedAny = true
	return nil
}

// checkErased returns an *EraseConflictError when the key tx.buf names (table
// id | tuple) was erased by this transaction.
func (tx *Tx) checkErased(t *store.Table, key store.Key) error {
	if tx.erased[string(tx.buf)] {
		return &EraseConflictError{Table: t.Name, Key: key}
	}
	return nil
}
