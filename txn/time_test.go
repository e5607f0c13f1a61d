package txn_test

import (
	"testing"
	"time"

	"github.com/bitempo/bitempo/internal/testutil"
	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// TestUpsertTimeChangeDetection checks that a time attribute is compared as an
// instant: the same instant written in another zone or with sub-microsecond
// digits is no change, whatever the attribute's compare options; a later instant,
// or the same instant as an integer, is.
func TestUpsertTimeChangeDetection(t *testing.T) {
	db, err := store.Open("", store.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_, err = db.CreateTable(store.TableDef{
		Name: "people", Key: []store.KeyColumn{{Name: "id", Type: store.String}}, Axis: store.AxisInt,
		Compare:    map[string]store.CompareOptions{"born": {Trim: true, FoldCase: true, Round: true, Scale: 0}},
		MixedTypes: true, // born changes type on purpose
	})
	if err != nil {
		t.Fatal(err)
	}
	born := time.Date(1990, 5, 17, 8, 30, 0, 123456000, time.UTC)
	upsert := func(at int64, v any) txn.Outcome {
		t.Helper()
		var out txn.Outcome
		_, err := txn.Update(db, func(tx *txn.Tx) error {
			var err error
			out, err = tx.Upsert("people", store.Key{"p1"}, store.Attrs{"born": v}, at)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		testutil.Verify(t, db)
		return out
	}
	if got := upsert(10, born); got != txn.Inserted {
		t.Fatalf("first upsert: %v", got)
	}
	for _, same := range []time.Time{born.In(time.FixedZone("CEST", 7200)), born.Add(999 * time.Nanosecond)} {
		if got := upsert(20, same); got != txn.Unchanged {
			t.Errorf("upsert of %v, the same instant: %v, want unchanged", same, got)
		}
	}
	if got := upsert(30, born.UnixMicro()); got != txn.Changed {
		t.Errorf("upsert of the same instant as an int64: %v, want changed", got)
	}
	if got := upsert(40, born.Add(time.Microsecond)); got != txn.Changed {
		t.Errorf("upsert of a later instant: %v, want changed", got)
	}
	v, err := query.Get(db, "people", store.Key{"p1"}, query.AsOf{Valid: 25}, query.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := v.Attrs["born"].(time.Time); !ok || !got.Equal(born) || got.Location() != time.UTC {
		t.Fatalf("born at 25 = %#v, want %v in UTC", v.Attrs["born"], born)
	}
	if v.ValidFrom != 10 || v.ValidTo != 30 {
		t.Fatalf("version at 25 spans [%d, %d), want [10, 30)", v.ValidFrom, v.ValidTo)
	}
}

// TestApplyTimeAttributes checks CDC change detection on a time attribute: a
// duplicate event naming the same instant in another zone joins the run.
func TestApplyTimeAttributes(t *testing.T) {
	db, err := store.Open("", store.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.CreateTable(store.TableDef{Name: "feed", Key: []store.KeyColumn{{Name: "id", Type: store.String}}, Kind: store.Changes, Axis: store.AxisInt}); err != nil {
		t.Fatal(err)
	}
	seen := time.Date(2024, 3, 11, 9, 0, 0, 0, time.UTC)
	events := []txn.Event{
		{Key: store.Key{"k"}, At: 1, Op: txn.OpUpsert, Attrs: store.Attrs{"seen": seen}},
		{Key: store.Key{"k"}, At: 2, Op: txn.OpUpsert, Attrs: store.Attrs{"seen": seen.In(time.FixedZone("X", -3600))}},
		{Key: store.Key{"k"}, At: 3, Op: txn.OpUpsert, Attrs: store.Attrs{"seen": seen.Add(time.Hour)}},
	}
	_, err = txn.Update(db, func(tx *txn.Tx) error {
		_, err := tx.Apply("feed", "b1", events)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	testutil.Verify(t, db)
	var spans [][2]int64
	for v, err := range query.History(db, "feed", store.Key{"k"}, store.NegInfinity, store.Infinity, query.HistoryOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := v.Attrs["seen"].(time.Time); !ok {
			t.Fatalf("seen decoded as %T", v.Attrs["seen"])
		}
		spans = append(spans, [2]int64{v.ValidFrom, v.ValidTo})
	}
	if len(spans) != 2 || spans[0] != [2]int64{1, 3} || spans[1] != [2]int64{3, store.Infinity} {
		t.Fatalf("versions %v, want [1,3) and [3,+inf)", spans)
	}
}
