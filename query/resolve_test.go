package query_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/bitempo/bitempo/internal/testutil"
	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// loadDimension writes keys customers with a random history each: a few
// versions, sometimes a gap, sometimes a closed end, and corrections in later
// commits. It returns the commit times.
func loadDimension(t testing.TB, db *store.DB, keys int, rng *rand.Rand) []int64 {
	t.Helper()
	if _, err := db.CreateTable(store.TableDef{Name: "dim", Key: []store.KeyColumn{{Name: "id", Type: store.Int64}}}); err != nil {
		t.Fatal(err)
	}
	var txs []int64
	for round := range 3 {
		for lo := 0; lo < keys; lo += 2000 {
			c, err := txn.Update(db, func(tx *txn.Tx) error {
				for k := lo; k < min(lo+2000, keys); k++ {
					if round > 0 && rng.IntN(3) > 0 {
						continue
					}
					at := int64(rng.IntN(100))
					for v := range 1 + rng.IntN(4) {
						attrs := store.Attrs{"round": int64(round), "v": int64(v)}
						if _, err := tx.Upsert("dim", store.Key{int64(k)}, attrs, at); err != nil {
							return err
						}
						at += 1 + int64(rng.IntN(50))
					}
					if rng.IntN(5) == 0 {
						if err := tx.Delete("dim", store.Key{int64(k)}, at-3, at-1); err != nil {
							return err
						}
					}
					if rng.IntN(5) == 0 {
						if _, err := tx.DeleteAt("dim", store.Key{int64(k)}, at+int64(rng.IntN(30))); err != nil {
							return err
						}
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			txs = append(txs, c.Tx)
		}
	}
	return txs
}

// dimensionSnapshot opens an in-memory store whose clock ticks once per
// reading, loads keys customers into it (loadDimension) and returns a
// snapshot of it and the commit times; the test's cleanup closes both.
func dimensionSnapshot(t testing.TB, keys int, rng *rand.Rand) (*store.Snapshot, []int64) {
	t.Helper()
	db := testutil.OpenTicking(t, 1)
	txs := loadDimension(t, db, keys, rng)
	s, err := db.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, txs
}

func randomFacts(rng *rand.Rand, n, keys int, txs []int64) []query.Fact {
	facts := make([]query.Fact, n)
	for i := range facts {
		f := query.Fact{Key: store.Key{int64(rng.IntN(keys + keys/20))}, At: int64(rng.IntN(300) - 20)}
		if rng.IntN(10) == 0 {
			f.Tx = txs[rng.IntN(len(txs))]
		}
		facts[i] = f
	}
	return facts
}

// resolvedByGet is the resolution of fact i, f, of table "dim" that a Get
// finds: the version's surrogate key and attributes, or the reason it missed.
func resolvedByGet(t testing.TB, s *store.Snapshot, i int, f query.Fact) query.Resolution {
	t.Helper()
	v, err := query.Get(s, "dim", f.Key, query.AsOf{Valid: f.At, Tx: f.Tx}, query.GetOptions{})
	var miss *query.Miss
	switch {
	case errors.As(err, &miss):
		return query.Resolution{Index: i, Reason: miss.Reason}
	case err != nil:
		t.Fatal(err)
	}
	return query.Resolution{Index: i, SK: v.SK, Attrs: v.Attrs}
}

// TestResolveMatchesGet resolves 100k random facts (10k with -short) in one
// batch, which takes the parallel path, and compares every answer with a Get.
func TestResolveMatchesGet(t *testing.T) {
	n, keys := 100_000, 3000
	if testing.Short() {
		n, keys = 10_000, 1000
	}
	rng := rand.New(rand.NewPCG(1, 2))
	s, txs := dimensionSnapshot(t, keys, rng)
	facts := randomFacts(rng, n, keys, txs)
	got, err := query.Resolve(s, "dim", facts, query.ResolveOptions{Miss: query.MissNull, Attrs: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(facts) {
		t.Fatalf("%d resolutions for %d facts", len(got), len(facts))
	}
	reasons := map[store.MissReason]int{}
	for i, f := range facts {
		want := resolvedByGet(t, s, i, f)
		reasons[want.Reason]++
		if a, b := fmtResolution(got[i]), fmtResolution(want); a != b {
			t.Fatalf("fact %d %+v: %s, want %s", i, f, a, b)
		}
	}
	// The facts exercise every outcome.
	for r := store.Found; r <= store.AfterLast; r++ {
		if reasons[r] == 0 {
			t.Fatalf("no fact with outcome %v: %v", r, reasons)
		}
	}
	t.Logf("outcomes: %v", reasons)
}

func TestResolveEmptyAndErrors(t *testing.T) {
	db := newCustomers(t)
	res, err := query.Resolve(db, "customers", nil, query.ResolveOptions{})
	if err != nil || len(res) != 0 {
		t.Fatalf("empty batch: %v %v", res, err)
	}
	if _, err := query.Resolve(db, "nope", nil, query.ResolveOptions{}); !errors.Is(err, store.ErrUnknownTable) {
		t.Fatalf("unknown table: %v", err)
	}
	facts := []query.Fact{{Key: store.Key{"c1"}, At: 1}, {Key: store.Key{int64(1)}, At: 1}}
	if _, err := query.Resolve(db, "customers", facts, query.ResolveOptions{Miss: query.MissNull}); !errors.Is(err, store.ErrKeyShape) {
		t.Fatalf("bad key: %v", err)
	}
	if _, err := query.Resolve(db, "customers", facts[:1], query.ResolveOptions{Miss: 99}); err == nil {
		t.Fatal("unknown policy accepted")
	}
}

// TestResolveInferredOnReadOnlyStore: txn.ResolveInferred must write, and says so.
func TestResolveInferredOnReadOnlyStore(t *testing.T) {
	dir := t.TempDir()
	db, err := store.Open(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateTable(store.TableDef{Name: "customers", Key: []store.KeyColumn{{Name: "id", Type: store.String}}}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	ro, err := store.Open(dir, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	facts := []query.Fact{{Key: store.Key{"c1"}, At: 1}}
	if _, err := txn.ResolveInferred(ro, "customers", facts, query.ResolveOptions{Miss: query.MissNull}); !errors.Is(err, store.ErrReadOnly) {
		t.Fatalf("inferred members on a read-only store: %v", err)
	}
	res, err := query.Resolve(ro, "customers", facts, query.ResolveOptions{Miss: query.MissNull})
	if err != nil || res[0].Reason != store.UnknownKey {
		t.Fatalf("null policy on a read-only store: %v %v", res, err)
	}
}

// TestResolveInferredAgainstSnapshot: a key created by another writer between
// txn.ResolveInferred's read and its transaction is resolved against the new versions, not inferred.
func TestResolveInferredAgainstSnapshot(t *testing.T) {
	db := newCustomers(t)
	s, err := db.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := txn.Update(db, func(tx *txn.Tx) error {
		return tx.Put("customers", store.Key{"c5"}, store.Attrs{"city": "Hamar"}, 0, store.Infinity)
	}); err != nil {
		t.Fatal(err)
	}
	facts := []query.Fact{{Key: store.Key{"c5"}, At: 3}, {Key: store.Key{"c6"}, At: 3}}
	res, err := txn.ResolveInferred(s, "customers", facts, query.ResolveOptions{Miss: query.MissNull, Attrs: true})
	if err != nil {
		t.Fatal(err)
	}
	if !res[0].Found() || res[0].Inferred || res[0].Attrs["city"] != "Hamar" {
		t.Fatalf("key created after the snapshot: %s", fmtResolution(res[0]))
	}
	if !res[1].Found() || !res[1].Inferred {
		t.Fatalf("unknown key: %s", fmtResolution(res[1]))
	}
	if err := verify(db); err != nil {
		t.Fatal(err)
	}
}

// newCustomers returns a store with a customers table holding c1 (Oslo, then
// Bergen from 10), c2 ([0, 5) and [8, +inf)) and c3 ([0, 20)).
func newCustomers(t testing.TB) *store.DB {
	t.Helper()
	clock := int64(100)
	db, err := store.Open("db", store.Options{InMemory: true, Clock: func() int64 { clock++; return clock }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	if _, err := db.CreateTable(store.TableDef{Name: "customers", Key: []store.KeyColumn{{Name: "id", Type: store.String}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Update(db, func(tx *txn.Tx) error {
		for _, w := range []struct {
			key      string
			city     string
			from, to int64
		}{
			{"c1", "Oslo", 0, 10}, {"c1", "Bergen", 10, store.Infinity},
			{"c2", "Tromso", 0, 5}, {"c2", "Molde", 8, store.Infinity},
			{"c3", "Alta", 0, 20},
		} {
			if err := tx.Put("customers", store.Key{w.key}, store.Attrs{"city": w.city}, w.from, w.to); err != nil {
				return fmt.Errorf("%s: %w", w.key, err)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return db
}
