package query

import (
	"bytes"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/store"
)

// KeyRange selects keys of a table; the zero value selects every key. Prefix
// selects the keys that start with its components (the leading key columns, or a
// whole key for exactly that key). Start and End bound the keys to [Start, End) in
// key order; each may be a whole key or leading components, and a partial End
// excludes every key that starts with it. Prefix and Start/End combine: a key must
// satisfy both.
//
// StringPrefix makes the last component of Prefix, when its column is a string
// or bytes column, match as a string prefix rather than whole: Prefix {"sku-1"}
// then selects sku-1, sku-10 and sku-1a, and Prefix {"eu", "sku-1"} the keys
// whose first component is exactly "eu" and whose second starts with "sku-1".
// It is still one range scan over the key encoding. An integer last component
// matches whole either way.
type KeyRange struct {
	Prefix       store.Key
	StringPrefix bool
	Start, End   store.Key
}

// Span encodes the range for table t as the store's scans take it, checking
// each bound against the table's key schema.
func (kr KeyRange) Span(t *store.Table) (store.Span, error) { return kr.span(t) }

// span encodes the range for table t, checking each bound against its key schema.
func (kr KeyRange) span(t *store.Table) (store.Span, error) {
	var sp store.Span
	if kr.Prefix != nil {
		appendPrefix := t.AppendKeyPrefix
		if kr.StringPrefix {
			appendPrefix = t.AppendKeyStringPrefix
		}
		p, err := appendPrefix(nil, kr.Prefix)
		if err != nil {
			return store.Span{}, err
		}
		sp = store.PrefixSpan(p)
	}
	if kr.Start != nil {
		start, err := t.AppendKeyPrefix(nil, kr.Start)
		if err != nil {
			return store.Span{}, err
		}
		if bytes.Compare(start, sp.Start) > 0 {
			sp.Start = start
		}
	}
	if kr.End != nil {
		end, err := t.AppendKeyPrefix(nil, kr.End)
		if err != nil {
			return store.Span{}, err
		}
		if sp.End == nil || bytes.Compare(end, sp.End) < 0 {
			sp.End = end
		}
	}
	return sp, nil
}

// keySpan is the span holding exactly key, after checking it is a whole key.
func keySpan(t *store.Table, key store.Key) (store.Span, error) {
	tuple, err := t.AppendKey(nil, key)
	if err != nil {
		return store.Span{}, err
	}
	return store.Span{Start: tuple, End: encoding.PrefixEnd(tuple)}, nil
}

// open acquires a snapshot of r and looks up table on it; release ends the
// snapshot (a no-op when r is itself a snapshot).
func open(r store.Reader, table string) (*store.Snapshot, *store.Table, func(), error) {
	s, release, err := r.AcquireSnapshot()
	if err != nil {
		return nil, nil, nil, err
	}
	t, err := s.Table(table)
	if err != nil {
		release()
		return nil, nil, nil, err
	}
	return s, t, release, nil
}

// openProjected is open with the table projected to names (project).
func openProjected(r store.Reader, table string, names []string) (*store.Snapshot, *store.Table, func(), error) {
	s, t, release, err := open(r, table)
	if err != nil {
		return nil, nil, nil, err
	}
	return s, project(s, t, names), release, nil
}

// rows passes the rows of a store scan on to a query's loop, stopping at the
// first error (which is the scan's last row) or when the loop ends. It reports
// whether the loop wants more.
func rows[T any](seq func(func(T, error) bool), yield func(T, error) bool) bool {
	for v, err := range seq {
		if !yield(v, err) || err != nil {
			return false
		}
	}
	return true
}

// project returns t projected to names (store.Snapshot.Project, which keeps
// the views it made per table, so a repeated list is not projected again) when
// names is not empty, else t: in the query options an empty list decodes
// everything.
func project(s *store.Snapshot, t *store.Table, names []string) *store.Table {
	if len(names) == 0 {
		return t
	}
	return s.Project(t, names)
}
