package query_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/bitempo/bitempo/engine/pebble"
	"github.com/bitempo/bitempo/internal/sealed"
	"github.com/bitempo/bitempo/internal/storetest"
	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// The history benchmarks' data: historyKeys keys of historyVersions versions
// each, historyStep ticks long and the last one open, loaded in one
// transaction per 10,000 keys; then an SCD2 close of every key's open
// version (an Upsert at historyVersions steps), whose retired record shares
// its successor's attributes. At the newest commit a key has
// historyVersions+1 versions; as of the load, historyVersions, the last of
// them a retired record in history.
const (
	historyKeys     = 100_000
	historyVersions = 4
	historyStep     = 1_000
)

var (
	historyOnce   sync.Once
	historyDB     *store.DB
	historyLoaded int64 // the transaction time of the last load, before the closes
	historyErr    error
)

func historySetup(b *testing.B) (*store.DB, int64) {
	historyOnce.Do(func() { historyDB, historyLoaded, historyErr = buildHistoryBench() })
	if historyErr != nil {
		b.Fatal(historyErr)
	}
	return historyDB, historyLoaded
}

// buildHistoryBench writes the data into an in-memory store and reopens it.
func buildHistoryBench() (*store.DB, int64, error) {
	fs := vfs.NewMem()
	db, err := storetest.Open("history", pebble.Options{FS: fs}, store.Options{NoSync: true})
	if err != nil {
		return nil, 0, err
	}
	tb, err := db.CreateTable(store.TableDef{Name: "dim", Key: []store.KeyColumn{{Name: "id", Type: store.Int64}}})
	if err != nil {
		return nil, 0, err
	}
	for lo := 0; lo < historyKeys; lo += 10_000 {
		w, err := db.BeginWrite(sealed.Key{})
		if err != nil {
			return nil, 0, err
		}
		for i := lo; i < lo+10_000; i++ {
			key := store.Key{int64(i)}
			tuple, _ := tb.AppendKey(nil, key)
			for v := range historyVersions {
				from, to := int64(v*historyStep), int64((v+1)*historyStep)
				if v == historyVersions-1 {
					to = store.Infinity
				}
				attrs := store.Attrs{"city": fmt.Sprintf("city-%d", (i+v)%97), "tier": int64(v), "score": float64(i) / 7}
				if err := w.Assert(tb, tb.NewVersion(key, tuple, from, to, w.AllocSK(tb), attrs)); err != nil {
					w.Abort()
					return nil, 0, err
				}
			}
		}
		if err := w.Commit(); err != nil {
			return nil, 0, err
		}
	}
	loaded := db.LastTx()
	for lo := 0; lo < historyKeys; lo += 10_000 {
		_, err := txn.Update(db, func(tx *txn.Tx) error {
			for i := lo; i < lo+10_000; i++ {
				attrs := store.Attrs{"city": "moved", "tier": int64(historyVersions), "score": float64(i) / 7}
				if _, err := tx.Upsert("dim", store.Key{int64(i)}, attrs, historyVersions*historyStep); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return nil, 0, err
		}
	}
	if err := db.Close(); err != nil {
		return nil, 0, err
	}
	db, err = storetest.Open("history", pebble.Options{FS: fs}, store.Options{})
	return db, loaded, err
}

// BenchmarkHistoryRows reads the history of every key (100k keys x 5
// versions at the newest commit, x 4 as of the load, where each key's last
// version is a retired record sharing its successor's attributes) through
// HistoryRange (a store.Version with an attribute map per version) and
// HistoryRows (a reused row, its attributes read by reference), each reading
// the city and tier of every version, and reports time and heap allocations
// per row.
func BenchmarkHistoryRows(b *testing.B) {
	db, loaded := historySetup(b)
	s, err := db.Snapshot()
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	city, tier := store.NewAttrRef("city"), store.NewAttrRef("tier")
	for _, at := range []struct {
		name string
		tx   int64
		rows int
	}{{"latest", query.Latest, historyKeys * (historyVersions + 1)}, {"past", loaded, historyKeys * historyVersions}} {
		opts := query.HistoryOptions{Tx: at.tx}
		b.Run(at.name+"/map", func(b *testing.B) {
			before := mallocs()
			for b.Loop() {
				n := 0
				for v, err := range query.HistoryRange(s, "dim", query.KeyRange{}, store.NegInfinity, store.Infinity, opts) {
					if err != nil {
						b.Fatal(err)
					}
					c, _ := v.Attrs["city"].(string)
					_, ok := v.Attrs["tier"].(int64)
					if ok && c != "" {
						n++
					}
				}
				if n != at.rows {
					b.Fatalf("%d rows, want %d", n, at.rows)
				}
			}
			reportPer(b, at.rows, "row", before)
		})
		b.Run(at.name+"/rows", func(b *testing.B) {
			before := mallocs()
			for b.Loop() {
				n := 0
				_, err := query.HistoryRows(s, "dim", query.KeyRange{}, store.NegInfinity, store.Infinity, opts, func(r *store.Row) bool {
					c, _ := r.Text(city)
					_, ok := r.Int64(tier)
					if ok && len(c) > 0 {
						n++
					}
					return true
				})
				if err != nil {
					b.Fatal(err)
				}
				if n != at.rows {
					b.Fatalf("%d rows, want %d", n, at.rows)
				}
			}
			reportPer(b, at.rows, "row", before)
		})
	}
}

// BenchmarkChangesRows reads the change feed of BenchmarkHistoryRows' data
// through Changes (a store.Version with an attribute map per change) and
// ChangesRows (a reused row, its attributes read by reference), each reading
// the city and tier of every change, and reports time and heap allocations
// per change: the whole feed (the load's 400k assertions, then each close's
// retirement and two assertions, 700k changes) and the closes alone (300k,
// a third of them retired records that share their successor's attributes).
func BenchmarkChangesRows(b *testing.B) {
	db, loaded := historySetup(b)
	s, err := db.Snapshot()
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	city, tier := store.NewAttrRef("city"), store.NewAttrRef("tier")
	for _, w := range []struct {
		name    string
		since   int64
		changes int
	}{{"all", 0, historyKeys * (historyVersions + 3)}, {"closes", loaded, historyKeys * 3}} {
		b.Run(w.name+"/map", func(b *testing.B) {
			before := mallocs()
			for b.Loop() {
				n := 0
				for c, err := range query.Changes(s, "dim", w.since, query.Latest, "", query.ChangesOptions{}) {
					if err != nil {
						b.Fatal(err)
					}
					name, _ := c.Version.Attrs["city"].(string)
					_, ok := c.Version.Attrs["tier"].(int64)
					if ok && name != "" {
						n++
					}
				}
				if n != w.changes {
					b.Fatalf("%d changes, want %d", n, w.changes)
				}
			}
			reportPer(b, w.changes, "change", before)
		})
		b.Run(w.name+"/rows", func(b *testing.B) {
			before := mallocs()
			for b.Loop() {
				n := 0
				err := query.ChangesRows(s, "dim", w.since, query.Latest, "", query.ChangesOptions{}, func(c *query.ChangeRow) bool {
					name, _ := c.Row.Text(city)
					_, ok := c.Row.Int64(tier)
					if ok && len(name) > 0 {
						n++
					}
					return true
				})
				if err != nil {
					b.Fatal(err)
				}
				if n != w.changes {
					b.Fatalf("%d changes, want %d", n, w.changes)
				}
			}
			reportPer(b, w.changes, "change", before)
		})
	}
}
