package store

import (
	"testing"

	"github.com/bitempo/bitempo/layout"
)

// An SCD2 close re-asserts the closed version with its surrogate key, key and
// valid_from: it writes no sk-index entry, and GetBySK still finds, at every
// transaction time, the record of the surrogate key alive then.
func TestSKIndexSkipsSCD2Close(t *testing.T) {
	clock := int64(100)
	db, tbl := openTableP(t, Options{InMemory: true, Clock: func() int64 { clock++; return clock }})
	a, err := tbl.AppendKey(nil, Key{"a"})
	if err != nil {
		t.Fatal(err)
	}
	var first Version
	tx1 := commitEvents(t, db, func(w *Writer) error {
		first = tbl.NewVersion(Key{"a"}, a, 10, Infinity, w.AllocSK(tbl), Attrs{"city": "Oslo"})
		first.TxFrom = w.Tx()
		return w.Assert(tbl, first)
	})
	var next uint64
	tx2 := commitEvents(t, db, func(w *Writer) error {
		if err := w.Retire(tbl, first); err != nil {
			return err
		}
		if err := w.Assert(tbl, tbl.NewVersion(Key{"a"}, a, 10, 20, first.SK, Attrs{"city": "Oslo"})); err != nil {
			return err
		}
		next = w.AllocSK(tbl)
		return w.Assert(tbl, tbl.NewVersion(Key{"a"}, a, 20, Infinity, next, Attrs{"city": "Bergen"}))
	})
	s, err := db.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	stats, err := s.KeyspaceStats()
	if err != nil {
		t.Fatal(err)
	}
	if n := stats[indexOf(layout.SKIndex)].Entries; n != 2 {
		t.Fatalf("%d sk-index entries, want 2 (the close writes none)", n)
	}
	for _, c := range []struct {
		sk           uint64
		tx           int64
		validTo      int64
		txFrom, txTo int64
	}{
		{first.SK, tx1, Infinity, tx1, tx2},
		{first.SK, tx2, 20, tx2, Infinity},
		{first.SK, Infinity, 20, tx2, Infinity},
		{next, tx2, Infinity, tx2, Infinity},
	} {
		v, found, err := s.RecordBySK(tbl, c.sk, c.tx)
		if err != nil || !found || v.SK != c.sk || v.ValidTo != c.validTo || v.TxFrom != c.txFrom || v.TxTo != c.txTo {
			t.Errorf("RecordBySK(%d, %d) = %s %v %v, want valid_to %d tx [%d, %d)", c.sk, c.tx, v.String(), found, err, c.validTo, c.txFrom, c.txTo)
		}
	}
	if _, found, err := s.RecordBySK(tbl, next, tx1); found || err != nil {
		t.Errorf("RecordBySK(%d, %d) before its assertion: %v %v", next, tx1, found, err)
	}
	if rep, err := Verify(db); err != nil || !rep.OK() {
		t.Fatalf("verify: %v %v", rep, err)
	}
}
