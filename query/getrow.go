package query

import "github.com/bitempo/bitempo/store"

// GetRow is Get read in place: it calls fn with the version of key in effect
// at at.Valid as known at at.Tx as a store.Row, whose attributes fn reads with
// the accessors a scan's rows have (store.AttrRef), and returns fn's error, or
// the error of a malformed record fn's reads of the row found. A miss is the
// *Miss Get returns, and fn is not called. The row is valid only until fn
// returns (Row.Version copies it out), and on a *store.Snapshot only until fn
// makes another point read (Get, GetRow) on the same snapshot. With opts.Project the row holds only
// the attributes named, as Get's version does.
//
// On a *store.Snapshot a read at the latest transaction time that finds a
// version allocates nothing: the snapshot refills one row for every GetRow
// (store.Snapshot.KeyRowAt). On a *store.DB each call takes a snapshot.
func GetRow(r store.Reader, table string, key store.Key, at AsOf, opts GetOptions, fn func(*store.Row) error) error {
	s, t, release, err := openProjected(r, table, opts.Project)
	if err != nil {
		return err
	}
	defer release()
	reason, err := s.KeyRowAt(t, key, at.Valid, resolveTx(s, at.Tx), fn)
	if err != nil {
		return err
	}
	if reason != store.Found {
		return newMiss(t, table, key, at, reason)
	}
	return nil
}
