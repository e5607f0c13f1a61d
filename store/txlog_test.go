package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/bitempo/bitempo/layout"
)

// The changes one transaction makes to one key share a transaction-log entry,
// yet every change keeps its own position: a read resumed at any position,
// inside an entry or at its start, yields exactly the changes from there on.
func TestTxLogPositionsInsideEntries(t *testing.T) {
	clock := int64(100)
	db, tbl := openTableP(t, Options{InMemory: true, Clock: func() int64 { clock++; return clock }})
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
	pfx := layout.TxLogKeys.TablePrefix(tbl.ID)
	n := 0
	for _, err := range s.RawScan(pfx, append(pfx, 0xff)) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	return n
}

// A log entry's value decodes to the changes it was built from, in order,
// whatever they are: a retire followed by the assert of its valid_from is
// stored as one re-assert yet decodes as the two changes, valid_froms that
// are deltas decode exactly (extreme times included), and a value that is not
// an entry fails with ErrCorrupt, never a panic.
func TestLogEntryCodec(t *testing.T) {
	_, tbl := openTableP(t, Options{InMemory: true})
	tuple, err := tbl.AppendKey(nil, Key{"k"})
	if err != nil {
		t.Fatal(err)
	}
	const tx = int64(1_700_000_000_000_000)
	times := []int64{NegInfinity, NegInfinity + 1, -5, 0, 7, 1 << 40, tx, Infinity - 1}
	r := rand.New(rand.NewPCG(5, 6))
	for range 5_000 {
		var want []logChange
		for range 1 + r.IntN(6) {
			vf := times[r.IntN(len(times))]
			if r.IntN(2) == 0 {
				vf = r.Int64N(1 << 50)
			}
			switch r.IntN(3) {
			case 0:
				want = append(want, logChange{op: LogAssert, validFrom: vf, txFrom: tx})
			case 1:
				want = append(want, logChange{op: LogRetire, validFrom: vf, txFrom: tx - 1 - r.Int64N(1<<30)})
			case 2: // a close: retire and re-assert at one valid_from
				want = append(want, logChange{op: LogRetire, validFrom: vf, txFrom: NegInfinity + 1 + r.Int64N(1<<20)},
					logChange{op: LogAssert, validFrom: vf, txFrom: tx})
			}
		}
		e := newLogEntryValue(tx, tuple)
		for _, c := range want {
			e.add(c)
		}
		gotTuple, got, err := decodeLogEntry(tbl, tx, e.b, nil)
		if err != nil || !slices.Equal(gotTuple, tuple) || !slices.Equal(got, want) {
			t.Fatalf("entry %x: got %v %v, %v; want %v", e.b, gotTuple, got, err, want)
		}
		// Every truncation and a flipped byte: ErrCorrupt or some entry,
		// never a panic.
		for n := len(tuple); n < len(e.b); n++ {
			if _, _, err := decodeLogEntry(tbl, tx, e.b[:n], nil); err != nil && !errors.Is(err, ErrCorrupt) {
				t.Fatalf("truncated %x: %v", e.b[:n], err)
			}
		}
		bad := slices.Clone(e.b)
		bad[len(tuple)+r.IntN(len(bad)-len(tuple))] ^= byte(1 + r.IntN(255))
		if _, _, err := decodeLogEntry(tbl, tx, bad, nil); err != nil && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("damaged %x: %v", bad, err)
		}
	}
	// A close is one stored change: kind, valid_from, tx distance.
	e := newLogEntryValue(tx, tuple)
	e.add(logChange{op: LogRetire, validFrom: 10, txFrom: tx - 3})
	e.add(logChange{op: LogAssert, validFrom: 10, txFrom: tx})
	e.add(logChange{op: LogAssert, validFrom: 12, txFrom: tx})
	if want := append(slices.Clone(tuple), logKindReassert, 20, 3, logKindAssert, 4); !slices.Equal(e.b, want) {
		t.Fatalf("close stored as %x, want %x", e.b, want)
	}
	for _, c := range []struct {
		name  string
		value []byte
	}{
		{"no change", tuple},
		{"unknown kind", append(slices.Clone(tuple), 3, 0)},
		{"truncated valid_from", append(slices.Clone(tuple), logKindAssert, 0x80)},
		{"retire without tx_from", append(slices.Clone(tuple), logKindRetire, 2)},
		{"re-assert without tx_from", append(slices.Clone(tuple), logKindReassert, 2)},
		{"zero tx distance", append(slices.Clone(tuple), logKindReassert, 2, 0)},
		{"tx_from below -inf", binary.AppendUvarint(append(slices.Clone(tuple), logKindRetire, 2), 1<<64-1)},
	} {
		if _, _, err := decodeLogEntry(tbl, tx, c.value, nil); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: got %v, want ErrCorrupt", c.name, err)
		}
	}
}

// openTableP opens an in-memory store with opts (InMemory set by the caller)
// and creates table "p", keyed by a string "id"; the store is closed when the
// test ends.
func openTableP(t *testing.T, opts Options) (*DB, *Table) {
	t.Helper()
	db, err := Open("", opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	tbl, err := db.CreateTable(TableDef{Name: "p", Key: []KeyColumn{{Name: "id", Type: String}}})
	if err != nil {
		t.Fatal(err)
	}
	return db, tbl
}
