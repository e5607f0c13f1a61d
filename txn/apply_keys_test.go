package txn_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/bitempo/bitempo/internal/testutil"
	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// TestKeyBatchSameAsApply applies the same random batches (shuffled, with
// duplicates, conflicts, deletes, late events, a replay, an invalid event and
// a too-late event) with Apply on one store and key by key (KeyBatch, flushing
// between keys with a tiny spill budget, so the commit is an ingestion) on its
// twin. Both stores run on the same clock: every result, every error and every
// stored byte must be the same, and both verify clean.
func TestKeyBatchSameAsApply(t *testing.T) {
	for seed := range uint64(12) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { testKeyBatchSameAsApply(t, seed) })
	}
}

func testKeyBatchSameAsApply(t *testing.T, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 11))
	def := store.TableDef{Name: "t", Kind: store.Changes, Key: []store.KeyColumn{{Name: "k", Type: store.String}}}
	if r.IntN(2) == 0 {
		def.TrackExcept = []string{"y"}
	}
	def.IgnoreNulls = r.IntN(2) == 0
	def.Granularity = []int64{0, 0, 5}[r.IntN(3)]
	def.Lateness = []int64{0, 0, 30}[r.IntN(3)]
	keys := 5 + r.IntN(60)
	event := func(lo, hi int64) txn.Event {
		e := txn.Event{Key: store.Key{fmt.Sprintf("k%03d", r.IntN(keys))}, At: lo + r.Int64N(hi-lo), Seq: r.Int64N(3), Op: txn.OpUpsert}
		if r.IntN(5) == 0 {
			e.Op = txn.OpDelete
		} else {
			e.Attrs = store.Attrs{"x": int64(r.IntN(3))}
			if r.IntN(3) > 0 {
				e.Attrs["y"] = []string{"a", "b", "c"}[r.IntN(3)]
			}
			if r.IntN(6) == 0 {
				e.Attrs["x"] = nil
			}
		}
		return e
	}
	batch := func(n int, lo, hi int64) []txn.Event {
		var evs []txn.Event
		for range n {
			e := event(lo, hi)
			evs = append(evs, e)
			if r.IntN(6) == 0 { // a duplicate, later in the batch
				evs = append(evs, e)
			}
		}
		r.Shuffle(len(evs), func(i, j int) { evs[i], evs[j] = evs[j], evs[i] })
		return evs
	}
	b1 := batch(400, 0, 100)
	b2 := batch(300, 60, 200) // late against b1 and later
	b3 := batch(50, 150, 250)
	b3[len(b3)/2].SeqNull = true // invalid: rejected whole
	b4 := batch(100, 180, 260)
	b4 = append(b4, txn.Event{Key: b4[0].Key, At: 0, Op: txn.OpDelete}) // too late with a horizon
	b5 := batch(200, 0, 300)
	batches := []struct {
		id  string
		evs []txn.Event
	}{{"b1", b1}, {"b2", b2}, {"b1", b2}, {"b3", b3}, {"b4", b4}, {"b5", b5}}

	// Both stores read one clock, set per batch: a rolled-back batch may have
	// read it once more in one store than in the other.
	now := int64(1_700_000_000_000_000)
	open := func() *store.DB {
		dir := filepath.Join(t.TempDir(), "db")
		db, err := store.Open(dir, store.Options{NoSync: true, Clock: func() int64 { return now }})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		if _, err := db.CreateTable(def); err != nil {
			t.Fatal(err)
		}
		return db
	}
	mem, keyed := open(), open()
	tbl, err := keyed.Table("t")
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range batches {
		now += 1000
		mres, merr := txn.Apply(mem, "t", b.id, b.evs)
		var kres txn.ApplyResult
		_, kerr := txn.Update(keyed, func(tx *txn.Tx) error {
			if err := tx.SpillTo(keyed.Dir(), 1_000); err != nil {
				return err
			}
			kb, err := tx.ApplyByKey("t", b.id)
			if err != nil {
				return err
			}
			if err := applySorted(tx, kb, tbl, b.evs, r); err != nil {
				return err
			}
			kres, err = kb.Finish()
			return err
		})
		if fmt.Sprint(merr) != fmt.Sprint(kerr) || mres != kres {
			t.Fatalf("batch %s: Apply gave %+v, %v\nKeyBatch gave %+v, %v", b.id, mres, merr, kres, kerr)
		}
		var ee *txn.EventError
		if merr != nil && !errors.As(kerr, &ee) {
			t.Fatalf("batch %s: KeyBatch's error is not an *EventError: %v", b.id, kerr)
		}
		switch {
		case b.id == "b3" && !errors.Is(merr, txn.ErrInvalidEvent):
			t.Fatalf("b3 holds an invalid event, but Apply gave %v", merr)
		case b.id == "b4" && def.Lateness > 0 && !errors.Is(merr, txn.ErrTooLate):
			t.Fatalf("b4 holds a too-late event, but Apply gave %v", merr)
		case b.id == "b4" && def.Lateness == 0 && merr != nil:
			t.Fatalf("b4 without a horizon: %v", merr)
		}
		if merr == nil && !kres.Replayed && kres.Accepted == 0 {
			t.Fatalf("batch %s accepted nothing: the test is too weak", b.id)
		}
		mustSameBytes(t, mem, keyed)
	}
	testutil.Verify(t, mem)
	testutil.Verify(t, keyed)
}

