package store

import (
	"errors"
	"testing"
)

// TestKeyRowAtAllocatesNothingAndReturnsTheCallbacksError checks that a point
// row read at the latest transaction time that finds a version allocates
// nothing on a warm snapshot, that it returns the callback's error as is, and
// that a miss does not call the callback.
func TestKeyRowAtAllocatesNothingAndReturnsTheCallbacksError(t *testing.T) {
	db, tbl := openTableP(t, Options{InMemory: true})
	a, _ := tbl.AppendKey(nil, Key{"a"})
	commitEvents(t, db, func(w *Writer) error {
		return w.Assert(tbl, tbl.NewVersion(Key{"a"}, a, 1, 10, w.AllocSK(tbl), Attrs{"x": int64(7), "y": "why"}))
	})
	s, err := db.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	x := NewAttrRef("x")
	var got int64
	read := func(r *Row) error {
		got, _ = r.Int64(x)
		return nil
	}
	key := Key{"a"}
	if reason, err := s.KeyRowAt(tbl, key, 5, s.LastTx(), read); reason != Found || err != nil || got != 7 {
		t.Fatalf("KeyRowAt: %v, %v, x=%d", reason, err, got)
	}
	if !raceEnabled {
		if n := testing.AllocsPerRun(50, func() { _, _ = s.KeyRowAt(tbl, key, 5, s.LastTx(), read) }); n != 0 {
			t.Fatalf("a point row read costs %v allocations", n)
		}
	}
	stop := errors.New("stop")
	if reason, err := s.KeyRowAt(tbl, key, 5, s.LastTx(), func(*Row) error { return stop }); reason != Found || err != stop {
		t.Fatalf("KeyRowAt with a failing callback: %v, %v", reason, err)
	}
	for _, valid := range []int64{0, 10} {
		reason, err := s.KeyRowAt(tbl, key, valid, s.LastTx(), func(*Row) error {
			t.Fatalf("callback called for a miss at %d", valid)
			return nil
		})
		if want := map[int64]MissReason{0: BeforeFirst, 10: AfterLast}[valid]; reason != want || err != nil {
			t.Fatalf("KeyRowAt at %d: %v, %v; want %v", valid, reason, err, want)
		}
	}
}
