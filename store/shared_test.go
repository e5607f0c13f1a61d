package store

import (
	"strings"
	"testing"

	"github.com/bitempo/bitempo/internal/sealed"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/layout"
)

// A record retired by an SCD2 close, re-asserted with the same sk, key,
// valid_from and attributes, stores no attributes of its own: reads at past
// transaction times find them through the chain of its successors, and a
// broken chain is corruption that Verify reports.
func TestRetiredRecordSharesAttrs(t *testing.T) {
	clock := int64(100)
	db, err := Open("", Options{InMemory: true, Clock: func() int64 { clock++; return clock }})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tbl, err := db.CreateTable(TableDef{Name: "p", Key: []KeyColumn{{Name: "id", Type: String}}, GroupBy: []string{"g"}})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := tbl.AppendKey(nil, Key{"a"})
	attrs := Attrs{"city": "Oslo", "g": "x"}
	cur := tbl.NewVersion(Key{"a"}, a, 10, Infinity, 0, attrs)
	var txs []int64
	commitEvents(t, db, func(w *Writer) error {
		cur.SK = w.AllocSK(tbl)
		cur.TxFrom = w.Tx()
		txs = append(txs, w.Tx())
		return w.Assert(tbl, cur)
	})
	// Two closes of the same version, each keeping sk and attributes: a chain
	// of two shared records ending at the current one.
	for _, to := range []int64{30, 20} {
		commitEvents(t, db, func(w *Writer) error {
			if err := w.Retire(tbl, cur); err != nil {
				return err
			}
			cur.ValidTo, cur.TxFrom = to, w.Tx()
			txs = append(txs, w.Tx())
			return w.Assert(tbl, cur)
		})
	}
	s, err := db.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	shared := 0
	for kv, err := range s.RawScan([]byte{layout.History}, []byte{layout.History + 1}) {
		if err != nil {
			t.Fatal(err)
		}
		if encoding.SharesAttrs(kv.Value) {
			shared++
		}
	}
	if shared != 2 {
		t.Fatalf("%d history records share their attributes, want 2", shared)
	}
	for i, tx := range txs {
		v, reason, err := s.VersionAt(tbl, a, 15, tx)
		want := []int64{Infinity, 30, 20}[i]
		if err != nil || reason != Found || v.ValidTo != want || !v.Attrs.Equal(attrs) {
			t.Fatalf("at tx %d: %s %v %v, want valid_to %d with %v", tx, v.String(), reason, err, want, attrs)
		}
	}
	group, _ := tbl.AppendGroupKey(nil, Key{"x"})
	n := 0
	for r, err := range s.GroupRecords(tbl, group, txs[0], txs[2]) {
		if err != nil {
			t.Fatal(err)
		}
		got, err := r.Attrs()
		if err != nil || !got.Equal(attrs) {
			t.Fatalf("group record %+v: attrs %v %v", r, got, err)
		}
		n++
	}
	if n != 3 {
		t.Fatalf("%d group records, want 3", n)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if rep, err := Verify(db); err != nil || !rep.OK() {
		t.Fatalf("verify: %v %v", rep, err)
	}
	// Break the chain: the middle record, which the first one shares, is gone.
	if err := db.RawSet(sealed.Key{}, layout.HistoryKeys.Key(nil, tbl.ID, a, 10, txs[1]), nil); err != nil {
		t.Fatal(err)
	}
	rep, err := Verify(db)
	if err != nil || rep.OK() || !strings.Contains(rep.String(), "shares the attributes") {
		t.Fatalf("verify of a broken chain: %v %v", rep, err)
	}
}
