// Package randstore writes random bitemporal histories into a table for the
// tests of several packages: commits of random upserts, bounded and
// open-ended puts, corrections of one valid period, deletes of a span or from
// a time on, and placeholders, so that keys have gaps, SCD2 closes,
// corrections at past transaction times and deletes. A test says what it
// draws (the table's keys and attributes, the mix of operations, the valid
// times) and compares its reads against whatever it holds for truth; Write
// checks the store with store.Verify after the writes. Only tests import it.
//
// It is a package of its own, not part of testutil, because it writes through
// txn: testutil must stay importable by the internal tests of txn.
package randstore

import (
	"fmt"

	"github.com/bitempo/bitempo/internal/testutil"
	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// Rand is where Write draws the shape of a history from: a *rand.Rand of a
// seeded test, or a property test's draws (which it can then shrink).
type Rand interface {
	IntN(n int) int
	Int64N(n int64) int64
}

// Op is one kind of write a History draws.
type Op uint8

const (
	// Upsert writes attributes from valid_from on (txn.Tx.Upsert): an SCD2
	// close of the version before it.
	Upsert Op = iota
	// Reupsert upserts the same attributes at valid_from and one unit
	// later: an SCD2 close whose retired record shares its successor's
	// attributes.
	Reupsert
	// Put writes attributes over [from, from+length) (txn.Tx.Put), length
	// drawn from 1 to History.PutLen units, or to store.Infinity (see
	// History.Open).
	Put
	// Correct puts attributes over History.Correction again and again: a
	// correction of one valid period at every later transaction time.
	Correct
	// Delete deletes [from, from+length) (txn.Tx.Delete), length drawn from 1
	// to History.DeleteLen units, or to store.Infinity (see History.Open): a
	// gap.
	Delete
	// DeleteAt deletes from valid_from on (txn.Tx.DeleteAt).
	DeleteAt
	// Inferred inserts a placeholder (txn.Tx.InsertInferred) of the key
	// History.InferredKey returns, while it returns one.
	Inferred
)

// History says what Write draws: Commits transactions of MinOps (1 if zero)
// to MaxOps writes each, every write an operation of Ops (drawn uniformly, so
// an operation listed twice comes twice as often) on the key Key draws, from
// a valid time drawn in [0, Valid) units.
type History struct {
	Table          string
	Commits        int
	MinOps, MaxOps int
	Ops            []Op
	// Key draws the key of a write in commit number commit (from 0).
	Key func(commit int) store.Key
	// Attrs draws the attributes of an Upsert, Reupsert, Put or Correct.
	Attrs func() store.Attrs
	// Valid bounds the valid_from of a write, in units; Unit is the length
	// of a unit of valid time (1 if zero).
	Valid, Unit int64
	// PutLen and DeleteLen bound the length of a Put and a Delete, in units.
	PutLen, DeleteLen int64
	// Open, when above zero, makes one Put or Delete in Open run to
	// store.Infinity.
	Open int
	// Correction is the valid period [from, to) Correct writes.
	Correction [2]int64
	// InferredKey returns the key of the n-th placeholder (from 0), a key no
	// other write touches, or nil when the history has enough of them.
	InferredKey func(n int) store.Key
	// BeforeCommit, when set, is called before commit number commit (from
	// 0): a test that runs the store on its own clock sets it there.
	BeforeCommit func(commit int)
	// Log, when set, is told every write: a property test passes its Logf,
	// so that a shrunk failure prints the history it wrote.
	Log func(format string, args ...any)
}

// Write draws h into db from r, checks db with store.Verify and returns the
// transaction times of the commits that wrote something, in commit order.
func Write(t testutil.TB, db *store.DB, r Rand, h History) []int64 {
	t.Helper()
	var txs []int64
	w := writer{h: &h, r: r, unit: max(h.Unit, 1)}
	minOps := max(h.MinOps, 1)
	for commit := range h.Commits {
		if h.BeforeCommit != nil {
			h.BeforeCommit(commit)
		}
		c, err := txn.Update(db, func(tx *txn.Tx) error {
			for range minOps + r.IntN(h.MaxOps-minOps+1) {
				if err := w.write(tx, commit); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatalf("commit %d: %v", commit, err)
		}
		if c.Tx != 0 {
			txs = append(txs, c.Tx)
		}
	}
	testutil.Verify(t, db)
	return txs
}

// writer draws the writes of one History.
type writer struct {
	h        *History
	r        Rand
	unit     int64
	inferred int // placeholders drawn
}

// write draws one write of commit number commit and makes it in tx.
func (w *writer) write(tx *txn.Tx, commit int) error {
	x, ok := w.draw(commit)
	if !ok {
		return nil
	}
	if w.h.Log != nil {
		w.h.Log("commit %d: %s", commit, x)
	}
	return x.apply(tx, w.h.Table, w.unit)
}

// draw draws one write of commit number commit; false for a placeholder
// when the history has enough of them.
func (w *writer) draw(commit int) (drawn, bool) {
	h := w.h
	x := drawn{key: h.Key(commit), from: w.r.Int64N(h.Valid) * w.unit}
	x.op = h.Ops[w.r.IntN(len(h.Ops))]
	switch x.op {
	case Upsert, Reupsert:
		x.attrs = h.Attrs()
	case Put:
		x.attrs = h.Attrs()
		x.to = w.end(x.from, h.PutLen)
	case Correct:
		x.attrs = h.Attrs()
		x.from, x.to = h.Correction[0], h.Correction[1]
	case Delete:
		x.to = w.end(x.from, h.DeleteLen)
	case Inferred:
		if x.key = h.InferredKey(w.inferred); x.key == nil {
			return x, false
		}
		w.inferred++
	}
	return x, true
}

// end draws the end of a Put or Delete from valid time from: 1 to n units
// later, or store.Infinity.
func (w *writer) end(from, n int64) int64 {
	to := from + (1+w.r.Int64N(n))*w.unit
	if w.h.Open > 0 && w.r.IntN(w.h.Open) == 0 {
		return store.Infinity
	}
	return to
}

// drawn is one write a History drew.
type drawn struct {
	op       Op
	key      store.Key
	from, to int64 // to: the end of a Put, Correct or Delete
	attrs    store.Attrs
}

// apply makes the write in tx on table; unit is the history's unit of
// valid time.
func (x drawn) apply(tx *txn.Tx, table string, unit int64) error {
	var err error
	switch x.op {
	case Upsert:
		_, err = tx.Upsert(table, x.key, x.attrs, x.from)
	case Reupsert:
		if _, err = tx.Upsert(table, x.key, x.attrs, x.from); err == nil {
			_, err = tx.Upsert(table, x.key, x.attrs, x.from+unit)
		}
	case Put, Correct:
		err = tx.Put(table, x.key, x.attrs, x.from, x.to)
	case Delete:
		err = tx.Delete(table, x.key, x.from, x.to)
	case DeleteAt:
		_, err = tx.DeleteAt(table, x.key, x.from)
	case Inferred:
		_, err = tx.InsertInferred(table, x.key, x.from)
	}
	return err
}

var opNames = [...]string{Upsert: "upsert", Reupsert: "reupsert", Put: "put", Correct: "correct", Delete: "delete", DeleteAt: "delete-at", Inferred: "inferred"}

// String renders the write as a failing property test logs it.
func (x drawn) String() string {
	if x.op == Put || x.op == Correct || x.op == Delete {
		return fmt.Sprintf("%s %v [%d, %d) %v", opNames[x.op], x.key, x.from, x.to, x.attrs)
	}
	return fmt.Sprintf("%s %v from %d %v", opNames[x.op], x.key, x.from, x.attrs)
}
