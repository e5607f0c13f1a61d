package store

import (
	"testing"

	"github.com/bitempo/bitempo/layout"
)

// KeyspaceStats counts every stored entry once, in the keyspace of its first
// byte, with its exact key and value lengths.
func TestKeyspaceStats(t *testing.T) {
	db, tbl := openEventsDB(t)
	a := eventsTuple(t, tbl, "a")
	commitEvents(t, db, func(w *Writer) error {
		if err := w.PutEvent(tbl, a, LogEvent{At: 1, Op: EventUpsert, Attrs: Attrs{"x": int64(1)}}); err != nil {
			return err
		}
		return w.Assert(tbl, tbl.NewVersion(Key{"a"}, a, 1, Infinity, w.AllocSK(tbl), Attrs{"x": int64(1)}))
	})
	s, err := db.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	want := map[byte]KeyspaceStats{}
	for kv, err := range s.RawScan(nil, nil) {
		if err != nil {
			t.Fatal(err)
		}
		k := want[kv.Key[0]]
		k.Entries++
		k.KeyBytes += int64(len(kv.Key))
		k.ValueBytes += int64(len(kv.Value))
		want[kv.Key[0]] = k
	}
	got, err := s.KeyspaceStats()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(layout.Keyspaces()) {
		t.Fatalf("%d keyspaces, want %d", len(got), len(layout.Keyspaces()))
	}
	for _, k := range got {
		w := want[k.Prefix]
		if k.Name != layout.KeyspaceName(k.Prefix) || k.Entries != w.Entries || k.KeyBytes != w.KeyBytes || k.ValueBytes != w.ValueBytes {
			t.Errorf("keyspace 0x%02x: got %+v, want %+v", k.Prefix, k, w)
		}
		delete(want, k.Prefix)
	}
	if len(want) != 0 {
		t.Errorf("entries outside the keyspace table: %v", want)
	}
	for _, ks := range []byte{layout.Current, layout.SKIndex, layout.TxLog, layout.Events} {
		if got[indexOf(ks)].Entries == 0 {
			t.Errorf("keyspace %s is empty", layout.KeyspaceName(ks))
		}
	}
}

func indexOf(ks byte) int {
	for i, p := range layout.Keyspaces() {
		if p == ks {
			return i
		}
	}
	return -1
}