// applySorted hands the events of a batch to kb key by key, in key encoding
// order, flushing after some keys.
func applySorted(tx *txn.Tx, kb *txn.KeyBatch, tbl *store.Table, evs []txn.Event, r *rand.Rand) error {
	type ev struct {
		tuple []byte
		pos   int
	}
	order := make([]ev, len(evs))
	for i := range evs {
		tuple, err := tbl.AppendKey(nil, evs[i].Key)
		if err != nil {
			return err
		}
		order[i] = ev{tuple, i}
	}
	slices.SortStableFunc(order, func(a, b ev) int { return bytes.Compare(a.tuple, b.tuple) })
	for lo := 0; lo < len(order); {
		hi := lo
		var group []txn.Event
		var pos []int
		for ; hi < len(order) && bytes.Equal(order[hi].tuple, order[lo].tuple); hi++ {
			group = append(group, evs[order[hi].pos])
			pos = append(pos, order[hi].pos)
		}
		if err := kb.Key(group, pos); err != nil {
			return err
		}
		if r.IntN(3) == 0 {
			if err := tx.Flush(); err != nil {
				return err
			}
		}
		lo = hi
	}
	return nil
}

// mustSameBytes fails unless both stores hold the same keys and values.
func mustSameBytes(t *testing.T, a, b *store.DB) {
	t.Helper()
	dump := func(db *store.DB) []store.RawKV {
		s, err := db.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		var out []store.RawKV
		for kv, err := range s.RawScan(nil, nil) {
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Equal(kv.Key, []byte("\x01erase_secret")) {
				continue // random per store
			}
			out = append(out, kv)
		}
		return out
	}
	x, y := dump(a), dump(b)
	for i := range min(len(x), len(y)) {
		if !bytes.Equal(x[i].Key, y[i].Key) || !bytes.Equal(x[i].Value, y[i].Value) {
			t.Fatalf("record %d differs:\n%x = %x\n%x = %x", i, x[i].Key, x[i].Value, y[i].Key, y[i].Value)
		}
	}
	if len(x) != len(y) {
		t.Fatalf("%d records against %d", len(x), len(y))
	}
}

// TestKeyBatchMisuse checks the contract's refusals: keys out of order, events
// of two keys in one call, a flushed key touched again, and a transaction
// whose batch failed cannot commit even if the function returns nil.
func TestKeyBatchMisuse(t *testing.T) {
	db, err := store.Open(filepath.Join(t.TempDir(), "db"), store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.CreateTable(store.TableDef{Name: "t", Kind: store.Changes, Key: []store.KeyColumn{{Name: "k", Type: store.String}}}); err != nil {
		t.Fatal(err)
	}
	up := func(k string, at int64) txn.Event {
		return txn.Event{Key: store.Key{k}, At: at, Op: txn.OpUpsert, Attrs: store.Attrs{"x": int64(1)}}
	}
	for name, fn := range map[string]func(tx *txn.Tx, kb *txn.KeyBatch) error{
		"order": func(tx *txn.Tx, kb *txn.KeyBatch) error {
			if err := kb.Key([]txn.Event{up("b", 1)}, []int{0}); err != nil {
				return err
			}
			return kb.Key([]txn.Event{up("a", 1)}, []int{1})
		},
		"two keys": func(tx *txn.Tx, kb *txn.KeyBatch) error {
			return kb.Key([]txn.Event{up("a", 1), up("b", 1)}, []int{0, 1})
		},
		"flushed": func(tx *txn.Tx, kb *txn.KeyBatch) error {
			if err := kb.Key([]txn.Event{up("a", 1)}, []int{0}); err != nil {
				return err
			}
			if err := tx.Flush(); err != nil {
				return err
			}
			if _, err := kb.Finish(); err != nil {
				return err
			}
			_, err := tx.Apply("t", "again", []txn.Event{up("a", 2)})
			return err
		},
	} {
		_, err := txn.Update(db, func(tx *txn.Tx) error {
			kb, err := tx.ApplyByKey("t", name)
			if err != nil {
				return err
			}
			return fn(tx, kb)
		})
		want := map[string]error{"order": txn.ErrKeyOrder, "two keys": txn.ErrKeyOrder, "flushed": txn.ErrKeyFlushed}[name]
		if !errors.Is(err, want) {
			t.Fatalf("%s: got %v, want %v", name, err, want)
		}
	}
	// A failed batch whose error the function swallows still rolls back.
	_, err = txn.Update(db, func(tx *txn.Tx) error {
		kb, err := tx.ApplyByKey("t", "bad")
		if err != nil {
			return err
		}
		if err := kb.Key([]txn.Event{up("a", 1)}, []int{0}); err != nil {
			return err
		}
		bad := up("b", 1)
		bad.SeqNull = true
		if err := kb.Key([]txn.Event{bad}, []int{1}); err != nil {
			return err
		}
		_, _ = kb.Finish()
		return nil
	})
	var ee *txn.EventError
	if !errors.As(err, &ee) || ee.Index != 1 || !errors.Is(err, txn.ErrInvalidEvent) {
		t.Fatalf("a failed batch committed or gave %v", err)
	}
	s, err := db.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tbl, _ := db.Table("t")
	if keys, err := s.ChangesKeys(tbl); err != nil || len(keys) != 0 {
		t.Fatalf("the failed batch left keys %v (%v)", keys, err)
	}
	testutil.Verify(t, db)
}
