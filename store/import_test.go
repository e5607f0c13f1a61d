package store_test

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/bitempo/bitempo/layout"
	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// importDefs are tables on all three axes, with multi-column and bytes keys, a
// group index and a changes table with a lateness horizon (so it has
// checkpoints).
var importDefs = []store.TableDef{
	{Name: "prices", Key: []store.KeyColumn{{Name: "sku", Type: store.String}, {Name: "store", Type: store.Int64}},
		Axis: store.AxisTime, GroupBy: []string{"cat"}, MixedTypes: true},
	{Name: "blobs", Key: []store.KeyColumn{{Name: "id", Type: store.Bytes}, {Name: "n", Type: store.Uint64}}, Axis: store.AxisDate, MixedTypes: true},
	{Name: "feed", Key: []store.KeyColumn{{Name: "acct", Type: store.String}}, Kind: store.Changes, Axis: store.AxisInt,
		Lateness: 10, TrackExcept: []string{"note"}, MixedTypes: true},
}

// importValues are attribute values of every type, nulls included.
var importValues = []any{nil, true, false, int64(-7), int64(math.MaxInt64), uint64(math.MaxUint64), 1.5, math.Copysign(0, -1),
	math.Inf(1), "", "text", []byte{}, []byte{0, 1, 255}}

