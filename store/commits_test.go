package store

import (
	"fmt"
	"strings"
	"testing"

	"github.com/bitempo/bitempo/engine"
	"github.com/bitempo/bitempo/layout"
)

// Every commit is numbered, and a current record, which holds its commit's
// number, reads back with that commit's time: across pages of the number
// cache, through a snapshot taken while a page was still being filled, and
// through one taken after it, which must read the page again.
func TestCommitNumbersReadBackAsTimes(t *testing.T) {
	db, err := Open("db", Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tb, _ := db.CreateTable(customers)
	txOf := map[string]int64{}
	commit := func(from, to int) {
		for i := from; i < to; i++ {
			id := fmt.Sprintf("k%04d", i)
			txOf[id] = commitOne(t, db, tb, id, 1)
		}
	}
	check := func(s *Snapshot, ids ...string) {
		t.Helper()
		for _, id := range ids {
			v, miss, err := s.KeyVersionAt(tb, Key{id}, 1, Infinity)
			if err != nil || miss != Found || v.TxFrom != txOf[id] {
				t.Fatalf("key %s: tx_from %d (%v, %v), want %d", id, v.TxFrom, miss, err, txOf[id])
			}
		}
	}
	commit(0, 700) // numbers 1-700: page 0 full, page 1 up to 700
	early, err := db.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer early.Close()
	check(early, "k0000", "k0510", "k0511", "k0650", "k0699") // caches page 1 as far as 700
	commit(700, 1200)
	late, err := db.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer late.Close()
	check(late, "k0900", "k0650", "k1023", "k1199", "k0000")
	check(early, "k0699", "k0001")
	n := 0
	for v, err := range late.ScanAt(tb, Span{}, 1, Infinity) {
		if err != nil || v.TxFrom != txOf[v.Key[0].(string)] {
			t.Fatalf("scan: %s tx_from %d, want %d (%v)", v.Key, v.TxFrom, txOf[v.Key[0].(string)], err)
		}
		n++
	}
	if n != 1200 || testLastCommit(t, db) != 1200 {
		t.Fatalf("scan read %d keys, last commit %d; want 1,200 of each", n, testLastCommit(t, db))
	}
	if rep, err := Verify(db); err != nil || !rep.OK() {
		t.Fatalf("verify: %v %v", rep, err)
	}
}

// The cache of commit times keeps at most maxCommitPages pages, dropping the
// one read first, and a longer read of a page replaces a shorter one.
func TestCommitTimesCacheBounded(t *testing.T) {
	var c commitTimes
	for p := range uint64(maxCommitPages + 1) {
		c.put(p, []int64{int64(p), 1})
	}
	if _, ok := c.get(0); ok || len(c.pages) != maxCommitPages {
		t.Fatalf("page 0 still cached, %d pages", len(c.pages))
	}
	if page, ok := c.get(commitPage + 1); !ok || page[0] != 1 {
		t.Fatalf("page 1: %v %v", page, ok)
	}
	if _, ok := c.get(commitPage + 2); ok {
		t.Fatal("found a number past the end of a page read short")
	}
	c.put(1, []int64{1, 1, 7})
	c.put(1, []int64{1}) // a shorter read does not replace it
	if page, ok := c.get(commitPage + 2); !ok || page[2] != 7 {
		t.Fatalf("page 1 after a longer read: %v %v", page, ok)
	}
}

// Verify checks the map of commit numbers: a number missing from it (which
// the records holding it then fail to decode), a last commit the map does not
// reach, and a commit time after the last transaction time. It reads the map
// from its own view, not from what the store cached before the damage.
func TestVerifyFindsCommitDamage(t *testing.T) {
	for _, c := range []struct {
		name      string
		invariant int
		want      string
		damage    func(db *DB) []engine.Write
	}{
		{"a missing number", 5, "commit number 3 follows 1", func(db *DB) []engine.Write {
			return []engine.Write{{Key: layout.CommitKey(2), Delete: true}}
		}},
		{"a record of a missing number", 0, "unknown commit number 2", func(db *DB) []engine.Write {
			return []engine.Write{{Key: layout.CommitKey(2), Delete: true}}
		}},
		{"a last commit past the map", 5, "commits 4 to 9 are missing", func(db *DB) []engine.Write {
			return []engine.Write{{Key: layout.MetaLastCommit, Value: mustMarshal(uint64(9))}}
		}},
		{"a number past the last commit", 5, "commit number 4 is after the last commit, 3", func(db *DB) []engine.Write {
			return []engine.Write{{Key: layout.CommitKey(4), Value: layout.CommitValue(db.LastTx())}}
		}},
		{"a commit after the last transaction", 4, "is after the last transaction time", func(db *DB) []engine.Write {
			return []engine.Write{{Key: layout.CommitKey(3), Value: layout.CommitValue(db.LastTx() + 1)}}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			db, err := Open("db", Options{InMemory: true})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			tb, _ := db.CreateTable(customers)
			for _, id := range []string{"a", "b", "c"} {
				commitOne(t, db, tb, id, 1)
			}
			if rep, err := Verify(db); err != nil || !rep.OK() { // caches the map
				t.Fatalf("clean store: %v %v", rep, err)
			}
			if err := db.commit(c.damage(db), true); err != nil {
				t.Fatal(err)
			}
			rep, err := Verify(db)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range rep.Problems {
				if p.Invariant == c.invariant && strings.Contains(p.Detail, c.want) {
					return
				}
			}
			t.Fatalf("no invariant %d problem saying %q in:\n%s", c.invariant, c.want, rep)
		})
	}
}

// An import numbers the transaction times of the current records it
// rebuilds: records of one time share a number while the import remembers
// it, and a time it has forgotten gets a second number that reads the same.
// Every record reads back with its own time, and Verify finds the map whole.
func TestImportNumbersCommits(t *testing.T) {
	defer func(n int) { importCommitMemo = n }(importCommitMemo)
	importCommitMemo = 4
	db, err := Open("db", Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tb, _ := db.CreateTable(customers)
	other, _ := db.CreateTable(TableDef{Name: "other", Key: []KeyColumn{{Name: "id", Type: String}}})
	commitOne(t, db, other, "before", 1) // commit 1, the store's own
	im, err := db.BeginImport()
	if err != nil {
		t.Fatal(err)
	}
	defer im.Abort()
	// Keys import in order: k00-k09 at times 100-109, then k10-k19 all at 100.
	txOf := map[string]int64{}
	for i := range 20 {
		id := fmt.Sprintf("k%02d", i)
		txOf[id] = int64(100 + i)
		if i >= 10 {
			txOf[id] = 100
		}
		if err := im.Record(tb, Key{id}, 1, Infinity, txOf[id], Infinity, uint64(10+i), false, Attrs{"n": int64(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := im.AdvanceTx(db.LastTx()); err != nil {
		t.Fatal(err)
	}
	if err := im.Commit(); err != nil {
		t.Fatal(err)
	}
	// 1 + 10 times, and time 100 again once the memo of 4 forgot it.
	if n := testLastCommit(t, db); n != 12 {
		t.Fatalf("last commit %d, want 12", n)
	}
	s, err := db.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for id, tx := range txOf {
		v, miss, err := s.KeyVersionAt(tb, Key{id}, 1, Infinity)
		if err != nil || miss != Found || v.TxFrom != tx {
			t.Fatalf("key %s: tx_from %d (%v, %v), want %d", id, v.TxFrom, miss, err, tx)
		}
	}
	if rep, err := Verify(db); err != nil || !rep.OK() {
		t.Fatalf("verify: %v %v", rep, err)
	}
}
