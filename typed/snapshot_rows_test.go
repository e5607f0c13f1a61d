package typed_test

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/bitempo/bitempo/internal/testutil"
	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// TestSnapshotMatchesMapSnapshot checks the typed Snapshot, which decodes
// stored rows in place, against query.Snapshot's versions picked apart by
// hand, on random histories with corrections and deletes, at random valid
// times, at the latest and at every earlier transaction time.
func TestSnapshotMatchesMapSnapshot(t *testing.T) {
	for seed := range uint64(4) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
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
