package query

import (
	"fmt"
	"iter"

	"github.com/bitempo/bitempo/store"
)

// HistoryOptions tune History, HistoryRange and HistoryPage.
type HistoryOptions struct {
	// Tx is the transaction time the history is read at; Latest reads the newest
	// commit the reader sees. A cursor carries its own and overrides it.
	Tx int64
	// Clip trims each version's valid period to the requested [from, to).
	Clip bool
	// Limit stops after that many versions; 0 means no limit.
	Limit int
	// Cursor resumes after the version it names: the Next of a HistoryPage made
	// with the same arguments.
	Cursor string
	// Project, when not empty, names the attributes to decode (as
	// SnapshotOptions.Project): each version's Attrs holds only those of them
	// it has. Empty decodes every attribute.
	Project []string
	// RawAttrs returns each version's attributes still encoded
	// (store.Version.RawAttrs, read with store.RawAttrs.Walk, projected by
	// Project) instead of as a map, for a caller that decodes them itself, as
	// package typed decodes them into structs: no map is built. Attrs is then
	// nil, except for a retired record whose attributes are stored with its
	// successor, which comes back decoded in Attrs (its RawAttrs is zero).
	RawAttrs bool
}

// History yields the versions of key that overlap the valid period [from, to),
// in valid order, as known at opts.Tx. Use store.NegInfinity and store.Infinity
// for the whole timeline.
func History(r store.Reader, table string, key store.Key, from, to int64, opts HistoryOptions) iter.Seq2[store.Version, error] {
	return historySeq(r, table, func(t *store.Table) (store.Span, error) { return keySpan(t, key) }, from, to, opts)
}

// HistoryRange is History for every key of keys: their versions that overlap
// [from, to), ordered by key and then valid time.
func HistoryRange(r store.Reader, table string, keys KeyRange, from, to int64, opts HistoryOptions) iter.Seq2[store.Version, error] {
	return historySeq(r, table, keys.span, from, to, opts)
}

// historySeq is HistoryRange over the keys of the span spanOf returns, each
// row of historyRows copied out.
func historySeq(r store.Reader, table string, spanOf func(*store.Table) (store.Span, error), from, to int64, opts HistoryOptions) iter.Seq2[store.Version, error] {
	return copyRows(func(fn func(*store.Row) bool) error {
		_, err := historyRows(r, table, spanOf, from, to, opts, fn)
		return err
	}, (*store.Row).Version)
}

// HistoryPage returns up to opts.Limit versions of HistoryRange (all of them when
// Limit is 0) and, when more follow, the cursor that resumes after the last one.
// The first page pins the transaction time it reads at (the newest commit, for
// Latest) in its cursor, so later pages read the same history however many
// commits happen in between: a cursor resumes exactly after its row.
func HistoryPage(r store.Reader, table string, keys KeyRange, from, to int64, opts HistoryOptions) (Page[store.Version], error) {
	var page Page[store.Version]
	rows, err := collectRows(func(fn func(*store.Row) bool) (err error) {
		page.Next, err = HistoryRows(r, table, keys, from, to, opts, fn)
		return err
	}, (*store.Row).Version)
	if err != nil {
		return Page[store.Version]{}, err
	}
	page.Rows = rows
	return page, nil
}

// HistoryRows is HistoryRange reading each version in place: it calls fn
// with the versions of every key of keys that overlap [from, to), ordered by
// key and then valid time, as a store.Row that is the same every time and
// valid until fn returns (Row.Version copies one out, as HistoryRange would
// return it with the same options), and stops when fn returns false. Read
// attributes with the Row's typed accessors and a store.AttrRef per attribute
// made before the scan, or with Row.Walk (projected by opts.Project). A
// single key's history is the KeyRange whose Prefix is the whole key.
//
// It honours every option as HistoryPage does: Tx, Clip (the row's ValidFrom
// and ValidTo are trimmed before fn sees them), Project, Limit and Cursor.
// opts.Cursor resumes after the version it names (the next of a HistoryPage
// or HistoryRows call made with the same arguments); with opts.Limit, fn sees
// at most Limit rows and, when more follow, next is the cursor that resumes
// after the last of them, else it is empty (as it is when fn stops the
// scan). RawAttrs changes only what Row.Version returns. At the latest
// transaction time, and at an older one, it allocates nothing per row but
// for a retired record that shares its successor's attributes when the
// successor is not the current record of the same valid_from
// (store.Snapshot.ScanHistoryRows). History, HistoryRange and HistoryPage
// are this walk with each row copied out.
func HistoryRows(r store.Reader, table string, keys KeyRange, from, to int64, opts HistoryOptions, fn func(*store.Row) bool) (next string, err error) {
	c, err := historyRows(r, table, keys.span, from, to, opts, fn)
	if c == nil || err != nil {
		return "", err
	}
	return c.encode(), nil
}

