package store

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/bitempo/bitempo/internal/sealed"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/layout"
)

func openEventsDB(t *testing.T) (*DB, *Table) {
	t.Helper()
	db, err := Open("", Options{InMemory: true, Clock: func() int64 { return 0 }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	tbl, err := db.CreateTable(TableDef{Name: "feed", Kind: Changes, Key: []KeyColumn{{Name: "id", Type: String}}})
	if err != nil {
		t.Fatal(err)
	}
	return db, tbl
}

func eventsTuple(t *testing.T, tbl *Table, id string) []byte {
	t.Helper()
	tuple, err := tbl.AppendKey(nil, Key{id})
	if err != nil {
		t.Fatal(err)
	}
	return tuple
}

// commitEvents runs fn in a write transaction and commits it.
func commitEvents(t *testing.T, db *DB, fn func(w *Writer) error) int64 {
	t.Helper()
	w, err := db.BeginWrite(sealed.Key{})
	if err != nil {
		t.Fatal(err)
	}
	if err := fn(w); err != nil {
		w.Abort()
		t.Fatal(err)
	}
	tx := w.Tx()
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	return tx
}

func collectEvents(t *testing.T, s *Snapshot, tbl *Table, tuple []byte, at, seq int64) []LogEvent {
	t.Helper()
	var out []LogEvent
	for e, err := range s.KeyEvents(tbl, tuple, at, seq) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

func eventsString(evs []LogEvent) string {
	var b bytes.Buffer
	for _, e := range evs {
		fmt.Fprintf(&b, "(%d,%d,%s,%v)", e.At, e.Seq, e.Op, map[string]any(e.Attrs))
	}
	return b.String()
}

func TestEventLogRoundTrip(t *testing.T) {
	db, tbl := openEventsDB(t)
	a, b := eventsTuple(t, tbl, "a"), eventsTuple(t, tbl, "a\x00") // b extends a's bytes
	evs := []LogEvent{
		{At: math.MinInt64, Seq: 0, Op: EventDelete},
		{At: -5, Seq: -1, Op: EventUpsert, Attrs: Attrs{"x": int64(1)}},
		{At: -5, Seq: 3, Op: EventUpsert, Attrs: Attrs{}},
		{At: 7, Seq: 0, Op: EventUpsert, Attrs: Attrs{"s": "v", "n": nil}},
		{At: 7, Seq: 1, Op: EventDelete},
	}
	tx := commitEvents(t, db, func(w *Writer) error {
		for _, e := range evs {
			if err := w.PutEvent(tbl, a, e); err != nil {
				return err
			}
		}
		if err := w.PutEvent(tbl, b, LogEvent{At: 0, Op: EventUpsert, Attrs: Attrs{"other": true}}); err != nil {
			return err
		}
		if err := w.PutCheckpoint(tbl, a, Checkpoint{Through: -10, Open: true, From: -20, Attrs: Attrs{"x": int64(0)}}); err != nil {
			return err
		}
		if err := w.PutCheckpoint(tbl, b, Checkpoint{Through: -3}); err != nil {
			return err
		}
		return w.PutBatch(tbl, "batch-1")
	})
	s, err := db.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	if got := collectEvents(t, s, tbl, a, NegInfinity, NegInfinity); eventsString(got) != eventsString(evs) {
		t.Fatalf("events\n got %s\nwant %s", eventsString(got), eventsString(evs))
	}
	if got := collectEvents(t, s, tbl, a, -5, 0); eventsString(got) != eventsString(evs[2:]) {
		t.Fatalf("events from (-5, 0): %s", eventsString(got))
	}
	for e := range s.KeyEvents(tbl, a, NegInfinity, NegInfinity) {
		_ = e
		break // early exit must close the iterator (checked by Close below)
	}
	last, ok, err := s.LastEvent(tbl, a)
	if err != nil || !ok || last.At != 7 || last.Seq != 1 {
		t.Fatalf("last event %+v %v %v", last, ok, err)
	}
	before, ok, err := s.EventBefore(tbl, a, 7, 0)
	if err != nil || !ok || before.At != -5 || before.Seq != 3 {
		t.Fatalf("event before (7, 0): %+v %v %v", before, ok, err)
	}
	if _, ok, err := s.EventBefore(tbl, a, math.MinInt64, 0); ok || err != nil {
		t.Fatalf("event before the first: %v %v", ok, err)
	}
	if _, ok, err := s.LastEvent(tbl, eventsTuple(t, tbl, "none")); ok || err != nil {
		t.Fatalf("last event of an unknown key: %v %v", ok, err)
	}

	cp, ok, err := s.Checkpoint(tbl, a)
	if err != nil || !ok || cp.Through != -10 || !cp.Open || cp.From != -20 || cp.Attrs["x"] != int64(0) {
		t.Fatalf("checkpoint %+v %v %v", cp, ok, err)
	}
	cp, ok, err = s.Checkpoint(tbl, b)
	if err != nil || !ok || cp.Open || cp.Attrs != nil || cp.Through != -3 {
		t.Fatalf("closed checkpoint %+v %v %v", cp, ok, err)
	}
	if got, ok, err := s.BatchTx(tbl, "batch-1"); err != nil || !ok || got != tx {
		t.Fatalf("batch tx %d %v %v, want %d", got, ok, err, tx)
	}
	if _, ok, err := s.BatchTx(tbl, "batch-2"); ok || err != nil {
		t.Fatalf("unknown batch: %v %v", ok, err)
	}
	var batches []BatchRecord
	for rec, err := range s.Batches(tbl) {
		if err != nil {
			t.Fatal(err)
		}
		batches = append(batches, rec)
	}
	if !slices.Equal(batches, []BatchRecord{{"batch-1", tx}}) {
		t.Fatalf("batches %v", batches)
	}
	keys, err := s.ChangesKeys(tbl)
	if err != nil || len(keys) != 2 || !bytes.Equal(keys[0], a) || !bytes.Equal(keys[1], b) {
		t.Fatalf("changes keys %x %v", keys, err)
	}
	if has, err := s.HasChangesData(tbl); !has || err != nil {
		t.Fatalf("has changes data: %v %v", has, err)
	}

	// Deleting events and replacing one at the same (at, seq).
	commitEvents(t, db, func(w *Writer) error {
		w.DeleteEvent(tbl, a, math.MinInt64, 0)
		return w.PutEvent(tbl, a, LogEvent{At: 7, Seq: 1, Op: EventUpsert, Attrs: Attrs{"x": int64(9)}})
	})
	s2, err := db.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	want := append(slices.Clone(evs[1:4]), LogEvent{At: 7, Seq: 1, Op: EventUpsert, Attrs: Attrs{"x": int64(9)}})
	if got := collectEvents(t, s2, tbl, a, NegInfinity, NegInfinity); eventsString(got) != eventsString(want) {
		t.Fatalf("after delete and replace: %s", eventsString(got))
	}
}

func TestEventLogRejectsPeriodsTables(t *testing.T) {
	db, _ := openEventsDB(t)
	p, err := db.CreateTable(TableDef{Name: "p", Key: []KeyColumn{{Name: "id", Type: String}}})
	if err != nil {
		t.Fatal(err)
	}
	w, err := db.BeginWrite(sealed.Key{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	if err := w.PutEvent(p, []byte("x"), LogEvent{Op: EventDelete}); !errors.Is(err, ErrInvalidTable) {
		t.Fatalf("PutEvent on a periods table: %v", err)
	}
	if err := w.PutBatch(p, "b"); !errors.Is(err, ErrInvalidTable) {
		t.Fatalf("PutBatch on a periods table: %v", err)
	}
	if err := w.PutCheckpoint(p, []byte("x"), Checkpoint{}); !errors.Is(err, ErrInvalidTable) {
		t.Fatalf("PutCheckpoint on a periods table: %v", err)
	}
	c, _ := db.Table("feed")
	if err := w.PutEvent(c, []byte("x"), LogEvent{}); err == nil {
		t.Fatal("PutEvent accepted an event without an op")
	}
	if err := w.PutBatch(c, ""); err == nil {
		t.Fatal("PutBatch accepted an empty batch id")
	}
}

// TestEventValueEncoding pins the value format: compact, deterministic, and
// decoded with limits.
func TestEventValueEncoding(t *testing.T) {
	del, err := appendEventValue(nil, &LogEvent{Op: EventDelete, Attrs: Attrs{"ignored": int64(1)}})
	if err != nil || !bytes.Equal(del, []byte{0x92, 0x02, 0xc0}) {
		t.Fatalf("delete value %x %v", del, err)
	}
	up1, _ := appendEventValue(nil, &LogEvent{Op: EventUpsert, Attrs: Attrs{"b": int64(1), "a": "x"}})
	up2, _ := appendEventValue(nil, &LogEvent{Op: EventUpsert, Attrs: Attrs{"a": "x", "b": int(1)}})
	attrs, _ := encoding.AppendAttrs(nil, Attrs{"a": "x", "b": int64(1)})
	if !bytes.Equal(up1, up2) || !bytes.Equal(up1[2:], attrs) || !bytes.Equal(up1[:2], []byte{0x92, 0x01}) {
		t.Fatalf("upsert values %x / %x", up1, up2)
	}
	e, err := decodeEventValue(up1, 3, 4)
	if err != nil || e.At != 3 || e.Seq != 4 || e.Op != EventUpsert || e.Attrs["b"] != int64(1) {
		t.Fatalf("decode %+v %v", e, err)
	}
	for _, bad := range [][]byte{
		nil,
		{0x92},
		{0x92, 0x02},
		{0x93, 0x02, 0xc0},
		{0x92, 0x03, 0xc0},
		{0x92, 0x00, 0xc0},
		{0x92, 0x02, 0xc0, 0x00},
		{0x92, 0x02, 0x80},
		{0x92, 0x01, 0xc0},
		append(slices.Clone(up1), 0x00),
		{0x92, 0x01, 0x81, 0xa1, 'a', 0xc6, 0xff, 0xff, 0xff, 0xff}, // bin32 claiming 4 GiB
	} {
		if _, err := decodeEventValue(bad, 0, 0); !errors.Is(err, ErrCorrupt) {
			t.Errorf("decode %x: %v, want ErrCorrupt", bad, err)
		}
	}

	for _, c := range []Checkpoint{{Through: 5}, {Through: math.MinInt64, Open: true, From: math.MinInt64, Attrs: Attrs{}}, {Through: 9, Open: true, From: -1, Attrs: Attrs{"x": "y"}}} {
		raw, err := appendCheckpointValue(nil, &c)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeCheckpointValue(raw)
		if err != nil || got.Through != c.Through || got.Open != c.Open || got.From != c.From || len(got.Attrs) != len(c.Attrs) {
			t.Fatalf("checkpoint %+v round trip: %+v %v", c, got, err)
		}
		for n := range raw {
			if _, err := decodeCheckpointValue(raw[:n]); !errors.Is(err, ErrCorrupt) {
				t.Errorf("truncated checkpoint %x: %v, want ErrCorrupt", raw[:n], err)
			}
		}
	}
	if _, err := decodeCheckpointValue([]byte{0x94, 0x01, 0xc2, 0x01, 0x81, 0xa1, 'a', 0x01}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("closed checkpoint with attributes: %v", err)
	}
}

// TestEventLogCorruptValues checks that readers report ErrCorrupt for damaged
// entries instead of panicking.
func TestEventLogCorruptValues(t *testing.T) {
	db, tbl := openEventsDB(t)
	a := eventsTuple(t, tbl, "a")
	commitEvents(t, db, func(w *Writer) error {
		w.set(layout.EventKeys.Key(nil, tbl.ID, a, 1, 0), []byte{0x92, 0x07, 0xc0})
		w.set(append(layout.EventKeys.Key(nil, tbl.ID, a, 2, 0), 0x00), []byte{0x92, 0x02, 0xc0})
		w.set(layout.CheckpointKey(tbl.ID, a), []byte{0x94})
		w.set(layout.BatchKey(tbl.ID, "b"), []byte("not an int"))
		return nil
	})
	s, err := db.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	n := 0
	for _, err := range s.KeyEvents(tbl, a, NegInfinity, NegInfinity) {
		n++
		if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("corrupt event: %v", err)
		}
	}
	if n != 1 {
		t.Fatalf("iteration went on after an error (%d yields)", n)
	}
	if _, _, err := s.LastEvent(tbl, a); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("last event with a bad key: %v", err)
	}
	if _, _, err := s.Checkpoint(tbl, a); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("corrupt checkpoint: %v", err)
	}
	if _, _, err := s.BatchTx(tbl, "b"); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("corrupt batch record: %v", err)
	}
}
