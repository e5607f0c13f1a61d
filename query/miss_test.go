package query_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// TestMissMessage: a miss prints its valid time on the table's axis (RFC 3339
// on a time axis, a date on a date axis, the integer on an int axis) and its
// transaction time as RFC 3339, or "latest"; its fields are the read's.
func TestMissMessage(t *testing.T) {
	db, err := store.Open("db", store.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const sep20 = 1726790400000000 // 2024-09-20T00:00:00Z
	for _, c := range []struct {
		axis  store.Axis
		valid int64
		tx    int64
		want  string
	}{
		{store.AxisTime, sep20 + 1500000, 0, "at valid 2024-09-20T00:00:01.5Z tx latest: unknown key"},
		{store.AxisDate, sep20, 0, "at valid 2024-09-20 tx latest: unknown key"},
		{store.AxisInt, 42, sep20, "at valid 42 tx 2024-09-20T00:00:00Z: unknown key"},
	} {
		name := "t" + c.axis.String()
		if _, err := db.CreateTable(store.TableDef{Name: name, Key: []store.KeyColumn{{Name: "id", Type: store.String}}, Axis: c.axis}); err != nil {
			t.Fatal(err)
		}
		if _, err := txn.Update(db, func(tx *txn.Tx) error {
			_, err := tx.Upsert(name, store.Key{"a"}, store.Attrs{"x": "1"}, 1)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		_, err := query.Get(db, name, store.Key{"zz"}, query.AsOf{Valid: c.valid, Tx: c.tx}, query.GetOptions{})
		var miss *query.Miss
		if !errors.As(err, &miss) || !errors.Is(err, query.ErrUnknownKey) {
			t.Fatalf("%s: %v", name, err)
		}
		if miss.Table != name || miss.At.Valid != c.valid || miss.At.Tx != c.tx || miss.Reason != store.UnknownKey {
			t.Fatalf("%s: fields %+v", name, miss)
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Fatalf("%s: %q, want %q", name, err, c.want)
		}
	}
	// A Miss built as a literal knows no axis: raw ticks.
	m := &query.Miss{Table: "x", Key: store.Key{"k"}, At: query.AsOf{Valid: 7}, Reason: store.InGap}
	if !strings.Contains(m.Error(), "at valid 7 tx latest") {
		t.Fatalf("literal miss: %s", m)
	}
}