// historyRows is HistoryRows over the keys of the span spanOf returns,
// returning the next page's cursor not yet encoded (nil when there is none): the
// one history read, which every other applies its options through.
func historyRows(r store.Reader, table string, spanOf func(*store.Table) (store.Span, error), from, to int64, opts HistoryOptions, fn func(*store.Row) bool) (next *cursor, err error) {
	h, err := startHistory(r, table, spanOf, from, to, opts)
	if err != nil {
		return nil, err
	}
	defer h.release()
	var last store.HistoryPos // the key and valid_from of the last row fn saw, unclipped
	each := func(row *store.Row) bool {
		if opts.Limit > 0 {
			last.Tuple, last.ValidFrom = append(last.Tuple[:0], row.Tuple()...), row.ValidFrom
		}
		h.clipPeriod(&row.ValidFrom, &row.ValidTo)
		return fn(row)
	}
	more := func() { next = h.cursor(last.Tuple, last.ValidFrom) }
	if err := h.s.ScanHistoryRows(h.t, h.span, h.tx, h.from, h.to, h.after, limitRows(opts.Limit, each, more)); err != nil {
		return nil, err
	}
	return next, nil
}

// historyRead is a history read ready to scan.
type historyRead struct {
	s        *store.Snapshot
	t        *store.Table
	release  func()
	span     store.Span
	tx       int64
	from, to int64
	after    *store.HistoryPos
	clipped  bool
}

func startHistory(r store.Reader, table string, spanOf func(*store.Table) (store.Span, error), from, to int64, opts HistoryOptions) (*historyRead, error) {
	if err := store.CheckPeriod(from, to); err != nil {
		return nil, err
	}
	s, t, release, err := open(r, table)
	if err != nil {
		return nil, err
	}
	t = project(s, t, opts.Project)
	if opts.RawAttrs {
		t = t.WithRawAttrs()
	}
	h := &historyRead{s: s, t: t, release: release, from: from, to: to, clipped: opts.Clip}
	// A time after the newest commit reads the same as the newest commit; pin that,
	// so that a cursor never sees commits made after its first page.
	h.tx = min(resolveTx(s, opts.Tx), s.LastTx())
	if opts.Cursor != "" {
		c, err := decodeCursor(opts.Cursor, cursorHistory, t)
		if err == nil && opts.Tx != Latest && opts.Tx != c.tx {
			err = fmt.Errorf("%w: made for transaction time %d, not %d", ErrBadCursor, c.tx, opts.Tx)
		}
		if err != nil {
			release()
			return nil, err
		}
		h.tx, h.after = c.tx, &store.HistoryPos{Tuple: c.tuple, ValidFrom: c.validFrom}
	}
	if h.span, err = spanOf(t); err != nil {
		release()
		return nil, err
	}
	return h, nil
}

// cursor returns the cursor that resumes the read after the version of the
// key encoded as tuple that starts at validFrom.
func (h *historyRead) cursor(tuple []byte, validFrom int64) *cursor {
	return &cursor{kind: cursorHistory, table: h.t.ID, tx: h.tx, validFrom: validFrom, tuple: tuple}
}

// clipPeriod trims the valid period [from, to) to the read's when the
// options ask for it.
func (h *historyRead) clipPeriod(from, to *int64) {
	if h.clipped {
		*from, *to = max(*from, h.from), min(*to, h.to)
	}
}
