package query

import (
	"fmt"
	"iter"

	"github.com/bitempo/bitempo/store"
)

// Op says what a change did to a record.
type Op uint8

// Change operations.
const (
	// Asserted: the transaction made the record part of the table.
	Asserted Op = iota + 1
	// Retired: the transaction removed the record (replaced, shortened, split or
	// deleted its version); the record stays readable at older transaction times.
	Retired
	// Erased: the transaction erased a key of the table (txn.Tx.Erase); the
	// change's Erasure says what the log keeps of it, and its Version is zero.
	// Every earlier change of that key has left the feed.
	Erased
)

func (o Op) String() string {
	switch o {
	case Asserted:
		return "asserted"
	case Retired:
		return "retired"
	case Erased:
		return "erased"
	}
	return fmt.Sprintf("Op(%d)", uint8(o))
}

// Change is one entry of a table's change feed: transaction Tx asserted or retired
// the record Version.
type Change struct {
	Tx      int64
	Op      Op
	Version store.Version
	// Erasure is set when Op is Erased.
	Erasure *store.Erasure

	table   uint32
	ordinal uint32
}

// Cursor returns the cursor that resumes a change feed right after this change.
func (c Change) Cursor() string {
	return changeCursor(c.table, c.Tx, c.ordinal)
}

// changeCursor returns the cursor that resumes the change feed of table tid
// right after the change at ordinal of transaction tx.
func changeCursor(tid uint32, tx int64, ordinal uint32) string {
	return cursor{kind: cursorChanges, table: tid, tx: tx, ordinal: ordinal}.encode()
}

// ChangesOptions tune Changes and ChangesPage. The zero value decodes every
// attribute.
type ChangesOptions struct {
	// Project, when not empty, names the attributes to decode (as
	// SnapshotOptions.Project): each change's Version.Attrs holds only those
	// of them it has. Empty decodes every attribute.
	Project []string
}

// Changes yields every record of table asserted or retired by a transaction in
// the window (since, until], in transaction order (and commit order within a
// transaction); until Latest reads to the newest commit. A non-empty cursor (a
// Change's Cursor or a page's Next) resumes right after the change it names,
// within the same window; positions never move, so a consumer that keeps the
// cursor of the last change it processed can poll Changes(since, Latest, cursor)
// for ever and sees every change once. The feed is read as known at until: a
// record retired after until shows TxTo store.Infinity, so a window reads the
// same whenever it is read.
//
// It is how facts resolved at load time are kept correct. Facts store the
// surrogate key they resolved to; after a load at transaction time L, the changes
// in (L, now] name every record a later correction retired or asserted. A fact
// that resolved to the sk of a Retired change, or whose key and valid time fall in
// the valid period of a changed record of its key, may resolve differently now:
// resolve those facts again (Resolve, at Latest) and store the new sk. Facts
// outside those periods keep their sk (a surviving or shortened version keeps
// its surrogate key), so the re-resolution touches only what the corrections
// touched.
//
// With opts.Project it decodes only the attributes named.
func Changes(r store.Reader, table string, since, until int64, cur string, opts ChangesOptions) iter.Seq2[Change, error] {
	return copyRows(func(fn func(*ChangeRow) bool) error {
		return ChangesRows(r, table, since, until, cur, opts, fn)
	}, (*ChangeRow).change)
}

// ChangeRow is one entry of a change feed read in place: transaction Tx
// asserted or retired the record Row, or (Op Erased) erased a key, which
// Erasure describes. ChangesRows hands out the same ChangeRow, and the same
// Row, for every change, valid until its callback returns.
type ChangeRow struct {
	Tx int64
	Op Op
	// Row is the record, read in place as store.Row reads it (Row.Version
	// copies it out as Changes returns it); nil when Op is Erased. A record
	// retired after the feed's until shows TxTo store.Infinity.
	Row *store.Row
	// Erasure is set when Op is Erased.
	Erasure *store.Erasure

	table   uint32
	ordinal uint32
}

// Cursor returns the cursor that resumes a change feed right after this
// change, as Change.Cursor does.
func (c *ChangeRow) Cursor() string {
	return changeCursor(c.table, c.Tx, c.ordinal)
}

