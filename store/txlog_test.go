package store

import (
	"fmt"
	"slices"
	"testing"
)

// The changes one transaction makes to one key share a transaction-log entry,
// yet every change keeps its own position: a read resumed at any position,
// inside an entry or at its start, yields exactly the changes from there on.
func TestTxLogPositionsInsideEntries(t *testing.T) {
	clock := int64(100)
	db, err := Open("", Options{InMemory: true, Clock: func() int64 { clock++; return clock }})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tbl, err := db.CreateTable(TableDef{Name: "p", Key: []KeyColumn{{Name: "id", Type: String}}})
	if err != nil {
		t.Fatal(err)
	}
	tuple := func(id string) []byte {
		b, err := tbl.AppendKey(nil, Key{id})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	a, b := tuple("a"), tuple("b")
	var open []Version
	commitEvents(t, db, func(w *Writer) error {
		for _, k := range []struct {
			id    string
			tuple []byte
		}{{"a", a}, {"b", b}} {
			v := tbl.NewVersion(Key{k.id}, k.tuple, 10, Infinity, w.AllocSK(tbl), Attrs{"x": int64(1)})
			if err := w.Assert(tbl, v); err != nil {
				return err
			}
			v.TxFrom, v.TxTo = w.Tx(), Infinity
			open = append(open, v)
		}
		return nil
	})
	// One transaction: key a retires its version and asserts two pieces (three
	// changes, one entry), then key b is retired (a second entry).
	commitEvents(t, db, func(w *Writer) error {
		if err := w.Retire(tbl, open[0]); err != nil {
			return err
		}
		if err := w.Assert(tbl, tbl.NewVersion(Key{"a"}, a, 10, 20, open[0].SK, Attrs{"x": int64(1)})); err != nil {
			return err
		}
		if err := w.Assert(tbl, tbl.NewVersion(Key{"a"}, a, 20, Infinity, w.AllocSK(tbl), Attrs{"x": int64(2)})); err != nil {
			return err
		}
		return w.Retire(tbl, open[1])
	})
	s, err := db.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	read := func(from LogPos) []string {
		var out []string
		for e, err := range s.TxLog(tbl, from, Infinity) {
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, fmt.Sprintf("%d/%d %s %s %d", e.Pos.Tx, e.Pos.Ordinal, e.Op, e.Version.Key, e.Version.ValidFrom))
		}
		return out
	}
	all := read(LogPos{})
	tx1, tx2 := s.LastTx()-1, s.LastTx()
	want := []string{
		fmt.Sprintf("%d/0 assert a 10", tx1), fmt.Sprintf("%d/1 assert b 10", tx1),
		fmt.Sprintf("%d/0 retire a 10", tx2), fmt.Sprintf("%d/1 assert a 10", tx2),
		fmt.Sprintf("%d/2 assert a 20", tx2), fmt.Sprintf("%d/3 retire b 10", tx2),
	}
	if !slices.Equal(all, want) {
		t.Fatalf("log:\n%v\nwant\n%v", all, want)
	}
	if n := countEntries(t, s, tbl); n != 4 {
		t.Fatalf("%d log entries, want 4 (one per transaction and key)", n)
	}
	for i, pos := range []LogPos{{tx1, 0}, {tx1, 1}, {tx2, 0}, {tx2, 1}, {tx2, 2}, {tx2, 3}} {
		if got := read(pos); !slices.Equal(got, want[i:]) {
			t.Errorf("from %v: got %v, want %v", pos, got, want[i:])
		}
	}
	if got := read(LogPos{tx2, 4}); len(got) != 0 {
		t.Errorf("from past the last change: %v", got)
	}
	if rep, err := Verify(db); err != nil || !rep.OK() {
		t.Fatalf("verify: %v %v", rep, err)
	}
}

func countEntries(t *testing.T, s *Snapshot, tbl *Table) int {
	pfx := txLogKey.tablePrefix(tbl.ID)
	n := 0
	for _, err := range s.RawScan(pfx, append(pfx, 0xff)) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	return n
}
