package store

import (
	"iter"
	"slices"
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
		tk, err := s.newTableKeys(t, Span{})
		if err != nil {
			_ = tk.close()
			yield(Version{}, err)
			return
		}
		var recs []Version
		collect := func(v Version) bool { recs = append(recs, v); return true }
		for {
			ok, err := tk.next()
			if err == nil && ok {
				recs = recs[:0]
				err = s.keyRecords(t, tk.tuple, ksCurrent, collect)
				if err == nil {
					err = s.keyRecords(t, tk.tuple, ksHistory, collect)
				}
			}
			if err != nil {
				_ = tk.close()
				yield(Version{}, err)
				return
			}
			if !ok {
				break
			}
			slices.SortFunc(recs, func(a, b Version) int {
				if c := cmpInt(a.ValidFrom, b.ValidFrom); c != 0 {
					return c
				}
				return cmpInt(a.TxFrom, b.TxFrom)
			})
			for _, v := range recs {
				if !yield(v, nil) {
					_ = tk.close()
					return
				}
			}
		}
		if err := tk.close(); err != nil {
			yield(Version{}, err)
		}
	}
}
