package store_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/bitempo/bitempo/engine"
	"github.com/bitempo/bitempo/engine/pebble"
	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// boundedEngine is an in-memory Pebble engine that bounds one commit as etcd
// does (engine.CommitLimiter), refusing a larger commit at Commit by its exact
// count of distinct keys and bytes, and counting the commits that reached it.
type boundedEngine struct {
	engine.Engine
	maxWrites, maxBytes int
	commits             int  // commits that reached Commit
	hide                bool // CommitLimits says there is no bound; Commit still refuses
}

func (e *boundedEngine) CommitLimits() (maxWrites, maxBytes int) {
	if e.hide {
		return 1 << 40, 1 << 40
	}
	return e.maxWrites, e.maxBytes
}

func (e *boundedEngine) Commit(writes []engine.Write, sync bool) error {
	e.commits++
	if keys, size := distinctWrites(writes); keys > e.maxWrites || size > e.maxBytes {
		return fmt.Errorf("%w: %d writes of %d bytes", engine.ErrCommitTooLarge, keys, size)
	}
	return e.Engine.Commit(writes, sync)
}

// distinctWrites counts the distinct keys of writes and the bytes of the last
// write of each.
func distinctWrites(writes []engine.Write) (keys, size int) {
	last := map[string]int{}
	for _, w := range writes {
		last[string(w.Key)] = len(w.Key) + len(w.Value)
	}
	for _, n := range last {
		size += n
	}
	return len(last), size
}

// openBounded opens a store with one table on a boundedEngine.
func openBounded(t *testing.T, maxWrites, maxBytes int) (*store.DB, *boundedEngine) {
	t.Helper()
	pe, err := pebble.Open("", pebble.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	e := &boundedEngine{Engine: pe, maxWrites: maxWrites, maxBytes: maxBytes}
	db, err := store.OpenEngine(e, "bounded", store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.CreateTable(store.TableDef{Name: "customers", Key: []store.KeyColumn{{Name: "id", Type: store.String}}}); err != nil {
		t.Fatal(err)
	}
	return db, e
}

// TestTransactionPastCommitBoundFailsAtOnce: on an engine that bounds one
// commit, a transaction flushed key by key fails at the first flush whose
// writes pass the bound, long before its last key, with ErrCommitTooLarge
// naming the bound; no commit reaches the engine and nothing is written.
func TestTransactionPastCommitBoundFailsAtOnce(t *testing.T) {
	const maxWrites = 100
	db, e := openBounded(t, maxWrites, 1<<20)
	before, commits := db.LastTx(), e.commits
	failedAt := -1
	_, err := txn.Update(db, func(tx *txn.Tx) error {
		for i := range 10_000 {
			if _, err := tx.Upsert("customers", store.Key{fmt.Sprintf("k%05d", i)}, store.Attrs{"n": int64(i)}, 10); err != nil {
				return err
			}
			if err := tx.Flush(); err != nil {
				failedAt = i
				return err
			}
		}
		return nil
	})
	if !errors.Is(err, store.ErrCommitTooLarge) {
		t.Fatalf("a transaction past the bound: %v", err)
	}
	for _, want := range []string{fmt.Sprintf("at most %d writes", maxWrites), "--batch-size", "nothing was written"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q: %v", want, err)
		}
	}
	// A new key's upsert is three writes (its record, its sk index entry and
	// its transaction log entry, which the next key's change closes): at key
	// i the Writer holds 3i+2, past 100 at key 33.
	if failedAt != 33 {
		t.Errorf("failed at key %d, want 33", failedAt)
	}
	if e.commits != commits || db.LastTx() != before {
		t.Errorf("%d commits reached the engine, last tx %d -> %d", e.commits-commits, before, db.LastTx())
	}
	if _, err := txn.Update(db, func(tx *txn.Tx) error {
		_, err := tx.Upsert("customers", store.Key{"k00000"}, store.Attrs{"n": int64(1)}, 10)
		return err
	}); err != nil {
		t.Fatalf("a small transaction after the refused one: %v", err)
	}
}

// TestTransactionPastCommitBoundFailsWithoutFlush: a transaction held whole
// until Commit is refused by the Writer's count before the engine sees it.
func TestTransactionPastCommitBoundFailsWithoutFlush(t *testing.T) {
	db, e := openBounded(t, 1<<20, 4096)
	commits := e.commits
	_, err := txn.Update(db, func(tx *txn.Tx) error {
		for i := range 200 {
			if _, err := tx.Upsert("customers", store.Key{fmt.Sprintf("k%05d", i)}, store.Attrs{"name": strings.Repeat("x", 40)}, 10); err != nil {
				return err
			}
		}
		return nil
	})
	if !errors.Is(err, store.ErrCommitTooLarge) || !strings.Contains(err.Error(), "4096 bytes") {
		t.Fatalf("a transaction past the byte bound: %v", err)
	}
	if e.commits != commits {
		t.Errorf("%d commits reached the engine", e.commits-commits)
	}
}

// TestCommitBoundNeverRefusesWhatFits: the Writer's count is a lower bound of
// what the engine counts: every transaction the Writer refuses, the engine's
// exact count at Commit refuses too. Transactions of n upserts, over keys that
// exist (each retires and asserts, some sharing attributes with the records
// they close) and new keys, grow until refused.
func TestCommitBoundNeverRefusesWhatFits(t *testing.T) {
	const maxWrites = 60
	db, e := openBounded(t, maxWrites, 1<<20)
	if _, err := txn.Update(db, func(tx *txn.Tx) error {
		for i := range 10 {
			if _, err := tx.Upsert("customers", store.Key{fmt.Sprintf("k%05d", i)}, store.Attrs{"n": int64(i)}, 10); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	update := func(n int) error {
		_, err := txn.Update(db, func(tx *txn.Tx) error {
			for i := range n {
				attrs := store.Attrs{"n": int64(i + n)}
				if i%2 == 0 {
					attrs = store.Attrs{"n": int64(i)} // the value it has: a split sharing attributes
				}
				if _, err := tx.Upsert("customers", store.Key{fmt.Sprintf("k%05d", i)}, attrs, int64(20+n)); err != nil {
					return err
				}
			}
			return nil
		})
		return err
	}
	refusedByWriter, committed := 0, 0
	for n := 1; n < 40; n++ {
		commits := e.commits
		err := update(n)
		switch {
		case err == nil:
			committed++
		case !errors.Is(err, store.ErrCommitTooLarge):
			t.Fatalf("n=%d: %v", n, err)
		case e.commits == commits:
			refusedByWriter++
			e.hide = true
			err := update(n)
			e.hide = false
			if !errors.Is(err, store.ErrCommitTooLarge) || e.commits != commits+1 {
				t.Fatalf("n=%d: the Writer refused a transaction the engine takes (%d commits; %v)", n, e.commits-commits, err)
			}
		}
	}
	if committed == 0 || refusedByWriter == 0 {
		t.Fatalf("committed %d, refused by the Writer %d: the bound was not exercised", committed, refusedByWriter)
	}
}
