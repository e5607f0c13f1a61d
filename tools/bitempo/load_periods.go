package main

import (
	"bytes"
	"slices"

	"github.com/bitempo/bitempo/encoding"

	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// commitVersions writes rows as versions (Put), one transaction per batch.
func (a *app) commitVersions(db *store.DB, t *store.Table, rows []loadRow, size int, sum *loadSummary) error {
	bar := a.newProgress("loading "+t.Name, len(rows))
	defer bar.finish()
	for _, b := range batches(len(rows), size) {
		var inserted, closed, unchanged int
		c, err := txn.Update(db, func(tx *txn.Tx) error {
			inserted, closed, unchanged = 0, 0, 0
			for i := b[0]; i < b[1]; i++ {
				r := &rows[i]
				existing, err := tx.Versions(t.Name, r.key)
				if err != nil {
					return err
				}
				same := false
				for _, v := range existing {
					if v.ValidFrom < r.to && r.from < v.ValidTo {
						if v.ValidFrom == r.from && v.ValidTo == r.to && sameAttrs(v.Attrs, r.attrs) {
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
				if err := tx.Put(t.Name, r.key, r.attrs, r.from, r.to); err != nil {
					return err
				}
				inserted++
			}
			return nil
		})
		if err != nil {
			return midwayError(t.Name, sum, len(rows), err)
		}
		sum.add(c, b[1]-b[0])
		sum.inserted += inserted
		sum.closed += closed
		sum.unchanged += unchanged
		bar.add(b[1] - b[0])
	}
	return nil
}

// commitUpserts applies rows as SCD2 changes (Upsert, DeleteAt) in ascending
// --at order, file order breaking ties, so the result does not depend on how the
// file is sorted; a later row for the same key and time wins and is counted as a
// conflict when its attributes differ.
func (a *app) commitUpserts(db *store.DB, t *store.Table, rows []loadRow, size int, sum *loadSummary) error {
	slices.SortStableFunc(rows, func(x, y loadRow) int { return cmpInt64(x.at, y.at) })
	type slot struct {
		tuple string
		at    int64
	}
	last := map[slot]*loadRow{}
	for i := range rows {
		s := slot{rows[i].tuple, rows[i].at}
		if prev, ok := last[s]; ok && (prev.del != rows[i].del || !sameAttrs(prev.attrs, rows[i].attrs)) {
			sum.conflicts++
		}
		last[s] = &rows[i]
	}
	bar := a.newProgress("loading "+t.Name, len(rows))
	defer bar.finish()
	for _, b := range batches(len(rows), size) {
		var counts [5]int // by txn.Outcome
		var closedByDelete, missedDelete int
		c, err := txn.Update(db, func(tx *txn.Tx) error {
			counts, closedByDelete, missedDelete = [5]int{}, 0, 0
			for i := b[0]; i < b[1]; i++ {
				r := &rows[i]
				if r.del {
					ok, err := tx.DeleteAt(t.Name, r.key, r.at)
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
				o, err := tx.Upsert(t.Name, r.key, r.attrs, r.at)
				if err != nil {
					return err
				}
				counts[o]++
			}
			return nil
		})
		if err != nil {
			return midwayError(t.Name, sum, len(rows), err)
		}
		sum.add(c, b[1]-b[0])
		sum.inserted += counts[txn.Inserted] + counts[txn.Changed]
		sum.closed += counts[txn.Changed] + closedByDelete
		sum.unchanged += counts[txn.Unchanged] + missedDelete
		sum.overwritten += counts[txn.Overwritten]
		sum.merged += counts[txn.Merged]
		bar.add(b[1] - b[0])
	}
	return nil
}

// add records a committed transaction.
func (s *loadSummary) add(c txn.Commit, rows int) {
	s.committedRows += rows
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
