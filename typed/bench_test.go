package typed_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/bitempo/bitempo/internal/enginetest"
	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
	"github.com/bitempo/bitempo/typed"
)

// Account is the benchmarks' record: eight attributes of the common kinds.
type Account struct {
	ID      int64     `bitempo:"id,key"`
	Name    string    `bitempo:"name"`
	City    string    `bitempo:"city"`
	Tier    string    `bitempo:"tier"`
	Balance float64   `bitempo:"balance"`
	Orders  int64     `bitempo:"orders"`
	Active  bool      `bitempo:"active"`
	Opened  time.Time `bitempo:"opened"`
	Email   *string   `bitempo:"email"`
}

const benchKeys = 10_000

// loadAccounts upserts keys accounts (IDs 0 to keys-1) in versions
// transactions, version v of each at valid time 100*v, as account builds them.
func loadAccounts(tb testing.TB, db *store.DB, accounts *typed.Table[Account], keys, versions int64, account func(i, v int64) Account) {
	tb.Helper()
	for v := range versions {
		_, err := txn.Update(db, func(tx *txn.Tx) error {
			for i := range keys {
				if _, err := accounts.Upsert(tx, account(i, v), 100*v); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			tb.Fatal(err)
		}
	}
}

// benchStore holds benchKeys accounts with three versions each.
func benchStore(b *testing.B) (*store.DB, *typed.Table[Account]) {
	b.Helper()
	db, accounts := openTable[Account](b, "accounts", nil)
	opened := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	loadAccounts(b, db, accounts, benchKeys, 3, func(i, v int64) Account {
		return Account{ID: i, Name: fmt.Sprintf("Customer %d", i), City: []string{"Oslo", "Bergen", "Molde"}[v],
			Tier: "gold", Balance: float64(i) * 1.5, Orders: i % 97, Active: true, Opened: opened.Add(time.Duration(i) * time.Hour),
			Email: ptr(fmt.Sprintf("c%d@example.com", i))}
	})
	// Reads as they run on a settled store, not through a memtable of
	// retired records.
	if err := db.Compact(context.Background()); err != nil {
		b.Fatal(err)
	}
	// Warm the caches with a pass over every key, so that the first
	// sub-benchmark does not pay for it.
	for range 2 {
		for i := range int64(benchKeys) {
			if _, err := query.Get(db, "accounts", store.Key{i}, query.AsOf{Valid: 150}, query.GetOptions{}); err != nil {
				b.Fatal(err)
			}
		}
	}
	return db, accounts
}

// cpuPerOp reports the process's CPU time per operation as cpu-ns/op beside
// the wall time (enginetest.CPUPerOp).
var cpuPerOp = enginetest.CPUPerOp

// fromMap is what a user of the map API writes to get an Account: the
// comparison point of the typed reads.
func fromMap(v *store.Version) Account {
	a := Account{ID: v.Key[0].(int64)}
	a.Name, _ = v.Attrs["name"].(string)
	a.City, _ = v.Attrs["city"].(string)
	a.Tier, _ = v.Attrs["tier"].(string)
	a.Balance, _ = v.Attrs["balance"].(float64)
	a.Orders, _ = v.Attrs["orders"].(int64)
	a.Active, _ = v.Attrs["active"].(bool)
	a.Opened, _ = v.Attrs["opened"].(time.Time)
	if e, ok := v.Attrs["email"].(string); ok {
		a.Email = &e
	}
	return a
}

// BenchmarkGet compares a point read through the map API (query.Get, and
// query.Get plus picking the map apart into the struct by hand) with the typed
// Get, which decodes the record straight into the struct, on one snapshot.
func BenchmarkGet(b *testing.B) {
	db, accounts := benchStore(b)
	snap, err := db.Snapshot()
	if err != nil {
		b.Fatal(err)
	}
	defer snap.Close()
	keys := make([]store.Key, 1024)
	for i := range keys {
		keys[i] = store.Key{int64(i * 7919 % benchKeys)}
	}
	at := query.AsOf{Valid: 150}
	b.Run("map", func(b *testing.B) {
		b.ReportAllocs()
		defer cpuPerOp(b)()
		i := 0
		for b.Loop() {
			if _, err := query.Get(snap, "accounts", keys[i%len(keys)], at, query.GetOptions{}); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("map+struct", func(b *testing.B) {
		b.ReportAllocs()
		defer cpuPerOp(b)()
		i := 0
		for b.Loop() {
			v, err := query.Get(snap, "accounts", keys[i%len(keys)], at, query.GetOptions{})
			if err != nil {
				b.Fatal(err)
			}
			_ = fromMap(&v)
			i++
		}
	})
	b.Run("typed", func(b *testing.B) {
		b.ReportAllocs()
		defer cpuPerOp(b)()
		i := 0
		for b.Loop() {
			if _, err := accounts.Get(snap, keys[i%len(keys)], at); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
}

// BenchmarkResolve compares a batch as-of join of 10,000 facts with attributes
// through the map API and through the typed Resolve.
func BenchmarkResolve(b *testing.B) {
	db, accounts := benchStore(b)
	facts := make([]query.Fact, benchKeys)
	for i := range facts {
		facts[i] = query.Fact{Key: store.Key{int64(i * 7919 % benchKeys)}, At: int64(i % 300)}
	}
	b.Run("map", func(b *testing.B) {
		b.ReportAllocs()
		defer cpuPerOp(b)()
		for b.Loop() {
			if _, err := query.Resolve(db, "accounts", facts, query.ResolveOptions{Attrs: true}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("map+struct", func(b *testing.B) {
		b.ReportAllocs()
		defer cpuPerOp(b)()
		for b.Loop() {
			res, err := query.Resolve(db, "accounts", facts, query.ResolveOptions{Attrs: true})
			if err != nil {
				b.Fatal(err)
			}
			out := make([]Account, len(res))
			for i := range res {
				v := store.Version{Key: facts[res[i].Index].Key, Attrs: res[i].Attrs}
				out[i] = fromMap(&v)
			}
		}
	})
	b.Run("typed", func(b *testing.B) {
		b.ReportAllocs()
		defer cpuPerOp(b)()
		for b.Loop() {
			if _, err := accounts.Resolve(db, facts, query.ResolveOptions{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkSnapshot compares a snapshot of every account through the map API
// and through the typed Snapshot, which decodes each stored row straight into
// the struct.
func BenchmarkSnapshot(b *testing.B) {
	db, accounts := benchStore(b)
	at := query.AsOf{Valid: 150}
	b.Run("map+struct", func(b *testing.B) {
		b.ReportAllocs()
		defer cpuPerOp(b)()
		for b.Loop() {
			n := 0
			for v, err := range query.Snapshot(db, "accounts", at, query.KeyRange{}, query.SnapshotOptions{}) {
				if err != nil {
					b.Fatal(err)
				}
				_ = fromMap(&v)
				n++
			}
			b.ReportMetric(float64(n), "rows/op")
		}
	})
	b.Run("typed", func(b *testing.B) {
		b.ReportAllocs()
		defer cpuPerOp(b)()
		for b.Loop() {
			n := 0
			for _, err := range accounts.Snapshot(db, at, query.KeyRange{}) {
				if err != nil {
					b.Fatal(err)
				}
				n++
			}
			b.ReportMetric(float64(n), "rows/op")
		}
	})
}

// TestBenchmarkPathsAgree checks that the benchmarks' paths read the same
// accounts, so the comparison is of equal work.
func TestBenchmarkPathsAgree(t *testing.T) {
	db, err := store.Open("", store.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	accounts, err := typed.New[Account]("accounts")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateTable(accounts.Def()); err != nil {
		t.Fatal(err)
	}
	a := Account{ID: 4, Name: "n", City: "Oslo", Tier: "gold", Balance: 2.5, Orders: 3, Active: true, Opened: time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC), Email: ptr("e")}
	if _, err := txn.Update(db, func(tx *txn.Tx) error { _, err := accounts.Upsert(tx, a, 0); return err }); err != nil {
		t.Fatal(err)
	}
	v, err := query.Get(db, "accounts", store.Key{int64(4)}, query.AsOf{Valid: 1}, query.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tv, err := accounts.Get(db, store.Key{int64(4)}, query.AsOf{Valid: 1})
	if err != nil || !reflect.DeepEqual(fromMap(&v), a) || !reflect.DeepEqual(tv.Value, a) {
		t.Fatalf("map %+v, typed %+v, %v; want %+v", fromMap(&v), tv.Value, err, a)
	}
}
