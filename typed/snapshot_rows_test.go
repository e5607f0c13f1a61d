package typed_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/bitempo/bitempo/internal/testutil"
	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
	"github.com/bitempo/bitempo/typed"
)

// TestSnapshotMatchesMapSnapshot checks the typed Snapshot, which decodes
// stored rows in place, against query.Snapshot's versions picked apart by
// hand, on random histories with corrections and deletes, at random valid
// times, at the latest and at every earlier transaction time.
func TestSnapshotMatchesMapSnapshot(t *testing.T) {
	for seed := range uint64(4) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			db, accounts, txs := accountHistory(t, rng)
			for range 20 {
				at := query.AsOf{Valid: int64(rng.IntN(520)) - 10}
				if rng.IntN(2) == 0 {
					at.Tx = txs[rng.IntN(len(txs))]
				}
				var want []Account
				for v, err := range query.Snapshot(db, "accounts", at, query.KeyRange{}, query.SnapshotOptions{}) {
					if err != nil {
						t.Fatal(err)
					}
					want = append(want, fromMap(&v))
				}
				var got []Account
				for v, err := range accounts.Snapshot(db, at, query.KeyRange{}) {
					if err != nil {
						t.Fatal(err)
					}
					got = append(got, v.Value)
				}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("at %+v: typed %d rows %+v\nmap %d rows %+v", at, len(got), got, len(want), want)
				}
			}
		})
	}
}

// accountHistory writes a random history of 40 accounts in 12 commits, with
// corrections and deletes, and returns the store, the typed table and the
// commits' transaction times.
func accountHistory(t *testing.T, rng *rand.Rand) (*store.DB, *typed.Table[Account], []int64) {
	t.Helper()
	db, accounts := openTable[Account](t, "accounts", nil)
	opened := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	var txs []int64
	for round := range 12 {
		c, err := txn.Update(db, func(tx *txn.Tx) error {
			for range 1 + rng.IntN(30) {
				id := int64(rng.IntN(40))
				if rng.IntN(8) == 0 {
					if err := tx.Delete("accounts", store.Key{id}, int64(rng.IntN(500)), store.Infinity); err != nil {
						return err
					}
					continue
				}
				a := Account{ID: id, Name: fmt.Sprintf("n%d-%d", id, round), City: []string{"Oslo", "", "Molde\x00x"}[rng.IntN(3)],
					Balance: rng.Float64(), Orders: rng.Int64N(1000) - 500, Active: rng.IntN(2) == 0,
					Opened: opened.Add(time.Duration(rng.IntN(1e6)) * time.Second)}
				if rng.IntN(2) == 0 {
					a.Email = ptr(fmt.Sprintf("e%d", rng.IntN(5)))
				}
				if _, err := accounts.Upsert(tx, a, int64(rng.IntN(500))); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		txs = append(txs, c.Tx)
		testutil.Verify(t, db)
	}
	return db, accounts, txs
}

// TestResolveMatchesMapResolve checks the typed Resolve, which decodes each
// answer of query.ResolveRows in place, against query.Resolve's attribute
// maps picked apart by hand, on random histories: every miss policy, facts of
// known and unknown keys at random valid times, at the latest and at earlier
// transaction times (retired records among the answers), in batches small
// and large enough for the merge to run on several goroutines.
func TestResolveMatchesMapResolve(t *testing.T) {
	for seed := range uint64(3) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 9))
			db, accounts, txs := accountHistory(t, rng)
			for _, n := range []int{1, 300, 40_000} {
				facts := make([]query.Fact, n)
				for i := range facts {
					facts[i] = query.Fact{Key: store.Key{int64(rng.IntN(44))}, At: int64(rng.IntN(520)) - 10}
					if rng.IntN(2) == 0 {
						facts[i].Tx = txs[rng.IntN(len(txs))]
					}
				}
				for _, miss := range []query.MissPolicy{query.MissNull, query.MissSkip, query.MissDefault, query.MissError} {
					got, gotErr := accounts.Resolve(db, facts, query.ResolveOptions{Miss: miss, Default: 7})
					res, wantErr := query.Resolve(db, "accounts", facts, query.ResolveOptions{Miss: miss, Default: 7, Attrs: true})
					if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
						t.Fatalf("%d facts, miss %d: typed error %v, map error %v", n, miss, gotErr, wantErr)
					}
					var want []typed.Resolution[Account]
					for _, r := range res {
						w := typed.Resolution[Account]{Index: r.Index, SK: r.SK, Reason: r.Reason, Inferred: r.Inferred, Default: r.Default}
						if r.Found() {
							w.Value = fromMap(&store.Version{Key: facts[r.Index].Key, Attrs: r.Attrs})
						}
						want = append(want, w)
					}
					if len(got) != len(want) || (len(got) > 0 && !reflect.DeepEqual(got, want)) {
						for i := range min(len(got), len(want)) {
							if !reflect.DeepEqual(got[i], want[i]) {
								t.Fatalf("%d facts, miss %d: answer %d: typed %+v, map %+v", n, miss, i, got[i], want[i])
							}
						}
						t.Fatalf("%d facts, miss %d: typed %d answers, map %d", n, miss, len(got), len(want))
					}
				}
			}
		})
	}
}

// TestResolveFailsWithTheFirstFactThatDoesNotFit checks that a batch whose
// answers include records that do not fit the struct fails with the
// FieldError of the first such fact in input order, however the batch join
// orders and spreads its answers.
func TestResolveFailsWithTheFirstFactThatDoesNotFit(t *testing.T) {
	db, accounts := openTable[Account](t, "accounts", func(def *store.TableDef) {
		def.MixedTypes = true // stored values of other types than the fields'
	})
	bad := map[int64]bool{13: true, 29: true}
	if _, err := txn.Update(db, func(tx *txn.Tx) error {
		for id := range int64(40) {
			orders := any(id)
			if bad[id] {
				orders = "many"
			}
			if _, err := tx.Upsert("accounts", store.Key{id}, store.Attrs{"orders": orders}, 0); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 5))
	for _, n := range []int{2, 300, 40_000} {
		facts := make([]query.Fact, n)
		first := -1
		for i := range facts {
			id := int64(rng.IntN(40))
			for i < n/2 && bad[id] { // the first half fits
				id = int64(rng.IntN(40))
			}
			if i == n/2 {
				id = 29 // after it, in input order, facts of 13: before it in key order
			}
			if bad[id] && first < 0 {
				first = i
			}
			facts[i] = query.Fact{Key: store.Key{id}, At: 1}
		}
		_, err := accounts.Resolve(db, facts, query.ResolveOptions{})
		var fe *typed.FieldError
		if first < 0 {
			t.Fatalf("%d facts: no fact of a record that does not fit", n)
		}
		if !errors.As(err, &fe) || !reflect.DeepEqual(fe.Key, facts[first].Key) || fe.Attr != "orders" {
			t.Fatalf("%d facts: %v, want the FieldError of fact %d (key %v)", n, err, first, facts[first].Key)
		}
	}
}
