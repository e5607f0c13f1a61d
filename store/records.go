package store

import (
	"cmp"
	"fmt"
	"iter"
	"slices"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/layout"
)

// Records yields every record of table t, current and retired, for exports and
// copies of a table's whole bitemporal history: in key order, and within a key
// by valid_from, then tx_from. It holds one key's records in memory at a time
// (to order them), so memory is bounded by the longest history of one key, not
// by the table.
func (s *Snapshot) Records(t *Table) iter.Seq2[Version, error] {
	return func(yield func(Version, error) bool) {
		if s.closed {
			yield(Version{}, ErrClosed)
			return
		}
		var recs []Version
		stopped := false
		err := s.eachTableKey(t, Span{}, func(tuple []byte) (bool, error) {
			var err error
			if recs, err = s.appendKeyRecords(recs[:0], t, tuple); err != nil {
				return false, err
			}
			slices.SortFunc(recs, func(a, b Version) int {
				if c := cmp.Compare(a.ValidFrom, b.ValidFrom); c != 0 {
					return c
				}
				return cmp.Compare(a.TxFrom, b.TxFrom)
			})
			for _, v := range recs {
				if !yield(v, nil) {
					stopped = true
					return false, nil
				}
			}
			return true, nil
		})
		if err != nil && !stopped {
			yield(Version{}, err)
		}
	}
}

// KeyedEvent is an event of a changes table's log with the key it belongs to.
type KeyedEvent struct {
	Key Key
	LogEvent
}

// Events yields every event of changes table t's log, in key order and then
// (At, Seq) order, streaming.
func (s *Snapshot) Events(t *Table) iter.Seq2[KeyedEvent, error] {
	return func(yield func(KeyedEvent, error) bool) {
		s.scanKeyed(t, layout.Events, func(key Key, tuple, suffix, value []byte) bool {
			e, err := decodeEvent(t, suffix, value)
			return yield(KeyedEvent{Key: key, LogEvent: e}, err) && err == nil
		}, func(err error) { yield(KeyedEvent{}, err) })
	}
}

// KeyedCheckpoint is the checkpoint of one key of a changes table.
type KeyedCheckpoint struct {
	Key Key
	Checkpoint
}

// Checkpoints yields the checkpoint of every key of changes table t whose event
// log was compacted, in key order, streaming.
func (s *Snapshot) Checkpoints(t *Table) iter.Seq2[KeyedCheckpoint, error] {
	return func(yield func(KeyedCheckpoint, error) bool) {
		s.scanKeyed(t, layout.Checkpoints, func(key Key, tuple, suffix, value []byte) bool {
			c, err := decodeCheckpointValue(value)
			if err == nil && len(suffix) != 0 {
				err = fmt.Errorf("%w: table %q checkpoint key has %d trailing bytes", ErrCorrupt, t.Name, len(suffix))
			}
			return yield(KeyedCheckpoint{Key: key, Checkpoint: c}, err) && err == nil
		}, func(err error) { yield(KeyedCheckpoint{}, err) })
	}
}

// scanKeyed walks keyspace ks of table t, whose keys are ks | tid | tuple |
// suffix, calling fn with each entry's decoded key until it returns false; a
// failure goes to fail.
func (s *Snapshot) scanKeyed(t *Table, ks byte, fn func(key Key, tuple, suffix, value []byte) bool, fail func(error)) {
	if s.closed {
		fail(ErrClosed)
		return
	}
	prefix := layout.AppendTablePrefix(nil, ks, t.ID)
	it, err := s.newIter(prefix, encoding.PrefixEnd(prefix))
	if err != nil {
		fail(err)
		return
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		tuple, suffix, err := t.splitTuple(it.Key()[len(prefix):])
		var key Key
		if err == nil {
			key, err = t.DecodeKey(tuple)
		}
		if err != nil {
			fail(err)
			return
		}
		if !fn(key, tuple, suffix, it.Value()) {
			return
		}
	}
	if err := it.Error(); err != nil {
		fail(err)
	}
}

// NextSK returns the next surrogate key table t would hand out, as of the
// snapshot (exports carry it, so a rebuilt store never reuses a surrogate key).
func (s *Snapshot) NextSK(t *Table) uint64 { return s.db.nextSKCommitted(s, t.ID) }
