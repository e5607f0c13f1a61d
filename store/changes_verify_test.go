package store_test

import (
	"bytes"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/bitempo/bitempo/internal/sealed"

	"github.com/bitempo/bitempo/internal/testutil"
	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// TestVerifyChangesStreamsKeys checks the changes-table check, which reads a
// table's keys one at a time (store.Snapshot.ScanChangesKeys), on a table of
// 2,000 keys: it reports each planted derivation mismatch (an event the
// versions do not reflect, a checkpoint that claims logged events compacted,
// a key with only a checkpoint, a key with only versions) and nothing else,
// in key order; and its report equals what the check did before it streamed:
// every key with an event, a checkpoint or a current version, listed and
// sorted first, then each derived (store.VerifyChangesKey).
func TestVerifyChangesStreamsKeys(t *testing.T) {
	const keys = 2000
	db, err := store.Open("", store.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.CreateTable(store.TableDef{Name: "c", Kind: store.Changes, Key: []store.KeyColumn{{Name: "id", Type: store.String}}}); err != nil {
		t.Fatal(err)
	}
	tbl, _ := db.Table("c")
	var evs []txn.Event
	var tuples [][]byte
	tuple := func(id string) []byte {
		b, err := tbl.AppendKey(nil, store.Key{id})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for i := range keys {
		id := fmt.Sprintf("k%04d", i)
		for at := range int64(3) {
			evs = append(evs, txn.Event{Key: store.Key{id}, At: 10 * at, Op: txn.OpUpsert, Attrs: store.Attrs{"v": int64(i) + at}})
		}
		tuples = append(tuples, tuple(id))
	}
	if _, err := txn.Apply(db, "c", "b1", evs); err != nil {
		t.Fatal(err)
	}
	testutil.Verify(t, db)

	w, err := db.BeginWrite(sealed.Key{})
	if err != nil {
		t.Fatal(err)
	}
	plant := func(err error) {
		t.Helper()
		if err != nil {
			w.Abort()
			t.Fatal(err)
		}
	}
	plant(w.PutEvent(tbl, tuple("k0100"), store.LogEvent{At: 15, Op: store.EventUpsert, Attrs: store.Attrs{"v": int64(-1)}}))
	plant(w.PutCheckpoint(tbl, tuple("k1500"), store.Checkpoint{Through: 100}))
	plant(w.PutCheckpoint(tbl, tuple("k0700x"), store.Checkpoint{Through: 5, Open: true, From: 0, Attrs: store.Attrs{"v": int64(1)}}))
	only := tuple("k1999x")
	plant(w.Assert(tbl, tbl.NewVersion(store.Key{"k1999x"}, only, 0, store.Infinity, w.AllocSK(tbl), store.Attrs{"v": int64(1)})))
	plant(w.Commit())
	tuples = append(tuples, tuple("k0700x"), only)
	slices.SortFunc(tuples, bytes.Compare)

	rep, err := store.Verify(db)
	if err != nil {
		t.Fatal(err)
	}
	var got []store.Problem
	var mismatched []string
	for _, p := range rep.Problems {
		if p.Table == "c" {
			got = append(got, p)
		}
		if p.Invariant == 6 {
			mismatched = append(mismatched, p.Key.String())
		}
	}
	if want := []string{"k0100", "k0700x", "k1500", "k1999x"}; !slices.Equal(mismatched, want) || len(got) != len(rep.Problems) {
		t.Fatalf("invariant 6 problems for %v, want %v; report:\n%s", mismatched, want, rep)
	}

	s, err := db.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ref := &store.Report{}
	for _, tu := range tuples {
		if err := store.VerifyChangesKey(s, tbl, tu, ref); err != nil {
			t.Fatal(err)
		}
	}
	if !reflect.DeepEqual(got, ref.Problems) {
		t.Fatalf("streaming check:\n%v\nwant (keys listed first)\n%v", got, ref.Problems)
	}
}
