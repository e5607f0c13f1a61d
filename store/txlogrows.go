package store

import (
	"bytes"
	"fmt"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/engine"
	"github.com/bitempo/bitempo/layout"
)

// TxLogRows calls fn with the table's transaction-log changes from position
// from (inclusive) through every change of transaction until, in commit
// order, each with the record it names as a Row read in place, as the
// snapshot holds it (a record asserted in the window may show a retirement
// that came later). fn gets the same Row every time, valid until it returns,
// and nil with the Erasure of a LogErase change; it returns false to stop
// the walk. A malformed record that fn's reads of the row find ends the walk
// with their error.
//
// It costs one contiguous range read of the log plus a seek or two per
// change for its record, and allocates nothing per change but for an
// erasure or a retired record that shares its successor's attributes
// (Writer.shareAttrs) when the successor is not the current record of the
// same valid_from (an SCD2 close's is): finding them costs a point read or
// two per record of the chain.
func (s *Snapshot) TxLogRows(t *Table, from LogPos, until int64, fn func(pos LogPos, op LogOp, r *Row, e *Erasure) bool) error {
	return s.txLog(t, from, until, func(pos LogPos, op LogOp, r *Row, e *Erasure) (bool, error) {
		more := fn(pos, op, r, e)
		if r == nil {
			return more, nil
		}
		return more && r.err == nil, r.err
	})
}

// logRecords finds the records that transaction-log changes name, with
// iterators of its own, so that the rows it fills stay valid while the
// walk's callback reads the snapshot.
type logRecords struct {
	cur, hist engine.Iter
	key       []byte
}

func (s *Snapshot) newLogRecords(t *Table) (*logRecords, error) {
	lr := &logRecords{}
	for _, keys := range []layout.RecordCodec{layout.CurrentKeys, layout.HistoryKeys} {
		lower, upper := Span{}.bounds(keys, t.ID)
		it, err := s.newIter(lower, upper)
		if err != nil {
			return nil, firstError(err, lr.close())
		}
		if keys == layout.CurrentKeys {
			lr.cur = it
		} else {
			lr.hist = it
		}
	}
	return lr, nil
}

// fill points r at the record of a key that starts at validFrom and was
// asserted at txFrom, from the current index or, once retired, from history.
// The transaction log points at records this way; a pointer to nothing is
// corruption (invariant 5). A retired record that shares its successor's
// attributes takes them from the current record of the same valid_from when
// that is the successor (an SCD2 close), without reading it again.
func (lr *logRecords) fill(r *Row, tuple []byte, validFrom, txFrom int64) error {
	t := r.t
	var cur []byte // the current record of validFrom, when not the one asked for
	var curHead encoding.RecordValue
	lr.key = layout.CurrentKeys.Key(lr.key[:0], t.ID, tuple, validFrom, 0)
	if lr.cur.SeekPrefixGE(lr.key) && bytes.Equal(lr.cur.Key(), lr.key) {
		head, err := r.s.decodeHead(t, lr.cur.Value(), validFrom, 0)
		if err != nil {
			return err
		}
		if head.TxFrom == txFrom {
			return r.fillRecord(tuple, lr.cur.Value(), validFrom, 0, nil)
		}
		cur, curHead = lr.cur.Value(), head
	}
	lr.key = layout.HistoryKeys.Key(lr.key[:0], t.ID, tuple, validFrom, txFrom)
	if lr.hist.SeekPrefixGE(lr.key) && bytes.Equal(lr.hist.Key(), lr.key) {
		value := lr.hist.Value()
		var succ []byte
		if cur != nil && encoding.SharesAttrs(value) && !encoding.SharesAttrs(cur) {
			head, err := r.s.decodeHead(t, value, validFrom, txFrom)
			if err != nil {
				return err
			}
			if curHead.TxFrom == head.TxTo && curHead.SK == head.SK {
				succ = cur
			}
		}
		return r.fillRecord(tuple, value, validFrom, txFrom, succ)
	}
	if err := firstError(lr.cur.Error(), lr.hist.Error()); err != nil {
		return err
	}
	return fmt.Errorf("%w: table %q: no record of key %x valid from %d asserted at %d", ErrCorrupt, t.Name, tuple, validFrom, txFrom)
}

func (lr *logRecords) close() error {
	return closeIters(lr.cur, lr.hist)
}
