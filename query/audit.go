package query

import (
	"iter"

	"github.com/bitempo/bitempo/store"
)

// AuditOptions tune Audit. The zero value decodes every attribute.
type AuditOptions struct {
	// Project, when not empty, names the attributes to decode (as
	// SnapshotOptions.Project): each record's Attrs holds only those of them
	// it has. Empty decodes every attribute.
	Project []string
	// RawAttrs returns each record's attributes still encoded, as
	// HistoryOptions.RawAttrs does.
	RawAttrs bool
}

// Audit yields every record of key, current and retired, in transaction order
// (by TxFrom, then ValidFrom): what the table believed about the key, and when. A
// record's TxFrom is the transaction that asserted it and its TxTo the one that
// retired it (store.Infinity while it is current); a retired record shows the
// belief the retiring transaction corrected, and its successors are the records
// asserted by that same transaction. With opts.Project it decodes only the
// attributes named; with opts.RawAttrs it leaves them encoded.
func Audit(r store.Reader, table string, key store.Key, opts AuditOptions) iter.Seq2[store.Version, error] {
	return func(yield func(store.Version, error) bool) {
		s, t, release, err := openProjected(r, table, opts.Project)
		if err != nil {
			yield(store.Version{}, err)
			return
		}
		defer release()
		if opts.RawAttrs {
			t = t.WithRawAttrs()
		}
		tuple, err := t.AppendKey(nil, key)
		if err != nil {
			yield(store.Version{}, err)
			return
		}
		records, err := s.KeyRecords(t, tuple)
		if err != nil {
			yield(store.Version{}, err)
			return
		}
		for _, v := range records {
			if !yield(v, nil) {
				return
			}
		}
	}
}
