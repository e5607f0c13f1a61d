package store

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/bitempo/bitempo/encoding"
)

// The layout's keys split where layout.go says: a record or event key after
// its tuple's first component, an sk-index key after the sk; anything else,
// and any key without a suffix, is all prefix.
func TestSplitKey(t *testing.T) {
	tuple := func(c ...any) []byte {
		b, err := encoding.AppendKey(nil, c)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	one := tuple("k\x00y")
	two := tuple(int64(-3), "b")
	for _, tid := range []uint32{7, orderedOneByte - 1, orderedOneByte, 300, 1 << 20, 1<<32 - 1} {
		h := len(tablePrefix(nil, ksCurrent, tid)) // ks | tid: 2 to 6 bytes
		cases := []struct {
			key    []byte
			prefix int
		}{
			{currentKeys.key(nil, tid, one, 10, 0), h + len(one)},
			{currentKeys.keyPrefix(nil, tid, one), h + len(one)},
			{currentKeys.appendValid(currentKeys.keyPrefix(nil, tid, one), 3), h + len(one)},
			{historyKeys.key(nil, tid, one, 10, 20), h + len(one)},
			{historyKeys.key(nil, tid, two, 10, 20), h + 9},
			{currentKeys.keyPrefix(nil, tid, two), h + 9},
			{eventKey.key(nil, tid, one, 1, 2), h + len(one)},
			{skIndex.key(nil, tid, 99, 5), h + 1},
			{skIndex.prefix(nil, tid, 99), h + 1},
			{skIndex.key(nil, tid, 1<<40, 5), h + 7},
			{skIndex.key(nil, tid, 1<<64-1, 5), h + 9},
			{skIndex.prefix(nil, tid, 300), h + 3},
			{skIndex.prefix(nil, tid, 300)[:h+2], h + 2}, // truncated sk: all prefix
			{txLogKey.key(nil, tid, 5, 1), h + 8 + 1},
			{txLogKey.key(nil, tid, 5, 1<<20), h + 8 + 4},
			{checkpointKey(tid, one), h + len(one)},
			{currentKeys.tablePrefix(nil, tid), h},
			{[]byte{ksCurrent}, 1},
			{append(currentKeys.tablePrefix(nil, tid), 0x30, 'a', 0x00), h + 3},        // unterminated: all prefix
			{append(currentKeys.tablePrefix(nil, tid), 0x30, 0x00, 0x05, 0x01), h + 4}, // bad escape
			{append(currentKeys.tablePrefix(nil, tid), 0x20, 1, 2, 3), h + 4},          // short integer
			{append(currentKeys.tablePrefix(nil, tid), 0x99, 1, 2, 3), h + 4},          // unknown tag
		}
		for _, c := range cases {
			if got := splitKey(c.key); got != c.prefix {
				t.Errorf("tid %d: splitKey(%x) = %d, want %d", tid, c.key, got, c.prefix)
			}
		}
	}
	// A table id that is not an ordered uvarint in its only form makes the
	// whole key its prefix.
	for _, bad := range [][]byte{
		{ksCurrent, 0xf8, 0x05, 0x20, 0, 0, 0, 0, 0, 0, 0, 1, 1},    // 5 in a long form
		{ksCurrent, 0xf9, 0x00, 0xff, 0x20, 0, 0, 0, 0, 0, 0, 0, 1}, // leading zero byte
		{ksCurrent, 0xfb},                      // truncated
		{ksCurrent, 0xfc, 1, 2, 3, 4, 5, 0x20}, // over 32 bits
		{ksSKIndex, 0xf9, 0x01},
	} {
		if got := splitKey(bad); got != len(bad) {
			t.Errorf("splitKey(%x) = %d, want all prefix", bad, got)
		}
	}
}

// The ordered uvarint has one form per value, its forms sort as their values,
// none is a prefix of another, and a decoder refuses every other byte string.
func TestOrderedUvarint(t *testing.T) {
	vals := []uint64{0, 1, orderedOneByte - 1, orderedOneByte, 255, 256, 1<<16 - 1, 1 << 16, 1<<32 - 1, 1 << 32, 1<<56 - 1, 1 << 56, 1<<64 - 1}
	r := rand.New(rand.NewPCG(3, 4))
	for range 10_000 {
		vals = append(vals, r.Uint64()>>r.IntN(64))
	}
	for i, v := range vals {
		b := appendOrdered(nil, v)
		got, n := decodeOrdered(append(bytes.Clone(b), 0x42))
		if got != v || n != len(b) {
			t.Fatalf("%d: form %x decodes as %d (%d bytes)", v, b, got, n)
		}
		if _, n := decodeOrdered(b[:len(b)-1]); n != 0 {
			t.Fatalf("%d: truncated form %x decodes", v, b[:len(b)-1])
		}
		for _, w := range vals[max(0, i-20):i] {
			c := appendOrdered(nil, w)
			if bytes.Compare(b, c) != cmp.Compare(v, w) {
				t.Fatalf("forms %x (%d) and %x (%d) out of order", b, v, c, w)
			}
			if v != w && (bytes.HasPrefix(b, c) || bytes.HasPrefix(c, b)) {
				t.Fatalf("form %x (%d) and %x (%d): one is a prefix of the other", b, v, c, w)
			}
		}
	}
	// Every two-byte string either decodes to a value whose form it is, or
	// is refused.
	for x := range 1 << 16 {
		b := []byte{byte(x >> 8), byte(x)}
		v, n := decodeOrdered(b)
		if n != 0 && !bytes.Equal(appendOrdered(nil, v), b[:n]) {
			t.Fatalf("%x decodes as %d, whose form is %x", b, v, appendOrdered(nil, v))
		}
	}
}

// Pebble's contract for Split (base.Comparer's docs), on prefixes and
// suffixes of the layout's shapes, and on random bytes: bytewise order is the
// order of (prefix, suffix) pairs, and a prefix splits as itself.
// (pebble.CheckComparer also requires that removing leading bytes from a
// prefix leaves a prefix, for Pebble's synthetic prefixes, which bitempo does
// not use and which no keyspace-dependent split can satisfy.)
func TestLayoutComparer(t *testing.T) {
	var prefixes [][]byte
	for _, c := range []any{"a", "a\x00", "", "ab", int64(1), uint64(1 << 40), []byte{0, 0xff}} {
		tuple, err := encoding.AppendKey(nil, []any{c})
		if err != nil {
			t.Fatal(err)
		}
		prefixes = append(prefixes, currentKeys.keyPrefix(nil, 1, tuple), historyKeys.keyPrefix(nil, 2, tuple), eventKey.keyPrefix(nil, 1, tuple),
			currentKeys.keyPrefix(nil, 300, tuple), historyKeys.keyPrefix(nil, 1<<20, tuple), eventKey.keyPrefix(nil, 1<<32-1, tuple))
	}
	var suffixes [][]byte
	for _, v := range []int64{1 << 62, 1, 0, -1, -1 << 62} { // newest first: ascending bytes
		suffixes = append(suffixes, encoding.AppendTimeDesc(nil, v))
	}
	for _, p := range prefixes {
		if n := layoutComparer.Split(p); n != len(p) {
			t.Fatalf("prefix %x splits at %d", p, n)
		}
		for i, s := range suffixes {
			k := append(bytes.Clone(p), s...)
			if n := layoutComparer.Split(k); n != len(p) {
				t.Fatalf("%x (prefix %x, suffix %x) splits at %d", k, p, s, n)
			}
			if layoutComparer.Compare(p, k) >= 0 {
				t.Fatalf("prefix %x does not sort before %x", p, k)
			}
			if i > 0 && layoutComparer.Compare(append(bytes.Clone(p), suffixes[i-1]...), k) >= 0 {
				t.Fatalf("suffixes out of order under prefix %x", p)
			}
		}
	}
	for _, p := range append(prefixes, skIndex.prefix(nil, 1, 1<<40-1), skIndex.prefix(nil, 1, 255), skIndex.prefix(nil, 1<<32-1, 1<<64-1), []byte{ksMeta, 'x'}) {
		succ := layoutComparer.ImmediateSuccessor(nil, p)
		if n := layoutComparer.Split(succ); n != len(succ) || bytes.Compare(p, succ) >= 0 {
			t.Fatalf("successor %x of prefix %x: split %d, order %d", succ, p, n, bytes.Compare(p, succ))
		}
		if layoutComparer.Split(p) == len(p) && len(p) > 5 && splitKey(append(bytes.Clone(p), 0)) == len(p) {
			for _, sfx := range suffixes {
				if k := append(bytes.Clone(p), sfx...); bytes.Compare(k, succ) >= 0 {
					t.Fatalf("successor %x of prefix %x sorts before its key %x", succ, p, k)
				}
			}
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte{0x00, 0x01, 0x10, 0x11, 0x12, 0x20, 0x21, 0x30, 0x31, 0xf8, 0xf9, 0xff, 'a'}
	// Table ids of every width, and byte strings that are no table id.
	tids := [][]byte{{0}, {1}, {orderedOneByte - 1}, {0xf8, 0xf8}, {0xf8, 0xff}, {0xf9, 0x01, 0x00},
		{0xfb, 0xff, 0xff, 0xff, 0xff}, {0xf8, 0x05}, {0xf9, 0x00, 0x01}, {0xf9}, {0xfa, 0x01}, {0xfc, 1, 2, 3, 4, 5}}
	gen := func() []byte {
		k := append([]byte{[]byte{ksCurrent, ksHistory, ksSKIndex, ksEvents, ksMeta}[r.IntN(5)]}, tids[r.IntN(len(tids))]...)
		for range r.IntN(24) {
			k = append(k, alphabet[r.IntN(len(alphabet))])
		}
		return k
	}
	for range 200_000 {
		a, b := gen(), gen()
		an, bn := splitKey(a), splitKey(b)
		pair := bytes.Compare(a[:an], b[:bn])
		if pair == 0 {
			pair = bytes.Compare(a[an:], b[bn:])
		}
		if pair != bytes.Compare(a, b) {
			t.Fatalf("order of %x (split %d) and %x (split %d): bytewise %d, by (prefix, suffix) %d", a, an, b, bn, bytes.Compare(a, b), pair)
		}
		if splitKey(a[:an]) != an {
			t.Fatalf("prefix %x of %x splits at %d", a[:an], a, splitKey(a[:an]))
		}
		// The successor of a's prefix is a prefix key after a.
		if succ := immediateSuccessor(nil, a[:an]); splitKey(succ) != len(succ) || (an < len(a) && bytes.Compare(a, succ) >= 0) {
			t.Fatalf("successor %x of the prefix of %x (split %d)", succ, a, an)
		}
	}
}

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
			w, err := db.BeginWrite()
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
		w, err := db.BeginWrite()
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
	err = other.engine.(*pebbleEngine).ingestSorted(t.TempDir(), func() (Write, bool, error) {
		if i == 100 {
			return Write{}, false, nil
		}
		i++
		key := historyKeys.key(nil, 7, tuple, int64(1000-i), 5) // one prefix, 100 suffixes, newest valid_from first
		return Write{Key: key, Value: []byte("a value Pebble would move")}, true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	checkNoValueBlocks(t, other)
}

func checkNoValueBlocks(t *testing.T, db *DB) {
	t.Helper()
	m := db.engine.(*pebbleEngine).db.Metrics()
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
