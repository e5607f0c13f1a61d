package fuzz_test

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// Accounts of the concurrency test: the writer moves amounts between them, so
// that at every valid time, as of every transaction time, their balances add up
// to concAccounts * concOpening.
const (
	concAccounts = 6
	concOpening  = 1000
)

func concKey(i int) store.Key { return store.Key{fmt.Sprintf("acct-%d", i)} }

// concTransfer moves amount from account a to account b from valid time v on:
// every piece of their timelines at or after v is rewritten with the balance
// adjusted (Put splits the piece that straddles v), so their sum, and the total,
// is unchanged at every valid time.
func concTransfer(tx *txn.Tx, a, b int, v, amount int64) error {
	for _, side := range []struct {
		acct  int
		delta int64
	}{{a, -amount}, {b, amount}} {
		versions, err := tx.Versions("acct", concKey(side.acct))
		if err != nil {
			return err
		}
		for _, ver := range versions {
			if ver.ValidTo <= v {
				continue
			}
			from := max(ver.ValidFrom, v)
			bal := ver.Attrs["balance"].(int64) + side.delta
			if err := tx.Put("acct", concKey(side.acct), store.Attrs{"balance": bal}, from, ver.ValidTo); err != nil {
				return err
			}
		}
	}
	return nil
}

// TestConcurrentReadersSeeOneState runs a writer committing transfers while
// readers scan: each reader takes a snapshot and sums the balances at a random
// valid time, through query.Snapshot, through query.Get of every key at the
// snapshot's newest or an older transaction time, and through
// Snapshot.KeyVersions. Every sum must equal the opening total and every
// account must have exactly one version there: a reader that saw half of a
// transfer, or a key between the retirement of its record and the assertion of
// its successor, would find otherwise. Run it under -race.
func TestConcurrentReadersSeeOneState(t *testing.T) {
	transfers, readers := 200, 3
	if testing.Short() {
		transfers = 60
	}
	db, err := store.Open("conc", store.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.CreateTable(store.TableDef{Name: "acct", Key: []store.KeyColumn{{Name: "id", Type: store.String}}}); err != nil {
		t.Fatal(err)
	}
	first, err := txn.Update(db, func(tx *txn.Tx) error {
		for i := range concAccounts {
			if err := tx.Put("acct", concKey(i), store.Attrs{"balance": int64(concOpening)}, store.NegInfinity, store.Infinity); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	commits := []int64{first.Tx} // transaction times readers may read at
	var done atomic.Bool
	var scans atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, readers+1)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)

	wg.Add(1)
	go func() {
		defer wg.Done()
		defer done.Store(true)
		rng := rand.New(rand.NewPCG(seed, 0))
		for range transfers {
			a, b := rng.IntN(concAccounts), rng.IntN(concAccounts)
			v, amount := int64(rng.IntN(12)), int64(1+rng.IntN(100))
			c, err := txn.Update(db, func(tx *txn.Tx) error { return concTransfer(tx, a, b, v, amount) })
			if err != nil {
				errs <- fmt.Errorf("transfer: %w", err)
				return
			}
			if c.Tx != 0 {
				mu.Lock()
				commits = append(commits, c.Tx)
				mu.Unlock()
			}
		}
	}()
	for r := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(r+1)))
			var last int64
			for !done.Load() {
				mu.Lock()
				old := commits[rng.IntN(len(commits))]
				mu.Unlock()
				lastTx, err := concScan(db, rng, old)
				if err != nil {
					errs <- fmt.Errorf("reader %d: %w", r, err)
					return
				}
				if lastTx < last {
					errs <- fmt.Errorf("reader %d: snapshot at tx %d after one at %d", r, lastTx, last)
					return
				}
				last = lastTx
				scans.Add(1)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	t.Logf("%d transfers, %d consistent scans", transfers, scans.Load())
	if scans.Load() == 0 {
		t.Fatal("no scan ran while the writer committed")
	}
	if rep, err := store.Verify(db); err != nil || !rep.OK() {
		t.Fatalf("verify: %v %v", rep, err)
	}
}

// concScan checks the invariant three ways on one snapshot, at a random valid
// time, as of the snapshot's newest transaction and as of old (a transaction
// time that committed before the snapshot was taken). It returns the snapshot's
// newest transaction time.
func concScan(db *store.DB, rng *rand.Rand, old int64) (int64, error) {
	s, err := db.Snapshot()
	if err != nil {
		return 0, err
	}
	defer s.Close()
	v := int64(rng.IntN(16)) - 2
	want := int64(concAccounts * concOpening)
	sum, n := int64(0), 0
	for ver, err := range query.Snapshot(s, "acct", query.AsOf{Valid: v}, query.KeyRange{}, query.SnapshotOptions{}) {
		if err != nil {
			return 0, err
		}
		sum += ver.Attrs["balance"].(int64)
		n++
	}
	if sum != want || n != concAccounts {
		return 0, fmt.Errorf("snapshot at valid %d, tx %d: %d accounts summing to %d, want %d summing to %d", v, s.LastTx(), n, sum, concAccounts, want)
	}
	for _, tx := range []int64{query.Latest, old} {
		sum = 0
		for i := range concAccounts {
			ver, err := query.Get(s, "acct", concKey(i), query.AsOf{Valid: v, Tx: tx}, query.GetOptions{})
			if err != nil {
				return 0, fmt.Errorf("get %v at valid %d tx %d: %w", concKey(i), v, tx, err)
			}
			sum += ver.Attrs["balance"].(int64)
		}
		if sum != want {
			return 0, fmt.Errorf("gets at valid %d tx %d sum to %d, want %d", v, tx, sum, want)
		}
	}
	tbl, err := s.Table("acct")
	if err != nil {
		return 0, err
	}
	sum = 0
	for i := range concAccounts {
		tuple, err := tbl.AppendKey(nil, concKey(i))
		if err != nil {
			return 0, err
		}
		versions, err := s.KeyVersions(tbl, tuple, s.LastTx())
		if err != nil {
			return 0, err
		}
		covering := 0
		for _, ver := range versions {
			if ver.Covers(v) {
				sum += ver.Attrs["balance"].(int64)
				covering++
			}
		}
		if covering != 1 {
			return 0, fmt.Errorf("%v has %d versions at valid %d: %v", concKey(i), covering, v, versions)
		}
	}
	if sum != want {
		return 0, fmt.Errorf("key versions at valid %d sum to %d, want %d", v, sum, want)
	}
	return s.LastTx(), nil
}
