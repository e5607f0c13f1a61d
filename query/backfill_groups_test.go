package query_test

import (
	"bytes"
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// TestBackfillGroupsSurviveHashCollisions backfills the same rows with the
// group keys' hash as it is and with hashes that collide (every key one hash;
// two hashes for all keys), and checks that each backfill numbers the groups
// in order of first appearance, holds each group's key once, assigns each row
// the group of its own key, and computes the same features.
func TestBackfillGroupsSurviveHashCollisions(t *testing.T) {
	db, err := store.Open("db", store.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	def := store.TableDef{Name: "contracts", Key: []store.KeyColumn{{Name: "id", Type: store.Int64}}, GroupBy: []string{"user"}}
	if _, err := db.CreateTable(def); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 11))
	_, err = txn.Update(db, func(tx *txn.Tx) error {
		for id := range int64(120) {
			attrs := store.Attrs{"user": fmt.Sprint("u", rng.IntN(40)), "amount": rng.Int64N(50)}
			if err := tx.Put("contracts", store.Key{id}, attrs, rng.Int64N(20), 20+rng.Int64N(20)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	s, err := db.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	aggs := parseAggs(t, "count", "sum(amount)")
	rows := make([]query.LeftRow, 500)
	for i := range rows { // users u40-u44 have no contracts
		rows[i] = query.LeftRow{Group: store.Key{fmt.Sprint("u", rng.IntN(45))}, TS: rng.Int64N(40)}
	}

	type result struct {
		groups   [][]byte
		rowGroup []int32
		features [][]any
	}
	run := func(hash func(maphash.Seed, []byte) uint64) result {
		t.Helper()
		defer query.SetGroupKeyHash(hash)()
		groups, rowGroup, err := query.BackfillGroups(s, "contracts", rows, aggs)
		if err != nil {
			t.Fatal(err)
		}
		var features [][]any
		for r, err := range query.Backfill(s, "contracts", rows, aggs, query.BackfillOptions{}) {
			if err != nil {
				t.Fatal(err)
			}
			features = append(features, r.Values)
		}
		return result{groups, rowGroup, features}
	}
	want := run(maphash.Bytes)
	for name, hash := range map[string]func(maphash.Seed, []byte) uint64{
		"one hash":   func(maphash.Seed, []byte) uint64 { return 0 },
		"two hashes": func(_ maphash.Seed, k []byte) uint64 { return uint64(k[len(k)-1] % 2) },
	} {
		got := run(hash)
		if !slices.EqualFunc(got.groups, want.groups, bytes.Equal) || !slices.Equal(got.rowGroup, want.rowGroup) {
			t.Errorf("%s: groups %q, rows' groups %v; want %q, %v", name, got.groups, got.rowGroup, want.groups, want.rowGroup)
		}
		if fmt.Sprint(got.features) != fmt.Sprint(want.features) {
			t.Errorf("%s: features differ from the backfill with the true hash", name)
		}
	}

	tb, err := s.Table("contracts")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for g, k := range want.groups {
		if seen[string(k)] {
			t.Errorf("group %d: key %q held twice", g, k)
		}
		seen[string(k)] = true
	}
	if len(want.groups) != 45 {
		t.Errorf("%d groups, want 45", len(want.groups))
	}
	next := int32(0)
	for i, r := range rows {
		k, err := tb.AppendGroupKey(nil, r.Group)
		if err != nil {
			t.Fatal(err)
		}
		g := want.rowGroup[i]
		if !bytes.Equal(want.groups[g], k) {
			t.Fatalf("row %d: group %d's key %q, want %q", i, g, want.groups[g], k)
		}
		if g > next {
			t.Fatalf("row %d: group %d before group %d appeared", i, g, next)
		}
		if g == next {
			next++
		}
	}
}
