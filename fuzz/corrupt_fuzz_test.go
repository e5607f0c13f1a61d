package fuzz_test

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"testing"

	"github.com/bitempo/bitempo/internal/sealed"

	"github.com/bitempo/bitempo/engine/pebble"
	"github.com/bitempo/bitempo/internal/storetest"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/layout"
	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// corruptAllocBound is the most the read phase of one FuzzStoreCorruption
// execution may allocate, in bytes: every read path, Verify, a decoded dump and
// a write transaction over a store of about 150 entries, each fuzzed value or
// key at most corruptMaxLen bytes. A typical run allocates about 0.7 MiB; a decoder
// that trusted a length read from a fuzzed value could allocate up to 4 GiB.
const corruptAllocBound = 16 << 20

// corruptMaxLen bounds each fuzzed value or key.
const corruptMaxLen = 512

var corruptKeys = []string{"k0", "k1", "k2"}

// corruptBase returns the raw contents of a small store with history in a
// periods table (string keys, tracked subset, retired records), a periods table
// with integer keys, and a changes table with its event log and batch ids.
var corruptBase = sync.OnceValues(func() ([]store.RawKV, error) {
	now := int64(100)
	db, err := store.Open("base", store.Options{InMemory: true, Clock: func() int64 { now++; return now }})
	if err != nil {
		return nil, err
	}
	defer db.Close()
	for _, def := range []store.TableDef{
		{Name: "p", Key: []store.KeyColumn{{Name: "id", Type: store.String}}, Track: []string{"a"},
			Compare: map[string]store.CompareOptions{"a": {Trim: true}}},
		{Name: "n", Key: []store.KeyColumn{{Name: "id", Type: store.Int64}}},
		{Name: "c", Key: []store.KeyColumn{{Name: "id", Type: store.String}}, Kind: store.Changes, MixedTypes: true},
	} {
		if _, err := db.CreateTable(def); err != nil {
			return nil, err
		}
	}
	for i := range 4 {
		_, err := txn.Update(db, func(tx *txn.Tx) error {
			for j, k := range corruptKeys {
				at := int64(10*i + j)
				if _, err := tx.Upsert("p", store.Key{k}, store.Attrs{"a": fmt.Sprint(i % 3), "b": []byte{byte(i)}, "f": float64(i) / 3}, at); err != nil {
					return err
				}
				d, err := encoding.NewDecimal(int64(1234*i-2000*j), 2) // decimal values to corrupt too
				if err != nil {
					return err
				}
				if err := tx.Put("n", store.Key{int64(j)}, store.Attrs{"x": int64(i), "s": k, "d": d}, at, at+15); err != nil {
					return err
				}
			}
			if i == 2 {
				if err := tx.Delete("p", store.Key{"k1"}, 5, 12); err != nil {
					return err
				}
			}
			events := []txn.Event{
				{Key: store.Key{"k0"}, At: int64(i), Op: txn.OpUpsert, Attrs: store.Attrs{"v": int64(i % 2)}},
				{Key: store.Key{"k1"}, At: int64(5 - i), Op: txn.OpUpsert, Attrs: store.Attrs{"v": "x"}},
			}
			if i == 3 {
				events = append(events, txn.Event{Key: store.Key{"k1"}, At: 9, Op: txn.OpDelete})
			}
			_, err := tx.Apply("c", fmt.Sprintf("batch-%d", i), events)
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	s, err := db.Snapshot()
	if err != nil {
		return nil, err
	}
	defer s.Close()
	var out []store.RawKV
	for kv, err := range s.RawScan(nil, nil) {
		if err != nil {
			return nil, err
		}
		out = append(out, kv)
	}
	return out, nil
})

// corruption is what a fuzz input does to the base store: replaced, truncated
// or bit-flipped values and keys, deleted entries and added ones.
type corruption struct {
	entries []store.RawKV
}

// corrupt applies the fuzz input to a copy of base: a count byte (1 to 4
// corruptions), then for each a two-byte entry index, a mode byte and its
// operands.
func corrupt(base []store.RawKV, data []byte) corruption {
	r := &fuzzBytes{b: data}
	c := corruption{entries: append([]store.RawKV(nil), base...)}
	for range 1 + int(r.byte())%4 {
		i := (int(r.byte())<<8 | int(r.byte())) % len(c.entries)
		e := &c.entries[i]
		switch r.byte() % 9 {
		case 0, 1: // replace the value
			e.Value = r.bytes(int(r.byte()) * 2)
		case 2: // truncate the value
			if len(e.Value) > 0 {
				e.Value = e.Value[:int(r.byte())%len(e.Value)]
			}
		case 3: // flip one bit of the value
			if len(e.Value) > 0 {
				e.Value = flipBit(e.Value, int(r.byte())<<8|int(r.byte()))
			}
		case 4: // replace the key after its keyspace and table id
			keep := min(len(e.Key), 5)
			e.Key = append(bytes.Clone(e.Key[:keep]), r.bytes(int(r.byte()))...)
		case 5: // truncate the key, keeping its keyspace byte
			e.Key = e.Key[:1+int(r.byte())%len(e.Key)]
		case 6: // flip one bit of the key after its keyspace byte
			if len(e.Key) > 1 {
				e.Key = append(e.Key[:1:1], flipBit(e.Key[1:], int(r.byte())<<8|int(r.byte()))...)
			}
		case 7: // delete the entry
			e.Value = nil
		case 8: // add an entry with a fuzzed key in a keyspace of the store
			keyspaces := layout.Keyspaces()
			ks := keyspaces[int(r.byte())%len(keyspaces)]
			key := append([]byte{ks}, r.bytes(int(r.byte())%64)...)
			c.entries = append(c.entries, store.RawKV{Key: key, Value: r.bytes(int(r.byte()))})
		}
	}
	return c
}

// recordsBroken reports whether a record (current or history keyspace) of the
// store does not decode. Record values name attributes by ordinals of their
// table's names, so only the store, which has them, can tell.
func recordsBroken(t *testing.T, db *store.DB) bool {
	s, err := db.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for kv, err := range s.RawScan([]byte{0x10}, []byte{0x12}) {
		if err != nil {
			return true
		}
		if db.DecodeEntry(kv).Err != nil {
			return true
		}
	}
	return false
}

// flipBit returns a copy of b with bit n (modulo its length) flipped.
func flipBit(b []byte, n int) []byte {
	out := bytes.Clone(b)
	out[(n/8)%len(out)] ^= 1 << (n % 8)
	return out
}

// fuzzBytes reads fuzz input; past its end it reads zeros.
type fuzzBytes struct{ b []byte }

func (r *fuzzBytes) byte() byte {
	if len(r.b) == 0 {
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *fuzzBytes) bytes(n int) []byte {
	n = min(n, len(r.b), corruptMaxLen)
	out := bytes.Clone(r.b[:n])
	r.b = r.b[n:]
	if out == nil {
		out = []byte{}
	}
	return out
}

// FuzzStoreCorruption builds a small store, replaces some of its stored values
// and keys with fuzzed bytes through a raw write (store.DB.RawWrite), reopens it,
// and runs every read path on it: query.Get at several points, Audit, History
// and Snapshot of every table, store.Verify, a decoded raw dump, and a write
// transaction. Each must return data or an error, never panic, and together
// they may allocate at most corruptAllocBound bytes. When a record value no
// longer decodes, Verify must report a problem.
func FuzzStoreCorruption(f *testing.F) {
	for _, seed := range corruptSeeds {
		f.Add(seed)
	}
	f.Fuzz(corruptExec)
}

// corruptExec is one execution of FuzzStoreCorruption.
func corruptExec(t *testing.T, data []byte) {
	base, err := corruptBase()
	if err != nil {
		t.Fatal(err)
	}
	c := corrupt(base, data)
	mem := vfs.NewMem()
	quiet := slog.New(slog.DiscardHandler)
	db, err := storetest.Open("db", pebble.Options{FS: mem, CacheSize: 1 << 20, MemTableSize: 1 << 20}, store.Options{NoSync: true, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.RawWrite(sealed.Key{}, c.entries...); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = storetest.Open("db", pebble.Options{FS: mem, CacheSize: 1 << 20, MemTableSize: 1 << 20}, store.Options{NoSync: true, MustExist: true, Logger: quiet})
	if err != nil {
		if !errors.Is(err, store.ErrCorrupt) && !errors.Is(err, store.ErrNotBitempo) && !errors.Is(err, store.ErrFormat) {
			t.Fatalf("reopening a corrupt store: untyped error %v", err)
		}
		return
	}
	defer db.Close()
	wantBroken := recordsBroken(t, db)
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	broken := readEverything(t, db)
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	if n := after.TotalAlloc - before.TotalAlloc; n > corruptAllocBound {
		t.Fatalf("reading the corrupt store allocated %d bytes, bound %d", n, corruptAllocBound)
	}
	if wantBroken && !broken {
		t.Fatal("a record value does not decode, but Verify reports no problem")
	}
}

// readEverything runs every read path over the store and reports whether
// Verify found a problem. Errors are expected; panics fail the fuzz target.
func readEverything(t *testing.T, db *store.DB) (verifyFoundProblems bool) {
	drain := func(seq func(func(store.Version, error) bool)) {
		for _, err := range seq {
			if err != nil {
				return
			}
		}
	}
	for _, tbl := range db.Tables() {
		for i, k := range corruptKeys {
			var key store.Key = store.Key{k}
			if tbl.Key[0].Type == store.Int64 {
				key = store.Key{int64(i)}
			}
			for _, at := range []query.AsOf{{Valid: 0}, {Valid: 11}, {Valid: 25, Tx: 103}, {Valid: store.NegInfinity, Tx: 1}, {Valid: 7, Tx: store.Infinity}} {
				_, _ = query.Get(db, tbl.Name, key, at, query.GetOptions{})
			}
			drain(query.Audit(db, tbl.Name, key, query.AuditOptions{}))
			drain(query.History(db, tbl.Name, key, store.NegInfinity, store.Infinity, query.HistoryOptions{Tx: 102}))
		}
		drain(query.Snapshot(db, tbl.Name, query.AsOf{Valid: 12}, query.KeyRange{}, query.SnapshotOptions{}))
		drain(query.Snapshot(db, tbl.Name, query.AsOf{Valid: 3, Tx: 102}, query.KeyRange{}, query.SnapshotOptions{}))
		// The change feed decodes the transaction log; GetBySK the sk index;
		// Resolve merges the current index (and history, at a past Tx).
		for _, err := range query.Changes(db, tbl.Name, 0, store.Infinity, "", query.ChangesOptions{}) {
			if err != nil {
				break
			}
		}
		_, _ = query.ChangesPage(db, tbl.Name, 101, 104, 2, "", query.ChangesOptions{})
		for sk := range uint64(8) {
			_, _ = query.GetBySK(db, tbl.Name, sk, store.Infinity, query.GetOptions{})
			_, _ = query.GetBySK(db, tbl.Name, sk, 103, query.GetOptions{})
		}
		var facts []query.Fact
		for i, k := range corruptKeys {
			var key store.Key = store.Key{k}
			if tbl.Key[0].Type == store.Int64 {
				key = store.Key{int64(i)}
			}
			facts = append(facts, query.Fact{Key: key, At: 11}, query.Fact{Key: key, At: 25, Tx: 103})
		}
		_, _ = query.Resolve(db, tbl.Name, facts, query.ResolveOptions{Miss: query.MissNull, Attrs: true})
	}
	rep, err := store.Verify(db)
	if err == nil {
		verifyFoundProblems = !rep.OK()
		_ = rep.String()
	}
	if s, err := db.Snapshot(); err == nil {
		for kv, err := range s.RawScan(nil, nil) {
			if err != nil {
				break
			}
			e := db.DecodeEntry(kv)
			_ = fmt.Sprint(e.Keyspace, e.Key, e.KeyFields, e.Value, e.Err)
		}
		_ = s.Close()
	}
	_, _ = txn.Update(db, func(tx *txn.Tx) error {
		if _, err := tx.Upsert("p", store.Key{"k0"}, store.Attrs{"a": "9"}, 12); err != nil {
			return err
		}
		return tx.Delete("n", store.Key{int64(1)}, 0, 5)
	})
	return verifyFoundProblems || err != nil
}

// corruptSeeds are the in-code seeds; testdata/fuzz/FuzzStoreCorruption holds
// the checked-in corpus.
var corruptSeeds = [][]byte{
	{0, 0, 40, 0, 8, 0x91, 0x01, 0xc0},          // one record value replaced by a short array
	{1, 0, 60, 2, 3, 0, 61, 3, 0, 77},           // truncate one value, flip a bit in another
	{0, 0, 1, 4, 6, 0xff, 0, 0, 0, 0, 0},        // a catalog key moved
	{2, 0, 20, 5, 0, 90, 0, 0, 100, 6, 4, 3, 1}, // deletions and an added record key
}
