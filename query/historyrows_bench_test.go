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

// historySnapshot returns a snapshot of the data, closed when b ends, and
// the transaction time of the last load.
func historySnapshot(b *testing.B) (*store.Snapshot, int64) {
	db, loaded := historySetup(b)
	s, err := db.Snapshot()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s, loaded
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
	s, loaded := historySnapshot(b)
	refs := newCityTier()
	for _, at := range []struct {
		name string
		tx   int64
		rows int
	}{{"latest", query.Latest, historyKeys * (historyVersions + 1)}, {"past", loaded, historyKeys * historyVersions}} {
		opts := query.HistoryOptions{Tx: at.tx}
		b.Run(at.name+"/map", func(b *testing.B) {
			benchPer(b, at.rows, "row", func() (n int) {
				for v, err := range query.HistoryRange(s, "dim", query.KeyRange{}, store.NegInfinity, store.Infinity, opts) {
					if err != nil {
						b.Fatal(err)
					}
					n += mapCityTier(v.Attrs)
				}
				return n
			})
		})
		b.Run(at.name+"/rows", func(b *testing.B) {
			benchPer(b, at.rows, "row", func() (n int) {
				_, err := query.HistoryRows(s, "dim", query.KeyRange{}, store.NegInfinity, store.Infinity, opts, func(r *store.Row) bool {
					n += refs.read(r)
					return true
				})
				if err != nil {
					b.Fatal(err)
				}
				return n
			})
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
	s, loaded := historySnapshot(b)
	refs := newCityTier()
	for _, w := range []struct {
		name    string
		since   int64
		changes int
	}{{"all", 0, historyKeys * (historyVersions + 3)}, {"closes", loaded, historyKeys * 3}} {
		b.Run(w.name+"/map", func(b *testing.B) {
			benchPer(b, w.changes, "change", func() (n int) {
				for c, err := range query.Changes(s, "dim", w.since, query.Latest, "", query.ChangesOptions{}) {
					if err != nil {
						b.Fatal(err)
					}
					n += mapCityTier(c.Version.Attrs)
				}
				return n
			})
		})
		b.Run(w.name+"/rows", func(b *testing.B) {
			benchPer(b, w.changes, "change", func() (n int) {
				err := query.ChangesRows(s, "dim", w.since, query.Latest, "", query.ChangesOptions{}, func(c *query.ChangeRow) bool {
					n += refs.read(c.Row)
					return true
				})
				if err != nil {
					b.Fatal(err)
				}
				return n
			})
		})
	}
}

// benchPer runs read, which reads want items and returns how many it read,
// and reports the time and heap allocations per item.
func benchPer(b *testing.B, want int, unit string, read func() int) {
	before := mallocs()
	for b.Loop() {
		if n := read(); n != want {
			b.Fatalf("%d %ss, want %d", n, unit, want)
		}
	}
	reportPer(b, want, unit, before)
}

// mapCityTier reports 1 when attrs hold a city and a tier, else 0.
func mapCityTier(attrs store.Attrs) int {
	city, _ := attrs["city"].(string)
	if _, ok := attrs["tier"].(int64); ok && city != "" {
		return 1
	}
	return 0
}

// cityTier reads the city and tier of rows.
type cityTier struct{ city, tier *store.AttrRef }

func newCityTier() cityTier {
	return cityTier{store.NewAttrRef("city"), store.NewAttrRef("tier")}
}

// read reports 1 when r holds a city and a tier, else 0.
func (c cityTier) read(r *store.Row) int {
	city, _ := r.Text(c.city)
	if _, ok := r.Int64(c.tier); ok && len(city) > 0 {
		return 1
	}
	return 0
}
