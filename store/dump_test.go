package store_test

import (
	"errors"
	"testing"

	"github.com/bitempo/bitempo/internal/testutil"
	"github.com/bitempo/bitempo/layout"
	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// dumpFixture builds a store with a periods table (one correction, so history and
// retire entries exist) and a changes table (events and a batch id).
func dumpFixture(t *testing.T) *store.DB {
	t.Helper()
	db := testutil.OpenTicking(t, 1)
	key := []store.KeyColumn{{Name: "id", Type: store.String}}
	if _, err := db.CreateTable(store.TableDef{Name: "dim", Key: key}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateTable(store.TableDef{Name: "feed", Key: key, Kind: store.Changes}); err != nil {
		t.Fatal(err)
	}
	for _, at := range []int64{10, 20} {
		_, err := txn.Update(db, func(tx *txn.Tx) error {
			_, err := tx.Upsert("dim", store.Key{"a"}, store.Attrs{"city": at}, at)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	_, err := txn.Apply(db, "feed", "b1", []txn.Event{
		{Key: store.Key{"x"}, At: 5, Op: txn.OpUpsert, Attrs: store.Attrs{"plan": "pro"}},
		{Key: store.Key{"x"}, At: 9, Seq: 2, Op: txn.OpDelete},
	})
	if err != nil {
		t.Fatal(err)
	}
	return db
}

func TestDecodeEntry(t *testing.T) {
	db := dumpFixture(t)
	s, err := db.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	seen := map[string]int{}
	for kv, err := range s.RawScan(nil, nil) {
		if err != nil {
			t.Fatal(err)
		}
		e := db.DecodeEntry(kv)
		if e.Err != nil {
			t.Fatalf("%s entry %x: %v", e.Keyspace, kv.Key, e.Err)
		}
		seen[e.Keyspace]++
		switch e.Keyspace {
		case "current", "history", "sk-index", "txlog", "events":
			if e.Table == nil || e.Key.String() == "" {
				t.Fatalf("%s entry without table or key: %+v", e.Keyspace, e)
			}
		}
		if e.Keyspace == "events" {
			if e.KeyFields[1].Name != "at" || e.KeyFields[2].Name != "seq" || e.Value[0].Name != "op" {
				t.Fatalf("event fields: %+v %+v", e.KeyFields, e.Value)
			}
		}
		if e.Keyspace == "history" {
			if len(e.KeyFields) != 3 || e.KeyFields[2].Kind != store.FieldTxTime {
				t.Fatalf("history key fields: %+v", e.KeyFields)
			}
		}
	}
	for _, ks := range []string{"meta", "catalog", "sk-counter", "attr-names", "current", "history", "sk-index", "txlog", "events", "batches"} {
		if seen[ks] == 0 {
			t.Errorf("no %s entry decoded (saw %v)", ks, seen)
		}
	}
	// A value that does not decode is reported, not fatal.
	e := db.DecodeEntry(store.RawKV{Key: append(layout.TablePrefix(0x10, 1), 0xff), Value: []byte{0xc1}})
	if !errors.Is(e.Err, store.ErrCorrupt) || e.Keyspace != "current" {
		t.Fatalf("corrupt entry: %+v", e)
	}
	if e := db.DecodeEntry(store.RawKV{}); !errors.Is(e.Err, store.ErrCorrupt) {
		t.Fatalf("empty key: %+v", e)
	}
}

func TestTableStats(t *testing.T) {
	db := dumpFixture(t)
	s, err := db.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, c := range []struct {
		table string
		want  store.TableStats
	}{
		// Upsert at 20 closes [10, +inf): one retired record, two current.
		{"dim", store.TableStats{Keys: 1, Versions: 2, Records: 3, Retired: 1}},
		{"feed", store.TableStats{Keys: 1, Versions: 1, Records: 1, Events: 2, Batches: 1}},
	} {
		tbl, err := db.Table(c.table)
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.TableStats(tbl)
		if err != nil || got != c.want {
			t.Errorf("%s: %+v, %v; want %+v", c.table, got, err, c.want)
		}
	}
}
