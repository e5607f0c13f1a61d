package query_test

import (
	"testing"
	"time"

	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// TestTimeAttributeReads checks that a time attribute comes back from every
// read path as the canonical time.Time it was stored as (UTC, microseconds).
func TestTimeAttributeReads(t *testing.T) {
	db, err := store.Open("", store.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.CreateTable(store.TableDef{Name: "c", Key: []store.KeyColumn{{Name: "id", Type: store.String}}, Axis: store.AxisInt}); err != nil {
		t.Fatal(err)
	}
	in := time.Date(2024, 3, 11, 10, 30, 0, 123456789, time.FixedZone("CET", 3600))
	want := time.Date(2024, 3, 11, 9, 30, 0, 123456000, time.UTC)
	_, err = txn.Update(db, func(tx *txn.Tx) error {
		if _, err := tx.Upsert("c", store.Key{"k"}, store.Attrs{"since": in}, 10); err != nil {
			return err
		}
		_, err := tx.Upsert("c", store.Key{"k"}, store.Attrs{"since": in.Add(time.Hour)}, 20)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	check := func(path string, v any) {
		t.Helper()
		if got, ok := v.(time.Time); !ok || got != want {
			t.Errorf("%s: since = %#v, want %v", path, v, want)
		}
	}
	v, err := query.Get(db, "c", store.Key{"k"}, query.AsOf{Valid: 15}, query.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	check("Get", v.Attrs["since"])
	for v, err := range query.Snapshot(db, "c", query.AsOf{Valid: 15}, query.KeyRange{}, query.SnapshotOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		check("Snapshot", v.Attrs["since"])
	}
	n := 0
	for v, err := range query.History(db, "c", store.Key{"k"}, store.NegInfinity, store.Infinity, query.HistoryOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			check("History", v.Attrs["since"])
		}
		n++
	}
	res, err := query.Resolve(db, "c", []query.Fact{{Key: store.Key{"k"}, At: 25}, {Key: store.Key{"k"}, At: 12}}, query.ResolveOptions{Attrs: true})
	if err != nil {
		t.Fatal(err)
	}
	check("Resolve", res[1].Attrs["since"])
	if got := res[0].Attrs["since"].(time.Time); got != want.Add(time.Hour) {
		t.Errorf("Resolve at 25: %v", got)
	}
	f, err := query.AggregateTable(db, "c", query.AsOf{Valid: 25}, []query.Agg{{Op: query.AggMax, Input: "since"}, {Op: query.AggLatest, Input: "since"}})
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range f.Values {
		if got, ok := v.(time.Time); !ok || got != want.Add(time.Hour) {
			t.Errorf("%s = %#v, want %v", f.Names[i], v, want.Add(time.Hour))
		}
	}
}
