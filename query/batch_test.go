package query_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// TestResolveSplits runs the batch join with more key ranges than goroutines,
// with one goroutine, with ranges that hold no fact, and with string keys whose
// first eight bytes tie (the probes' first prefix), whose first sixteen tie
// (both prefixes), and of both lengths, and compares every answer with
// VersionAt.
func TestResolveSplits(t *testing.T) {
	for _, format := range []string{"customer-%05d", "customer-account-%05d", "c-%d"} {
		t.Run(format, func(t *testing.T) { testResolveSplits(t, format) })
	}
}

func testResolveSplits(t *testing.T, format string) {
	db, err := store.Open("db", store.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tb, err := db.CreateTable(store.TableDef{Name: "d", Key: []store.KeyColumn{{Name: "id", Type: store.String}}})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	key := func(i int) store.Key { return store.Key{fmt.Sprintf(format, i)} }
	if _, err := txn.Update(db, func(tx *txn.Tx) error {
		for i := range 300 {
			for v := range 1 + rng.IntN(4) {
				if err := tx.Put("d", key(i), store.Attrs{"v": int64(v)}, int64(v*10), int64(v*10+5+rng.IntN(10))); err != nil {
					return err
				}
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	facts := make([]query.Fact, 5000)
	for i := range facts {
		facts[i] = query.Fact{Key: key(rng.IntN(320)), At: int64(rng.IntN(50) - 5)}
	}
	s, err := db.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, split := range []struct{ workers, ranges int }{{1, 1}, {1, 7}, {3, 7}, {2, 2}, {4, 64}, {3, 1000}} {
		out, err := query.ResolveSplit(s, tb, facts, true, split.workers, split.ranges)
		if err != nil {
			t.Fatal(err)
		}
		for i, f := range facts {
			tuple, _ := tb.AppendKey(nil, f.Key)
			v, reason, err := s.VersionAt(tb, tuple, f.At, s.LastTx())
			if err != nil {
				t.Fatal(err)
			}
			r := out[i]
			if r.Index != i || r.Reason != reason || r.SK != v.SK || fmt.Sprint(r.Attrs) != fmt.Sprint(v.Attrs) {
				t.Fatalf("split %+v fact %d %v: %+v, want %v %v", split, i, f, r, reason, v.String())
			}
		}
	}
}
