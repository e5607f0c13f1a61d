package store

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/bitempo/bitempo/internal/sealed"

	bpebble "github.com/bitempo/bitempo/engine/pebble"

	"github.com/bitempo/bitempo/engine"
	"github.com/bitempo/bitempo/layout"
)

// A scan steps over a key's versions with Next and then NextPrefix: every key
// of a table whose keys have many versions is read once, with the version in
// effect.
func TestScanNextPrefix(t *testing.T) {
	db, err := Open(t.TempDir(), Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, def := range []TableDef{
		{Name: "s", Key: []KeyColumn{{Name: "id", Type: String}}},
		{Name: "i", Key: []KeyColumn{{Name: "id", Type: Int64}}},
		{Name: "c", Key: []KeyColumn{{Name: "a", Type: String}, {Name: "b", Type: Int64}}},
	} {
		tb, err := db.CreateTable(def)
		if err != nil {
			t.Fatal(err)
		}
		keyOf := func(i int) Key {
			switch def.Name {
			case "s":
				return Key{fmt.Sprintf("k%d", i)}
			case "i":
				return Key{int64(i*255 - 500)} // 0xff bytes in the tuple's last byte
			}
			return Key{"same", int64(i)} // one engine prefix for every key
		}
		const keys, versions = 7, 12
		// Half of every key's versions in table files, half in the memtable.
		for half := range 2 {
			w, err := db.BeginWrite(sealed.Key{})
			if err != nil {
				t.Fatal(err)
			}
			for i := range keys {
				k := keyOf(i)
				tuple, _ := tb.AppendKey(nil, k)
				for v := half; v < versions; v += 2 {
					if err := w.Assert(tb, tb.NewVersion(k, tuple, int64(v*10), int64(v*10+10), w.AllocSK(tb), Attrs{"v": int64(v)})); err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := w.Commit(); err != nil {
				t.Fatal(err)
			}
			if half == 0 {
				if err := db.Compact(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
		}
		scan := func(where string) {
			s, err := db.Snapshot()
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			for _, valid := range []int64{0, 55, 115} {
				n := 0
				for v, err := range s.ScanAt(tb, Span{}, valid, Infinity) {
					if err != nil {
						t.Fatal(err)
					}
					if v.ValidFrom > valid || valid >= v.ValidTo {
						t.Fatalf("%s: version %+v is not in effect at %d", def.Name, v, valid)
					}
					n++
				}
				if n != keys {
					t.Fatalf("%s at %d, %s: %d keys, want %d", def.Name, valid, where, n, keys)
				}
			}
		}
		scan("in the memtable and table files")
		if err := db.Compact(context.Background()); err != nil {
			t.Fatal(err)
		}
		scan("in table files")
		if rep, err := Verify(db); err != nil || !rep.OK() {
			t.Fatal(rep, err)
		}
	}
}

// TestValuesInPlace checks that no table the store writes keeps values in
// separate value blocks (applyLayoutOptions): not a flush, not a compaction,
// not an ingested table, although every key below shares its prefix with the
// key before it, which is when Pebble would move a value out.
func TestValuesInPlace(t *testing.T) {
	db, err := Open(t.TempDir(), Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tb, err := db.CreateTable(TableDef{Name: "dim", Key: []KeyColumn{{Name: "id", Type: String}}})
	if err != nil {
		t.Fatal(err)
	}
	tuple, _ := tb.AppendKey(nil, Key{"k"})
	for c := 0; c < 50; c++ { // 50 transactions, each rewriting all ten versions
		w, err := db.BeginWrite(sealed.Key{})
		if err != nil {
			t.Fatal(err)
		}
		for v := 0; v < 10; v++ {
			if c > 0 {
				cur, _, err := w.Snapshot().VersionAt(tb, tuple, int64(v*100), Infinity)
				if err != nil {
					t.Fatal(err)
				}
				if err := w.Retire(tb, cur); err != nil {
					t.Fatal(err)
				}
			}
			ver := tb.NewVersion(Key{"k"}, tuple, int64(v*100), int64(v*100+100), w.AllocSK(tb), Attrs{"v": int64(v), "c": int64(c)})
			if err := w.Assert(tb, ver); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	if rep, err := Verify(db); err != nil || !rep.OK() {
		t.Fatal(rep, err)
	}
	checkNoValueBlocks(t, db)

	// An ingested table (bulk.go), in a store of its own.
	other, err := Open(t.TempDir(), Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	var i int
	err = other.engine.(*bpebble.Engine).IngestSorted(t.TempDir(), func() (engine.Write, bool, error) {
		if i == 100 {
			return engine.Write{}, false, nil
		}
		i++
		key := layout.HistoryKeys.Key(nil, 7, tuple, int64(1000-i), 5) // one prefix, 100 suffixes, newest valid_from first
		return engine.Write{Key: key, Value: []byte("a value Pebble would move")}, true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	checkNoValueBlocks(t, other)
}

func checkNoValueBlocks(t *testing.T, db *DB) {
	t.Helper()
	m := db.engine.(*bpebble.Engine).Metrics()
	var tables int64
	var valueBlocks uint64
	for _, l := range m.Levels {
		tables += l.TablesCount
		valueBlocks += l.Additional.ValueBlocksSize + l.Additional.BytesWrittenValueBlocks
	}
	if tables == 0 {
		t.Fatal("no tables written")
	}
	if valueBlocks != 0 {
		t.Fatalf("%d bytes of value blocks in %d tables; want values in place", valueBlocks, tables)
	}
}

// A keySkipper learns from its probes how many steps leave a key: after a run
// of keys with ten records each it steps over all of them, after a run of
// keys with sixty it goes back to nextsBeforeSeek steps and a NextPrefix; and
// whatever it learned, every skip lands on the next key's first record, so a
// scan over keys of mixed history lengths reads every key once, with the
// version in effect.
func TestKeySkipperLearnsHistoryLengths(t *testing.T) {
	db, err := Open(t.TempDir(), Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tb, err := db.CreateTable(TableDef{Name: "s", Key: []KeyColumn{{Name: "id", Type: String}}})
	if err != nil {
		t.Fatal(err)
	}
	const run = 2*probeEvery + 88 // keys per run of equal lengths: three probes each
	lengths := make([]int, 3*run)
	for i := range lengths {
		switch {
		case i < run:
			lengths[i] = 10
		case i < 2*run:
			lengths[i] = 60
		default:
			lengths[i] = 1 + (i*7919)%(2*maxSkipSteps) // around the steps a skip makes
		}
	}
	keyOf := func(i int) Key { return Key{fmt.Sprintf("k%05d", i)} }
	w, err := db.BeginWrite(sealed.Key{})
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range lengths {
		k := keyOf(i)
		tuple, _ := tb.AppendKey(nil, k)
		for v := range n {
			if err := w.Assert(tb, tb.NewVersion(k, tuple, int64(v*10), int64(v*10+10), w.AllocSK(tb), Attrs{"v": int64(v)})); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := db.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	s, err := db.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	lower, upper := Span{}.bounds(layout.CurrentKeys, tb.ID)
	it, err := s.newIter(lower, upper)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var k keySkipper
	ok := it.First()
	for i := range lengths {
		if !ok {
			t.Fatalf("iterator ended before key %d", i)
		}
		keyPfx, from, err := layout.CurrentKeys.Split(it.Key(), len(lower))
		if err != nil {
			t.Fatal(err)
		}
		want, _ := tb.AppendKey(nil, keyOf(i))
		if !bytes.Equal(keyPfx[len(lower):], want) || from != int64(lengths[i]-1)*10 {
			t.Fatalf("skip %d landed on key %x from %d, want key %x from %d", i, keyPfx[len(lower):], from, want, (lengths[i]-1)*10)
		}
		ok = k.skip(it, bytes.Clone(keyPfx), false)
		switch i {
		case run - 1: // ten records: nine left after the newest, the next key at the tenth step
			if k.steps != 12 {
				t.Errorf("after keys of ten records: %d steps, want 12", k.steps)
			}
		case 2*run - 1:
			if k.steps != nextsBeforeSeek {
				t.Errorf("after keys of sixty records: %d steps, want %d", k.steps, nextsBeforeSeek)
			}
		}
	}
	if ok {
		t.Fatalf("iterator past the last key stands on %x", it.Key())
	}
	if err := it.Error(); err != nil {
		t.Fatal(err)
	}

	for _, valid := range []int64{0, 45, 95, 155, 305, 1000} {
		n := 0
		for v, err := range s.ScanAt(tb, Span{}, valid, Infinity) {
			if err != nil {
				t.Fatal(err)
			}
			for n < len(lengths) && int64(lengths[n])*10 <= valid {
				n++ // no version of key n at valid
			}
			if n == len(lengths) || fmt.Sprint(v.Key) != fmt.Sprint(keyOf(n)) || v.ValidFrom != valid/10*10 || v.Attrs["v"] != valid/10 {
				t.Fatalf("valid %d: read %v from %d (%v), want key %d", valid, v.Key, v.ValidFrom, v.Attrs, n)
			}
			n++
		}
		for n < len(lengths) && int64(lengths[n])*10 <= valid {
			n++
		}
		if n != len(lengths) {
			t.Fatalf("valid %d: scan ended before key %d", valid, n)
		}
	}
}
