package cli

import (
	"cmp"
	"sync"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
)

// This file adapts the query package's reads to the commands. Each opens one
// snapshot through query, so a command's output is one consistent view.

// keyHistory returns the versions of key overlapping [from, to) as known at tx
// (0: the latest commit), in valid order, decoding only the attributes in
// project (all when it is empty).
func keyHistory(db *store.DB, t *store.Table, key store.Key, from, to, tx int64, project []string) ([]store.Version, error) {
	var out []store.Version
	for v, err := range query.History(db, t.Name, key, from, to, query.HistoryOptions{Tx: tx, Project: project}) {
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// writeRangeHistory writes the versions of every key in keys overlapping
// [from, to) as known at tx (0: the latest commit), in key and valid order,
// with the layout of cols, reading each in place (query.HistoryRows): only the
// attributes cols prints are read, and no Version or attribute map is made per
// row. The header goes out with the first row, or after a read that found
// none, so that a read refused at its start (a transaction time before the
// horizon) prints nothing.
func writeRangeHistory(db *store.DB, t *store.Table, keys query.KeyRange, from, to, tx int64, cols *versionColumns, w rowWriter) error {
	attrs := newAttrColumns(t, cols.attrs)
	var v encoding.Value
	var err error
	headed := false
	_, readErr := query.HistoryRows(db, t.Name, keys, from, to, query.HistoryOptions{Tx: tx, Project: cols.attrs},
		func(r *store.Row) bool {
			if !headed {
				if err = w.header(cols.header()); err != nil {
					return false
				}
				headed = true
			}
			var cells []cell
			if cells, err = cols.rowCells(r, attrs, &v); err == nil {
				err = w.row(cells)
			}
			return err == nil
		})
	if err := cmp.Or(err, readErr); err != nil {
		return err
	}
	if !headed {
		if err := w.header(cols.header()); err != nil {
			return err
		}
	}
	return w.close()
}

// keyAudit returns every record of key, retired ones included, in transaction
// order, decoding only the attributes in project (all when it is empty).
func keyAudit(db *store.DB, t *store.Table, key store.Key, project []string) ([]store.Version, error) {
	var out []store.Version
	for v, err := range query.Audit(db, t.Name, key, query.AuditOptions{Project: project}) {
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// scanRows writes the version of every key in keys in effect at valid as
// known at tx (0: the latest commit), in key order, with the layout of cols,
// reading each in place (query.SnapshotRows): only the attributes cols prints
// are read, and no Version or attribute map is made per row.
func scanRows(db *store.DB, t *store.Table, keys query.KeyRange, valid, tx int64, cols *versionColumns, w rowWriter) error {
	attrs := newAttrColumns(t, cols.attrs)
	var v encoding.Value
	var err error
	scanErr := query.SnapshotRows(db, t.Name, query.AsOf{Valid: valid, Tx: tx}, keys, query.SnapshotOptions{Project: cols.attrs},
		func(r *store.Row) bool {
			var cells []cell
			if cells, err = cols.rowCells(r, attrs, &v); err == nil {
				err = w.row(cells)
			}
			return err == nil
		})
	return cmp.Or(err, scanErr)
}

// changeFeed calls fn for every record asserted or retired by the transactions
// in (since, until] (until 0: the latest commit), in commit order, reading
// each record in place (query.ChangesRows): the row is valid only during fn,
// and only the attributes in project are read (all when it is empty).
func changeFeed(db *store.DB, t *store.Table, since, until int64, project []string, fn func(c *query.ChangeRow) error) error {
	var err error
	feedErr := query.ChangesRows(db, t.Name, since, until, "", query.ChangesOptions{Project: project}, func(c *query.ChangeRow) bool {
		err = fn(c)
		return err == nil
	})
	return cmp.Or(err, feedErr)
}

// lookupFacts resolves every fact at its valid time as known at tx (0: the
// latest commit) with query.ResolveRows, which sorts the facts and merges them
// with the store in one pass, and lays out each fact's output row (its cells
// in, then the columns of attrs) as its answer comes, on the merge's
// goroutines. Misses come back with their reason; the command applies its
// --miss policy itself, so that it can name the fact's line. Only the
// attributes in project are decoded (all when it is empty).
func lookupFacts(db *store.DB, t *store.Table, facts []fact, tx int64, in *input, attrs *attrColumns, project []string) ([]resolved, error) {
	qf := make([]query.Fact, len(facts))
	for i, f := range facts {
		qf[i] = query.Fact{Key: f.Key, At: f.Valid, Tx: tx}
	}
	out := make([]resolved, len(facts))
	opts := query.ResolveOptions{Miss: query.MissNull, Attrs: true, Project: project}
	err := query.ResolveRows(db, t.Name, qf, opts, func(r *query.ResolvedRow) error {
		v := scratchValues.Get().(*encoding.Value)
		defer scratchValues.Put(v)
		cells, err := attrs.resolvedCells(in.rows[r.Index].vals, r, v)
		out[r.Index] = resolved{reason: r.Reason, cells: cells}
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// scratchValues hold the Value each call of a batch's callback reads an
// attribute into: the callbacks run on several goroutines at once, and a
// Value of their own would be an allocation per call.
var scratchValues = sync.Pool{New: func() any { return new(encoding.Value) }}
