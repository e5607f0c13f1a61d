package query_test

import (
	"fmt"
	"testing"

	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// smallWideStore holds 256 keys of eight attributes in memory: small enough
// to build in a moment for the point-read benchmarks, whose cost per read does
// not depend on the table's size.
func smallWideStore(tb testing.TB) *store.DB {
	tb.Helper()
	db, err := store.Open("", store.Options{InMemory: true})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	if _, err := db.CreateTable(store.TableDef{Name: "wide", Key: []store.KeyColumn{{Name: "id", Type: store.Int64}}}); err != nil {
		tb.Fatal(err)
	}
	_, err = txn.Update(db, func(tx *txn.Tx) error {
		for i := range int64(256) {
			attrs := store.Attrs{
				"name": fmt.Sprintf("customer %d", i), "city": fmt.Sprintf("city-%d", i%97), "tier": i % 3,
				"score": float64(i) / 7, "segment": "retail", "email": fmt.Sprintf("c%d@example.com", i),
				"since": 1_600_000_000 + i, "active": i%3 != 0,
			}
			if err := tx.Put("wide", store.Key{i}, attrs, 0, store.Infinity); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return db
}

// BenchmarkGetProjected is a point read by key (Get) and by surrogate key
// (GetBySK) on one snapshot, whole and projected to two attributes: the
// projected reads pass the same list each time, as a caller's hot loop does.
func BenchmarkGetProjected(b *testing.B) {
	db := smallWideStore(b)
	snap, err := db.Snapshot()
	if err != nil {
		b.Fatal(err)
	}
	defer snap.Close()
	for _, proj := range []struct {
		name  string
		names []string
	}{{"decode=all", nil}, {"decode=two", []string{"city", "tier"}}} {
		opts := query.GetOptions{Project: proj.names}
		b.Run("get/"+proj.name, func(b *testing.B) {
			b.ReportAllocs()
			i := int64(0)
			for b.Loop() {
				if _, err := query.Get(snap, "wide", store.Key{i % 256}, query.AsOf{Valid: 5}, opts); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
		b.Run("getbysk/"+proj.name, func(b *testing.B) {
			b.ReportAllocs()
			i := uint64(0)
			for b.Loop() {
				if _, err := query.GetBySK(snap, "wide", 1+i%256, query.Latest, opts); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}
