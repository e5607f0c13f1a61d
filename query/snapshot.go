package query

import (
	"iter"

	"github.com/bitempo/bitempo/store"
)

// SnapshotOptions tune Snapshot. The zero value decodes every attribute.
type SnapshotOptions struct {
	// Project, when not empty, names the attributes to decode: each version's
	// Attrs holds only those of them it has, and the others are stepped over in
	// the stored record without being decoded. A name no version holds (or the
	// table never stored) is simply absent. Empty decodes every attribute.
	Project []string
}

// Snapshot yields, in key order, the version of every key of keys in effect at
// at.Valid as known at at.Tx: the table as it stood at that point of the
// bitemporal plane, one version per key. Keys with no version there are left out.
// It costs a seek or a few steps per key, whatever the keys' histories (at an old
// transaction time, a few seeks per key). The scan reads one consistent snapshot,
// so commits during the loop do not change what it returns, and it releases its
// iterators when the loop ends, early or not. With opts.Project it decodes only
// the attributes named.
func Snapshot(r store.Reader, table string, at AsOf, keys KeyRange, opts SnapshotOptions) iter.Seq2[store.Version, error] {
	return func(yield func(store.Version, error) bool) {
		s, t, release, err := openProjected(r, table, opts.Project)
		if err != nil {
			yield(store.Version{}, err)
			return
		}
		defer release()
		sp, err := keys.span(t)
		if err != nil {
			yield(store.Version{}, err)
			return
		}
		rows(s.ScanAt(t, sp, at.Valid, resolveTx(s, at.Tx)), yield)
	}
}

// SnapshotRows is Snapshot reading each version in place: it calls fn with
// the version of every key, in key order, as a store.Row that is the same
// every time and valid until fn returns (Row.Version copies one out), and
// stops when fn returns false. Read attributes with the Row's typed accessors
// and a store.AttrRef per attribute made before the scan, or with Row.Walk
// (projected by opts.Project). At the latest transaction time it allocates
// nothing per row; Snapshot is the same scan with every row copied out.
func SnapshotRows(r store.Reader, table string, at AsOf, keys KeyRange, opts SnapshotOptions, fn func(*store.Row) bool) error {
	s, t, release, err := openProjected(r, table, opts.Project)
	if err != nil {
		return err
	}
	defer release()
	sp, err := keys.span(t)
	if err != nil {
		return err
	}
	return s.ScanRowsAt(t, sp, at.Valid, resolveTx(s, at.Tx), fn)
}
