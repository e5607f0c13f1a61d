package store

import (
	"bytes"
	"fmt"
	"iter"

	"github.com/bitempo/bitempo/internal/sealed"

	"github.com/bitempo/bitempo/engine"
)

// This file is a low-level door into the key-value layer: a raw dump of a
// snapshot (byte-for-byte comparisons, debugging dumps) and, for this module's
// tests only (sealed.Key), a raw write that bypasses the layout (fuzzing the
// decoders with corrupt stores). Nothing in the library's read or write paths
// uses it.

// RawKV is one stored key and value, as RawScan yields it.
type RawKV struct {
	Key, Value []byte
}

// RawScan returns every key and value of the snapshot in [lower, upper) in key
// order, whatever keyspace they belong to (nil bounds mean unbounded). Keys and
// values are fresh copies. A failure to read is yielded once, with an empty RawKV,
// and ends the scan. The iterator is closed however the loop ends.
func (s *Snapshot) RawScan(lower, upper []byte) iter.Seq2[RawKV, error] {
	return func(yield func(RawKV, error) bool) {
		it, err := s.newIter(lower, upper)
		if err != nil {
			yield(RawKV{}, err)
			return
		}
		defer it.Close()
		for ok := it.First(); ok; ok = it.Next() {
			if !yield(RawKV{Key: bytes.Clone(it.Key()), Value: bytes.Clone(it.Value())}, nil) {
				return
			}
		}
		if err := it.Error(); err != nil {
			yield(RawKV{}, err)
		}
	}
}

// RawWrite writes entries in one synced batch, bypassing the layout, the
// catalog and every invariant: each entry sets its key to its value, or deletes
// the key when the value is nil. It exists so tests can plant corrupt records;
// it takes a sealed.Key, so only this module's packages can call it. The DB's cached state (last transaction
// time, catalog, surrogate-key counters) is not updated, so reopen the store
// after raw writes. It waits for any write transaction to finish.
func (db *DB) RawWrite(_ sealed.Key, entries ...RawKV) error {
	writes := make([]engine.Write, len(entries))
	for i, e := range entries {
		if len(e.Key) == 0 {
			return fmt.Errorf("%w: raw write of an empty key", ErrInvalidUse)
		}
		writes[i] = engine.Write{Key: bytes.Clone(e.Key), Value: bytes.Clone(e.Value), Delete: e.Value == nil}
	}
	if err := db.lockWriter("RawWrite"); err != nil {
		return err
	}
	defer db.unlockWriter()
	db.mu.RLock()
	defer db.mu.RUnlock()
	if db.closed {
		return ErrClosed
	}
	if db.opts.ReadOnly {
		return ErrReadOnly
	}
	if err := db.commit(writes, true); err != nil {
		return fmt.Errorf("bitempo: raw write: %w", err)
	}
	return nil
}

// RawSet is RawWrite of one entry: it sets key to value, or deletes key when
// value is nil.
func (db *DB) RawSet(k sealed.Key, key, value []byte) error {
	return db.RawWrite(k, RawKV{Key: key, Value: value})
}
