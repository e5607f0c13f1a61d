package store

import (
	"bytes"
	"fmt"
	"iter"
)

// This file is a low-level door into the key-value layer, for tests and tools
// only: a raw dump of a snapshot (byte-for-byte comparisons, debugging dumps) and
// a raw write that bypasses the layout (fuzzing the decoders with corrupt stores,
// repair tools). Nothing in the library's read or write paths uses it.

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

// RawSet writes value under key (or deletes key when value is nil) in one synced
// batch, bypassing the layout, the catalog and every invariant. It exists so tests
// can plant corrupt records and tools can repair a store by hand; the DB's cached
// state (last transaction time, catalog, surrogate-key counters) is not updated,
// so reopen the store after raw writes. It waits for any write transaction.
func (db *DB) RawSet(key, value []byte) error {
	if len(key) == 0 {
		return fmt.Errorf("bitempo: raw write of an empty key")
	}
	db.writer.Lock()
	defer db.writer.Unlock()
	db.mu.RLock()
	defer db.mu.RUnlock()
	if db.closed {
		return ErrClosed
	}
	if db.opts.ReadOnly {
		return ErrReadOnly
	}
	w := kvWrite{key: bytes.Clone(key), value: bytes.Clone(value), del: value == nil}
	if err := db.engine.commit([]kvWrite{w}, true); err != nil {
		return fmt.Errorf("bitempo: raw write: %w", err)
	}
	return nil
}
