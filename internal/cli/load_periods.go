package cli

import (
	"bytes"
	"cmp"
	"slices"

	"github.com/bitempo/bitempo/encoding"

	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// commitVersions writes rows as versions (Put).
func (r *loadRun) commitVersions() error {
	if r.grouped {
		r.groupByKey()
	}
	return r.commitVersionRows()
}

// commitVersionRows commits r.rows as versions, in order (r.commit).
func (r *loadRun) commitVersionRows() error {
	return commitRows(r, r.putVersion, (*versionCounts).addTo)
}

// commitRows commits r.rows in order (r.commit), writing each row with write,
// which counts its outcome in the batch's counts C; add adds them to the
// load's summary once the batch commits.
func commitRows[C any](r *loadRun, write func(*txn.Tx, *loadRow, *C) error, add func(*C, *loadSummary, txn.Commit)) error {
	var c C
	return r.commit(func(tx *txn.Tx, b batch) error {
		var zero C
		c = zero
		for i := b.lo; i < b.hi; i++ {
			if err := r.tick(tx, i); err != nil {
				return err
			}
			if err := write(tx, &r.rows[i], &c); err != nil {
				return err
			}
		}
		return nil
	}, func(cm txn.Commit, b batch) { add(&c, r.sum, cm) })
}

// versionCounts counts the outcomes of a versions load's rows.
type versionCounts struct{ inserted, closed, unchanged int }

func (c *versionCounts) addTo(s *loadSummary, cm txn.Commit) {
	s.add(cm)
	s.inserted += c.inserted
	s.closed += c.closed
	s.unchanged += c.unchanged
}

// putVersion writes one row as a version, unless the key holds that very
// version already.
func (r *loadRun) putVersion(tx *txn.Tx, row *loadRow, c *versionCounts) error {
	existing, err := tx.Versions(r.t.Name, row.key)
	if err != nil {
		return err
	}
	same, closed := false, 0
	for _, v := range existing {
		if v.ValidFrom < row.to && row.from < v.ValidTo {
			if v.ValidFrom == row.from && v.ValidTo == row.to && sameAttrs(v.Attrs, row.attrs) {
				same = true
			} else {
				closed++
			}
		}
	}
	c.closed += closed
	if same {
		c.unchanged++
		return nil
	}
	if err := tx.Put(r.t.Name, row.key, row.attrs, row.from, row.to); err != nil {
		return err
	}
	row.attrs = nil // the transaction holds its own copy
	c.inserted++
	return nil
}

// commitUpserts applies rows as SCD2 changes (Upsert, DeleteAt) in ascending
// --at order, so the result does not depend on how the file is sorted. Of the
// rows for one key and time, the last in the file wins and is the only one
// applied (lastPerTime), so a file loads the same way every time and loading it
// again changes nothing; a superseded row whose attributes differ is counted as
// a conflict. A row is late when the key already has a
// version in effect after its time (it lands before or between versions of an
// earlier load); a periods table keeps versions, not events, so such a row only
// rewrites the interval up to the next change (see load --help).
func (r *loadRun) commitUpserts() error {
	rows := r.rows
	slices.SortStableFunc(rows, func(x, y loadRow) int { return cmp.Compare(x.at, y.at) })
	type slot struct {
		tuple string
		at    int64
	}
	last := map[slot]*loadRow{}
	for i := range rows {
		s := slot{rows[i].tuple, rows[i].at}
		if prev, ok := last[s]; ok && conflicting(prev, &rows[i]) {
			r.sum.conflicts++
		}
		last[s] = &rows[i]
	}
	kept := rows[:0]
	for i := range rows {
		if last[slot{rows[i].tuple, rows[i].at}] == &rows[i] {
			kept = append(kept, rows[i])
		}
	}
	r.rows = kept
	if r.grouped {
		r.groupByKey() // stable: each key's rows stay in --at order
	}
	return r.commitUpsertRows()
}

// commitUpsertRows commits r.rows as SCD2 changes, in order (r.commit).
func (r *loadRun) commitUpsertRows() error {
	return commitRows(r, r.upsert, (*upsertCounts).addTo)
}

// lastPerTime keeps, of one key's rows sorted by --at (file order breaking
// ties), the last row of each time: the within-load rule that the last row for
// a key and time wins.
func lastPerTime(group []loadRow) []loadRow {
	kept := group[:0]
	for i := range group {
		if i+1 == len(group) || group[i+1].at != group[i].at {
			kept = append(kept, group[i])
		}
	}
	return kept
}

// conflicting reports whether two rows of one key and time disagree.
func conflicting(x, y *loadRow) bool {
	return x.del != y.del || !sameAttrs(x.attrs, y.attrs)
}

// upsertCounts counts the outcomes of a changes load's rows.
type upsertCounts struct {
	outcomes                           [5]int // by txn.Outcome
	closedByDelete, missedDelete, late int
}

func (c *upsertCounts) addTo(s *loadSummary, cm txn.Commit) {
	s.add(cm)
	s.inserted += c.outcomes[txn.Inserted] + c.outcomes[txn.Changed]
	s.closed += c.outcomes[txn.Changed] + c.closedByDelete
	s.unchanged += c.outcomes[txn.Unchanged] + c.missedDelete
	s.noops += c.outcomes[txn.Unchanged]
	s.overwritten += c.outcomes[txn.Overwritten]
	s.merged += c.outcomes[txn.Merged]
	s.late += c.late
}

// upsert applies one row as an SCD2 change.
func (r *loadRun) upsert(tx *txn.Tx, row *loadRow, c *upsertCounts) error {
	v, miss, err := tx.Get(r.t.Name, row.key, row.at)
	if err != nil {
		return err
	}
	if (miss == store.Found && v.ValidTo != store.Infinity) || miss == store.InGap || miss == store.BeforeFirst {
		c.late++
	}
	if row.del {
		ok, err := tx.DeleteAt(r.t.Name, row.key, row.at)
		if err != nil {
			return err
		}
		if ok {
			c.closedByDelete++
		} else {
			c.missedDelete++
		}
		return nil
	}
	o, err := tx.Upsert(r.t.Name, row.key, row.attrs, row.at)
	if err != nil {
		return err
	}
	row.attrs = nil // the transaction holds its own copy
	c.outcomes[o]++
	return nil
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
