package main

import (
	"bytes"
	"slices"

	"github.com/bitempo/bitempo/encoding"

	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// commitVersions writes rows as versions (Put).
func (r *loadRun) commitVersions() error {
	var inserted, closed, unchanged int
	if r.grouped {
		r.groupByKey()
	}
	return r.commit(func(tx *txn.Tx, b batch) error {
		inserted, closed, unchanged = 0, 0, 0
		for i := b.lo; i < b.hi; i++ {
			if err := r.tick(tx, i); err != nil {
				return err
			}
			row := &r.rows[i]
			existing, err := tx.Versions(r.t.Name, row.key)
			if err != nil {
				return err
			}
			same := false
			for _, v := range existing {
				if v.ValidFrom < row.to && row.from < v.ValidTo {
					if v.ValidFrom == row.from && v.ValidTo == row.to && sameAttrs(v.Attrs, row.attrs) {
						same = true
					} else {
						closed++
					}
				}
			}
			if same {
				unchanged++
				continue
			}
			if err := tx.Put(r.t.Name, row.key, row.attrs, row.from, row.to); err != nil {
				return err
			}
			row.attrs = nil // the transaction holds its own copy
			inserted++
		}
		return nil
	}, func(c txn.Commit, b batch) {
		r.sum.add(c)
		r.sum.inserted += inserted
		r.sum.closed += closed
		r.sum.unchanged += unchanged
	})
}

// commitUpserts applies rows as SCD2 changes (Upsert, DeleteAt) in ascending
// --at order, file order breaking ties, so the result does not depend on how the
// file is sorted; a later row for the same key and time wins and is counted as a
// conflict when its attributes differ. A row is late when the key already has a
// version in effect after its time (it lands before or between versions of an
// earlier load); a periods table keeps versions, not events, so such a row only
// rewrites the interval up to the next change (see load --help).
func (r *loadRun) commitUpserts() error {
	rows := r.rows
	slices.SortStableFunc(rows, func(x, y loadRow) int { return cmpInt64(x.at, y.at) })
	type slot struct {
		tuple string
		at    int64
	}
	last := map[slot]*loadRow{}
	for i := range rows {
		s := slot{rows[i].tuple, rows[i].at}
		if prev, ok := last[s]; ok && (prev.del != rows[i].del || !sameAttrs(prev.attrs, rows[i].attrs)) {
			r.sum.conflicts++
		}
		last[s] = &rows[i]
	}
	if r.grouped {
		r.groupByKey() // stable: each key's rows stay in --at order
	}
	var counts [5]int // by txn.Outcome
	var closedByDelete, missedDelete, late int
	return r.commit(func(tx *txn.Tx, b batch) error {
		counts, closedByDelete, missedDelete, late = [5]int{}, 0, 0, 0
		for i := b.lo; i < b.hi; i++ {
			if err := r.tick(tx, i); err != nil {
				return err
			}
			row := &rows[i]
			v, miss, err := tx.Get(r.t.Name, row.key, row.at)
			if err != nil {
				return err
			}
			if (miss == store.Found && v.ValidTo != store.Infinity) || miss == store.InGap || miss == store.BeforeFirst {
				late++
			}
			if row.del {
				ok, err := tx.DeleteAt(r.t.Name, row.key, row.at)
				if err != nil {
					return err
				}
				if ok {
					closedByDelete++
				} else {
					missedDelete++
				}
				continue
			}
			o, err := tx.Upsert(r.t.Name, row.key, row.attrs, row.at)
			if err != nil {
				return err
			}
			row.attrs = nil // the transaction holds its own copy
			counts[o]++
		}
		return nil
	}, func(c txn.Commit, b batch) {
		r.sum.add(c)
		r.sum.inserted += counts[txn.Inserted] + counts[txn.Changed]
		r.sum.closed += counts[txn.Changed] + closedByDelete
		r.sum.unchanged += counts[txn.Unchanged] + missedDelete
		r.sum.noops += counts[txn.Unchanged]
		r.sum.overwritten += counts[txn.Overwritten]
		r.sum.merged += counts[txn.Merged]
		r.sum.late += late
	})
}

// add records a committed transaction.
func (s *loadSummary) add(c txn.Commit) {
	s.asserted += c.Asserted
	s.retired += c.Retired
	if c.Tx != 0 {
		s.txs = append(s.txs, c.Tx)
	}
}

// sameAttrs reports whether two attribute records encode to the same bytes, the
// store's own notion of identical.
func sameAttrs(x, y store.Attrs) bool {
	a, err1 := encoding.AppendAttrs(nil, x)
	b, err2 := encoding.AppendAttrs(nil, y)
	return err1 == nil && err2 == nil && bytes.Equal(a, b)
}
