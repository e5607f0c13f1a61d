package etcd_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/bitempo/bitempo/etcd"
	"github.com/bitempo/bitempo/internal/testutil"
	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// openStore opens the store under prefix on testCluster as one process would:
// its own client, engine and DB.
func openStore(t *testing.T, prefix string, opts store.Options) *store.DB {
	t.Helper()
	db, err := etcd.Open(context.Background(), etcd.Config{
		Endpoints: testCluster.Endpoints(), Prefix: prefix,
		MaxTxnOps: testMaxTxnOps, MaxRequestBytes: testMaxRequestBytes,
	}, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// TestWritersInTurn: two processes write one store in turn; each sees the
// other's tables, attribute names, surrogate keys and transaction times, as if
// it had written them itself.
func TestWritersInTurn(t *testing.T) {
	prefix := "/test/" + t.Name()
	clock := int64(1000)
	tick := func() int64 { return clock } // both "processes" see a clock that stands still
	a := openStore(t, prefix, store.Options{Clock: tick})
	b := openStore(t, prefix, store.Options{Clock: tick})
	if _, err := a.CreateTable(store.TableDef{Name: "t", Key: []store.KeyColumn{{Name: "k", Type: store.String}}, Axis: store.AxisInt}); err != nil {
		t.Fatal(err)
	}
	var last int64
	for i := range 6 {
		db := []*store.DB{a, b}[i%2]
		c, err := txn.Update(db, func(tx *txn.Tx) error {
			_, err := tx.Upsert("t", store.Key{fmt.Sprint("k", i)}, store.Attrs{fmt.Sprint("attr", i%3): int64(i)}, 0)
			return err
		})
		if err != nil {
			t.Fatalf("writer %d: %v", i%2, err)
		}
		if c.Tx <= last {
			t.Fatalf("commit %d: tx %d after %d", i, c.Tx, last)
		}
		last = c.Tx
	}
	if _, err := b.CreateTable(store.TableDef{Name: "u", Key: []store.KeyColumn{{Name: "k", Type: store.String}}, Axis: store.AxisInt}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.CreateTable(store.TableDef{Name: "u", Key: []store.KeyColumn{{Name: "k", Type: store.String}}, Axis: store.AxisInt}); !errors.Is(err, store.ErrTableExists) {
		t.Fatalf("create of a table the other process created: %v", err)
	}
	for _, db := range []*store.DB{a, b} {
		if db.LastTx() != last {
			t.Fatalf("LastTx %d, want %d", db.LastTx(), last)
		}
		sks := map[uint64]bool{}
		for i := range 6 {
			v, err := query.Get(db, "t", store.Key{fmt.Sprint("k", i)}, query.AsOf{Valid: 0}, query.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if sks[v.SK] {
				t.Fatalf("surrogate key %d handed out twice", v.SK)
			}
			sks[v.SK] = true
		}
		tbl, err := db.Table("t")
		if err != nil {
			t.Fatal(err)
		}
		if got := db.AttrNames(tbl); len(got) != 3 {
			t.Fatalf("attribute names %v", got)
		}
		testutil.Verify(t, db)
	}
}

// TestWritersAtOnce: two processes increment one counter at once, each in its
// own read-modify-write transactions; every increment survives, and
// transaction times increase in commit order.
func TestWritersAtOnce(t *testing.T) {
	prefix := "/test/" + t.Name()
	a := openStore(t, prefix, store.Options{})
	b := openStore(t, prefix, store.Options{})
	if _, err := a.CreateTable(store.TableDef{Name: "c", Key: []store.KeyColumn{{Name: "k", Type: store.String}}, Axis: store.AxisInt}); err != nil {
		t.Fatal(err)
	}
	const each = 15
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for w, db := range []*store.DB{a, b} {
		wg.Go(func() {
			for range each {
				_, err := txn.Update(db, func(tx *txn.Tx) error {
					n := int64(0)
					v, reason, err := tx.Get("c", store.Key{"n"}, 0)
					if err != nil {
						return err
					}
					if reason == store.Found {
						n = v.Attrs["n"].(int64)
					}
					_, err = tx.Upsert("c", store.Key{"n"}, store.Attrs{"n": n + 1, "by": int64(w)}, 0)
					return err
				})
				if err != nil {
					errs[w] = err
					return
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	v, err := query.Get(a, "c", store.Key{"n"}, query.AsOf{Valid: 0}, query.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v.Attrs["n"] != int64(2*each) {
		t.Fatalf("counter %v after %d increments: an update was lost", v.Attrs["n"], 2*each)
	}
	var prev int64
	n := 0
	for v, err := range query.Audit(b, "c", store.Key{"n"}, query.AuditOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		if v.TxFrom <= prev {
			t.Fatalf("transaction times not increasing: %d after %d", v.TxFrom, prev)
		}
		prev = v.TxFrom
		n++
	}
	if n != 2*each {
		t.Fatalf("%d versions, want %d", n, 2*each)
	}
	testutil.Verify(t, a)
}
