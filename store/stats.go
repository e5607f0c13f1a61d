package store

import (
	"bytes"
	"errors"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/layout"
)

// TableStats counts what a table holds, for tools and monitoring.
type TableStats struct {
	// Keys is the number of natural keys with at least one record, current or retired.
	Keys int64
	// Versions is the number of current records (the table's state now).
	Versions int64
	// Records is the number of records ever asserted: Versions plus Retired.
	Records int64
	// Retired is the number of records retired by a later transaction.
	Retired int64
	// Events is the number of CDC events kept for a changes table.
	Events int64
	// Batches is the number of batch ids applied to a changes table.
	Batches int64
}

// TableStats counts the keys, records and events of table t in the snapshot, with
// one pass over each of the table's keyspaces.
func (s *Snapshot) TableStats(t *Table) (TableStats, error) {
	var st TableStats
	if s.closed {
		return st, ErrClosed
	}
	current, err := s.countRecords(t, layout.Current, &st.Versions)
	if err != nil {
		return st, err
	}
	history, err := s.countRecords(t, layout.History, &st.Retired)
	if err != nil {
		return st, err
	}
	st.Records = st.Versions + st.Retired
	st.Keys = unionSize(current, history)
	if st.Events, err = s.countKeys(layout.Events, t.ID); err != nil {
		return st, err
	}
	st.Batches, err = s.countKeys(layout.Batches, t.ID)
	return st, err
}

// countRecords counts the records of t in keyspace ks and returns the distinct
// tuples, in key order.
func (s *Snapshot) countRecords(t *Table, ks byte, n *int64) ([][]byte, error) {
	prefix := layout.AppendTablePrefix(nil, ks, t.ID)
	it, err := s.newIter(prefix, encoding.PrefixEnd(prefix))
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var tuples [][]byte
	for ok := it.First(); ok; ok = it.Next() {
		*n++
		tuple, _, err := t.splitTuple(it.Key()[len(prefix):])
		if err != nil {
			return nil, err
		}
		if len(tuples) == 0 || !bytes.Equal(tuples[len(tuples)-1], tuple) {
			tuples = append(tuples, bytes.Clone(tuple))
		}
	}
	return tuples, it.Error()
}

func (s *Snapshot) countKeys(ks byte, tid uint32) (int64, error) {
	prefix := layout.AppendTablePrefix(nil, ks, tid)
	it, err := s.newIter(prefix, encoding.PrefixEnd(prefix))
	if err != nil {
		return 0, err
	}
	defer it.Close()
	var n int64
	for ok := it.First(); ok; ok = it.Next() {
		n++
	}
	return n, it.Error()
}

// unionSize returns the size of the union of two sorted lists of distinct tuples.
func unionSize(a, b [][]byte) int64 {
	n := int64(len(a) + len(b))
	for i, j := 0, 0; i < len(a) && j < len(b); {
		switch c := bytes.Compare(a[i], b[j]); {
		case c == 0:
			n--
			i++
			j++
		case c < 0:
			i++
		default:
			j++
		}
	}
	return n
}

// KeyspaceStats is what one keyspace holds: its entries and their logical bytes
// (keys plus values, as written, before compression).
type KeyspaceStats struct {
	Prefix     byte
	Name       string
	Entries    int64
	KeyBytes   int64
	ValueBytes int64
}

// KeyspaceStats counts the entries and logical bytes of every keyspace of the
// store (layout.Keyspaces order) with one pass over the snapshot: the measure of what
// the layout costs per version, whatever the engine's compression.
func (s *Snapshot) KeyspaceStats() ([]KeyspaceStats, error) {
	if s.closed {
		return nil, ErrClosed
	}
	table := layout.KeyspaceTable()
	out := make([]KeyspaceStats, len(table))
	for i, ks := range table {
		out[i] = KeyspaceStats{Prefix: ks.Prefix, Name: ks.Name}
		it, err := s.newIter([]byte{ks.Prefix}, []byte{ks.Prefix + 1})
		if err != nil {
			return nil, err
		}
		for ok := it.First(); ok; ok = it.Next() {
			out[i].Entries++
			out[i].KeyBytes += int64(len(it.Key()))
			out[i].ValueBytes += int64(len(it.Value()))
		}
		if err := errors.Join(it.Error(), it.Close()); err != nil {
			return nil, err
		}
	}
	return out, nil
}