func buildImportSource(t *testing.T) *store.DB {
	t.Helper()
	clock := int64(1_000)
	db, err := store.Open("src", store.Options{InMemory: true, Clock: func() int64 { clock += 7; return clock }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	for _, def := range importDefs {
		if _, err := db.CreateTable(def); err != nil {
			t.Fatal(err)
		}
	}
	const day = int64(86_400_000_000)
	for round := range 4 {
		update(t, db, func(tx *txn.Tx) error {
			for i := range 6 {
				attrs := store.Attrs{"cat": fmt.Sprintf("c%d", (i+round)%2), "v": importValues[(i+round)%len(importValues)]}
				if i%3 == 0 {
					attrs["maybe"] = nil // present and null, unlike an absent attribute
				}
				if _, err := tx.Upsert("prices", store.Key{fmt.Sprint("sku", i%3), int64(i)}, attrs, int64(round*1000+i)); err != nil {
					return err
				}
				to := store.Infinity
				if i%2 == 0 {
					to = int64(round+i+2) * day
				}
				from := store.NegInfinity
				if i%3 != 0 {
					from = int64(i) * day
				}
				if err := tx.Put("blobs", store.Key{[]byte{byte(i), 0}, uint64(math.MaxUint64) - uint64(i)},
					store.Attrs{"w": importValues[(i+2*round)%len(importValues)]}, from, to); err != nil {
					return err
				}
			}
			return nil
		})
		var events []txn.Event
		for i := range 5 {
			op, attrs := txn.OpUpsert, store.Attrs{"plan": fmt.Sprint("p", (i+round)%3), "note": importValues[i%len(importValues)]}
			if i == 4 && round == 2 {
				op, attrs = txn.OpDelete, nil
			}
			events = append(events, txn.Event{Key: store.Key{fmt.Sprint("a", i%2)}, At: int64(round*20 + i*3), Seq: int64(i), Op: op, Attrs: attrs})
		}
		if _, err := txn.Apply(db, "feed", fmt.Sprint("batch-", round), events); err != nil {
			t.Fatal(err)
		}
	}
	mustVerify(t, db)
	return db
}

// copyByImport copies every table of src into a new store through an Importer.
func copyByImport(t *testing.T, src *store.DB) *store.DB {
	t.Helper()
	dst, err := store.Open("dst", store.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dst.Close() })
	s, err := src.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var tables []*store.Table
	for _, def := range importDefs {
		st, _ := src.Table(def.Name)
		dt, err := dst.CreateTable(st.TableDef)
		if err != nil {
			t.Fatal(err)
		}
		if err := dst.DeclareAttrNames(dt, src.AttrNames(st)); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, dt)
	}
	im, err := dst.BeginImport()
	if err != nil {
		t.Fatal(err)
	}
	defer im.Abort()
	for i, def := range importDefs {
		st, _ := src.Table(def.Name)
		dt := tables[i]
		for v, err := range s.Records(st) {
			if err != nil {
				t.Fatal(err)
			}
			if err := im.Record(dt, v.Key, v.ValidFrom, v.ValidTo, v.TxFrom, v.TxTo, v.SK, v.Inferred, v.Attrs); err != nil {
				t.Fatal(err)
			}
		}
		if st.Kind == store.Changes {
			for e, err := range s.Events(st) {
				if err != nil {
					t.Fatal(err)
				}
				if err := im.Event(dt, e.Key, e.LogEvent); err != nil {
					t.Fatal(err)
				}
			}
			for c, err := range s.Checkpoints(st) {
				if err != nil {
					t.Fatal(err)
				}
				if err := im.Checkpoint(dt, c.Key, c.Checkpoint); err != nil {
					t.Fatal(err)
				}
			}
			for b, err := range s.Batches(st) {
				if err != nil {
					t.Fatal(err)
				}
				if err := im.Batch(dt, b.ID, b.Tx); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if err := im.AdvanceTx(s.LastTx()); err != nil {
		t.Fatal(err)
	}
	if err := im.Commit(); err != nil {
		t.Fatal(err)
	}
	return dst
}

// rawState is every stored key and value, with the transaction log's ordinals
// left out (an import numbers the entries of one transaction in key order) and
// its entries sorted, and without the erase secret, which every store draws at
// random when it is created (a store's erasures are not part of an export).
// Commit numbers are the import's own (it numbers the transaction times of the
// current records it rebuilds, in the order it meets them): the map of
// numbers is left out, and the values that hold one (current records, newest
// versions, the group index's current entries) are compared decoded, with
// their number mapped to its time.
func rawState(t *testing.T, db *store.DB) []string {
	t.Helper()
	s, err := db.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var out, txlog []string
	for kv, err := range s.RawScan(nil, nil) {
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Equal(kv.Key, []byte("\x01erase_secret")) || bytes.Equal(kv.Key, layout.MetaLastCommit) || kv.Key[0] == layout.Commits {
			continue
		}
		if ks := kv.Key[0]; ks == layout.Current || ks == layout.Newest || ks == layout.Groups {
			e := db.DecodeEntry(kv)
			if e.Err != nil {
				t.Fatal(e.Err)
			}
			out = append(out, fmt.Sprintf("%x -> %v", kv.Key, e.Value))
			continue
		}
		if layout.KeyspaceName(kv.Key[0]) == "txlog" {
			txlog = append(txlog, fmt.Sprintf("%x -> %x", kv.Key[:len(kv.Key)-4], kv.Value))
			continue
		}
		out = append(out, fmt.Sprintf("%x -> %x", kv.Key, kv.Value))
	}
	slices.Sort(txlog)
	return append(out, txlog...)
}

func TestImportRoundTrip(t *testing.T) {
	src := buildImportSource(t)
	dst := copyByImport(t, src)
	mustVerify(t, dst)
	want, got := rawState(t, src), rawState(t, dst)
	if len(want) < 100 {
		t.Fatalf("the source holds only %d keys", len(want))
	}
	for ks, name := range map[string]string{"11": "history", "20": "events", "21": "batches", "22": "checkpoints", "30": "groups"} {
		if !slices.ContainsFunc(want, func(e string) bool { return e[:2] == ks }) {
			t.Fatalf("the source has no %s entries", name)
		}
	}
	for i := range max(len(want), len(got)) {
		if i >= len(want) || i >= len(got) || want[i] != got[i] {
			w, g := "(none)", "(none)"
			if i < len(want) {
				w = want[i]
			}
			if i < len(got) {
				g = got[i]
			}
			t.Fatalf("entry %d differs:\n got %s\nwant %s", i, g, w)
		}
	}
	if dst.LastTx() != src.LastTx() {
		t.Fatalf("last tx %d, want %d", dst.LastTx(), src.LastTx())
	}
	// The copy takes new commits after the original's last transaction.
	c, err := txn.Update(dst, func(tx *txn.Tx) error {
		return tx.Put("prices", store.Key{"new", int64(1)}, store.Attrs{"cat": "x"}, 0, store.Infinity)
	})
	if err != nil || c.Tx <= src.LastTx() {
		t.Fatalf("commit after import: tx %d, err %v", c.Tx, err)
	}
	mustVerify(t, dst)
}

func TestImportRejects(t *testing.T) {
	src := buildImportSource(t)
	tbl, _ := src.Table("prices")
	im, err := src.BeginImport()
	if err != nil {
		t.Fatal(err)
	}
	err = im.Record(tbl, store.Key{"x", int64(1)}, 0, 10, 5, store.Infinity, 99, false, nil)
	if !errors.Is(err, store.ErrImport) {
		t.Fatalf("import into a table with data: got %v, want ErrImport", err)
	}
	im.Abort()

	db, err := store.Open("fresh", store.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	prices, _ := db.CreateTable(importDefs[0])
	feed, _ := db.CreateTable(importDefs[2])
	im, err = db.BeginImport()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		err  error
		want error
	}{
		{"empty valid period", im.Record(prices, store.Key{"a", int64(1)}, 5, 5, 1, store.Infinity, 1, false, nil), store.ErrImport},
		{"inverted tx period", im.Record(prices, store.Key{"a", int64(1)}, 0, 5, 9, 3, 1, false, nil), store.ErrImport},
		{"zero tx", im.Record(prices, store.Key{"a", int64(1)}, 0, 5, 0, store.Infinity, 1, false, nil), store.ErrImport},
		{"bad key", im.Record(prices, store.Key{"a"}, 0, 5, 1, store.Infinity, 1, false, nil), store.ErrKeyShape},
		{"bad group value", im.Record(prices, store.Key{"a", int64(1)}, 0, 5, 1, store.Infinity, 1, false, store.Attrs{"cat": 1.5}), store.ErrGroupValue},
		{"event on a periods table", im.Event(prices, store.Key{"a", int64(1)}, store.LogEvent{At: 1, Op: store.EventUpsert}), store.ErrInvalidTable},
		{"empty batch id", im.Batch(feed, "", 5), store.ErrImport},
	} {
		if !errors.Is(c.err, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, c.err, c.want)
		}
	}
	if err := im.Commit(); err != nil {
		t.Fatal(err)
	}
	s, _ := db.Snapshot()
	defer s.Close()
	for kv := range s.RawScan([]byte{0x10}, []byte{0x40}) {
		t.Fatalf("a rejected import wrote %x", kv.Key)
	}
	mustVerify(t, db)
}