// change copies c out as Changes returns it.
func (c *ChangeRow) change() (Change, error) {
	change := Change{Tx: c.Tx, Op: c.Op, Erasure: c.Erasure, table: c.table, ordinal: c.ordinal}
	if c.Row != nil {
		v, err := c.Row.Version()
		if err != nil {
			return Change{}, err
		}
		change.Version = v
	}
	return change, nil
}

// ChangesRows is Changes reading each record in place: it calls fn with
// every change of the window (since, until], after cur when it is not empty,
// in transaction order, as a ChangeRow whose Row is the same every time and
// valid until fn returns, and stops when fn returns false. Read attributes
// with the Row's typed accessors and a store.AttrRef per attribute made
// before the feed, or with Row.Walk (projected by opts.Project). A change's
// Cursor resumes the feed right after it, in ChangesRows or Changes alike;
// there is no page size, since fn stops the feed where it wants. It
// allocates nothing per change but for an erasure and for a retired record
// that shares its successor's attributes when the successor is not the
// current record of the same valid_from (store.Snapshot.TxLogRows); Changes
// is the same feed with every row copied out.
func ChangesRows(r store.Reader, table string, since, until int64, cur string, opts ChangesOptions, fn func(*ChangeRow) bool) error {
	f, err := startFeed(r, table, since, until, cur, opts)
	if err != nil {
		return err
	}
	defer f.release()
	return f.rows(fn)
}

// ChangesPage returns up to limit changes of Changes (all of them when limit is
// 0) and, when more follow, the cursor that resumes after the last one.
func ChangesPage(r store.Reader, table string, since, until int64, limit int, cur string, opts ChangesOptions) (Page[Change], error) {
	more := false
	rows, err := collectRows(func(fn func(*ChangeRow) bool) error {
		return ChangesRows(r, table, since, until, cur, opts, limitRows(limit, fn, func() { more = true }))
	}, (*ChangeRow).change)
	if err != nil {
		return Page[Change]{}, err
	}
	page := Page[Change]{Rows: rows}
	if more {
		page.Next = rows[len(rows)-1].Cursor()
	}
	return page, nil
}

// feed is a change-feed read ready to scan.
type feed struct {
	s       *store.Snapshot
	t       *store.Table
	release func()
	from    store.LogPos
	until   int64
	empty   bool
}

func startFeed(r store.Reader, table string, since, until int64, cur string, opts ChangesOptions) (*feed, error) {
	s, t, release, err := open(r, table)
	if err != nil {
		return nil, err
	}
	t = project(s, t, opts.Project)
	f := &feed{s: s, t: t, release: release, until: min(resolveTx(s, until), s.LastTx())}
	f.empty = since >= f.until
	if !f.empty {
		f.from = store.LogPos{Tx: since + 1}
	}
	if cur != "" {
		c, err := decodeCursor(cur, cursorChanges, t)
		if err != nil {
			release()
			return nil, err
		}
		if next := (store.LogPos{Tx: c.tx, Ordinal: c.ordinal}).Next(); next.Tx > f.from.Tx ||
			(next.Tx == f.from.Tx && next.Ordinal > f.from.Ordinal) {
			f.from = next
		}
	}
	return f, nil
}

// rows calls fn with each change of the feed.
func (f *feed) rows(fn func(*ChangeRow) bool) error {
	if f.empty {
		return nil
	}
	c := &ChangeRow{table: f.t.ID}
	return f.s.TxLogRows(f.t, f.from, f.until, func(pos store.LogPos, op store.LogOp, row *store.Row, e *store.Erasure) bool {
		if row != nil && row.TxTo > f.until {
			row.TxTo = store.Infinity
		}
		c.Tx, c.Row, c.Erasure, c.ordinal = pos.Tx, row, e, pos.Ordinal
		switch op {
		case store.LogRetire:
			c.Op = Retired
		case store.LogErase:
			c.Op = Erased
		default:
			c.Op = Asserted
		}
		return fn(c)
	})
}
