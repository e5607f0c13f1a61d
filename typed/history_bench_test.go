package typed_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/typed"
)

// historyStore holds 64 accounts with eight versions each, asserted by eight
// transactions: small enough to build in a moment, long enough per key that
// the per-version cost of a history read shows.
func historyStore(tb testing.TB) (*store.DB, *typed.Table[Account]) {
	tb.Helper()
	db, accounts := openTable[Account](tb, "accounts", nil)
	opened := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	loadAccounts(tb, db, accounts, 64, 8, func(i, v int64) Account {
		return Account{ID: i, Name: fmt.Sprintf("Customer %d", i), City: fmt.Sprintf("City %d", v),
			Tier: "gold", Balance: float64(i) * 1.5, Orders: v, Active: true, Opened: opened,
			Email: ptr(fmt.Sprintf("c%d@example.com", i))}
	})
	return db, accounts
}

// BenchmarkHistoryAudit compares a key's whole history and audit trail read
// through the map API with the typed reads, on one snapshot.
func BenchmarkHistoryAudit(b *testing.B) {
	db, accounts := historyStore(b)
	snap, err := db.Snapshot()
	if err != nil {
		b.Fatal(err)
	}
	defer snap.Close()
	key := store.Key{int64(17)}
	run := func(name string, read func() int) {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if n := read(); n != 8 {
					b.Fatalf("%d versions, want 8", n)
				}
			}
		})
	}
	run("history/map", func() int {
		n := 0
		for v, err := range query.History(snap, "accounts", key, store.NegInfinity, store.Infinity, query.HistoryOptions{}) {
			if err != nil {
				b.Fatal(err)
			}
			_ = fromMap(&v)
			n++
		}
		return n
	})
	run("history/typed", func() int {
		n := 0
		for _, err := range accounts.History(snap, key, store.NegInfinity, store.Infinity, query.HistoryOptions{}) {
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		return n
	})
	// The audit trail holds the eight current records (each a correction
	// shortened its predecessor) and the seven retired ones; count the
	// current ones.
	run("audit/map", func() int {
		n := 0
		for v, err := range query.Audit(snap, "accounts", key, query.AuditOptions{}) {
			if err != nil {
				b.Fatal(err)
			}
			_ = fromMap(&v)
			if v.TxTo == store.Infinity {
				n++
			}
		}
		return n
	})
	run("audit/typed", func() int {
		n := 0
		for v, err := range accounts.Audit(snap, key) {
			if err != nil {
				b.Fatal(err)
			}
			if v.TxTo == store.Infinity {
				n++
			}
		}
		return n
	})
}
