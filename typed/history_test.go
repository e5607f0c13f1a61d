package typed_test

import (
	"fmt"
	"iter"
	"reflect"
	"testing"
	"time"

	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
	"github.com/bitempo/bitempo/typed"
)

// customerOf converts a version of the map API into a typed version of a
// Customer by hand: the answer the typed reads must equal.
func customerOf(t *testing.T, v *store.Version) typed.Version[Customer] {
	t.Helper()
	out := typed.Version[Customer]{ValidFrom: v.ValidFrom, ValidTo: v.ValidTo, TxFrom: v.TxFrom, TxTo: v.TxTo, SK: v.SK, Inferred: v.Inferred}
	c := &out.Value
	c.ID = v.Key[0].(string)
	for name, x := range v.Attrs {
		switch name {
		case "city":
			c.City = x.(string)
		case "tier":
			c.Tier = ptr(x.(string))
		case "since":
			c.Since = x.(time.Time)
		case "score":
			c.Score = x.(float64)
		case "orders":
			c.Orders = int32(x.(int64))
		case "closed":
			c.Closed = ptr(x.(time.Time))
		case "note":
			c.Note = append([]byte{}, x.([]byte)...)
		default:
			t.Fatalf("attribute %q is not a Customer field", name)
		}
	}
	return out
}

// TestHistoryAuditMatchMapAPI checks that the typed History and Audit, which
// decode records straight into the structs, read exactly what the map API
// reads converted by hand: over several versions, a late correction, deleted
// periods, retired records (some sharing their successor's attributes), an
// attribute missing from some versions, and with a projection of the fields.
func TestHistoryAuditMatchMapAPI(t *testing.T) {
	db, customers := open(t)
	since := time.Date(2023, 6, 1, 12, 0, 0, 0, time.UTC)
	c1 := Customer{ID: "c1", City: "Oslo", Tier: ptr("gold"), Since: since, Score: 1.5, Orders: 3, Note: []byte("n")}
	update(t, db, func(tx *txn.Tx) error {
		if _, err := customers.Upsert(tx, c1, day("2024-01-01")); err != nil {
			return err
		}
		// c2 has no score and no tier in its first version.
		_, err := tx.Upsert("customers", store.Key{"c2"}, store.Attrs{"city": "Molde", "orders": int64(1)}, day("2024-01-05"))
		return err
	})
	update(t, db, func(tx *txn.Tx) error {
		c := c1
		c.City, c.Closed = "Bergen", ptr(since.Add(time.Hour))
		if _, err := customers.Upsert(tx, c, day("2024-03-11")); err != nil {
			return err
		}
		_, err := customers.Upsert(tx, Customer{ID: "c2", City: "Molde", Tier: ptr("silver"), Score: 2, Orders: 1}, day("2024-02-01"))
		return err
	})
	update(t, db, func(tx *txn.Tx) error { // a late change splits Oslo's version
		c := c1
		c.City, c.Tier, c.Note = "Trondheim", nil, nil
		if _, err := customers.Upsert(tx, c, day("2024-02-01")); err != nil {
			return err
		}
		return customers.Delete(tx, store.Key{"c2"}, day("2024-01-10"), day("2024-01-20"))
	})
	update(t, db, func(tx *txn.Tx) error {
		if _, err := customers.DeleteAt(tx, store.Key{"c1"}, day("2024-06-01")); err != nil {
			return err
		}
		_, err := tx.Upsert("customers", store.Key{"c2"}, store.Attrs{"city": "Oslo", "score": 4.25}, day("2024-01-15"))
		return err
	})

	raw, shared := 0, 0
	for _, key := range []store.Key{{"c1"}, {"c2"}, {"c3"}} {
		for _, project := range [][]string{nil, {"city", "score"}, {"tier", "nosuch"}} {
			name := func(read string) string { return fmt.Sprintf("%s of %v projected to %q", read, key, project) }
			// History at the latest and at an earlier transaction time.
			for _, tx := range []int64{query.Latest, 3} {
				opts := query.HistoryOptions{Tx: tx, Project: project}
				var want []typed.Version[Customer]
				for v, err := range query.History(db, "customers", key, store.NegInfinity, store.Infinity, opts) {
					if err != nil {
						t.Fatal(err)
					}
					want = append(want, customerOf(t, &v))
				}
				got := values(t, customers.History(db, key, store.NegInfinity, store.Infinity, opts))
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s at tx %d:\n got %+v\nwant %+v", name("history"), tx, got, want)
				}
			}
			if project != nil {
				continue // the typed Audit reads every field
			}
			var want []typed.Version[Customer]
			for v, err := range query.Audit(db, "customers", key, query.AuditOptions{}) {
				if err != nil {
					t.Fatal(err)
				}
				want = append(want, customerOf(t, &v))
			}
			got := values(t, customers.Audit(db, key))
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s:\n got %+v\nwant %+v", name("audit"), got, want)
			}
			// The option the typed reads use: attributes left encoded, but for
			// a retired record sharing its successor's.
			for v, err := range query.Audit(db, "customers", key, query.AuditOptions{RawAttrs: true}) {
				if err != nil {
					t.Fatal(err)
				}
				switch {
				case !v.RawAttrs().IsZero() && v.Attrs == nil:
					raw++
				case v.RawAttrs().IsZero() && v.Attrs != nil && v.TxTo != store.Infinity:
					shared++
				default:
					t.Errorf("audit of %v with RawAttrs: %v has raw %v", key, &v, v.RawAttrs())
				}
			}
		}
	}
	if raw == 0 || shared == 0 {
		t.Fatalf("audit records read encoded %d, decoded (shared) %d: want both kinds", raw, shared)
	}
}

// values collects a typed sequence, failing on an error.
func values(t *testing.T, seq iter.Seq2[typed.Version[Customer], error]) []typed.Version[Customer] {
	t.Helper()
	var out []typed.Version[Customer]
	for v, err := range seq {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	return out
}

// TestHistoryAuditAllocs checks that the typed History and Audit allocate
// less than the map API's reads of the same fields (query.History and
// query.Audit projected to them) before any conversion: they build no
// attribute map for a record whose attributes it stores itself. Allocation
// counts do not depend on the machine's load, unlike timings; they do depend
// on the race detector, under which the test skips.
func TestHistoryAuditAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts vary under the race detector")
	}
	db, accounts := historyStore(t)
	snap, err := db.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	key := store.Key{int64(17)}
	fields := []string{"active", "balance", "city", "email", "name", "opened", "orders", "tier"}
	drain := func(seq func(func(store.Version, error) bool)) {
		for _, err := range seq {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	drainTyped := func(seq iter.Seq2[typed.Version[Account], error]) {
		for _, err := range seq {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	hist := query.HistoryOptions{Project: fields}
	for _, c := range []struct {
		read          string
		mapAPI, typed func()
	}{
		{"history",
			func() { drain(query.History(snap, "accounts", key, store.NegInfinity, store.Infinity, hist)) },
			func() {
				drainTyped(accounts.History(snap, key, store.NegInfinity, store.Infinity, query.HistoryOptions{}))
			}},
		{"audit",
			func() { drain(query.Audit(snap, "accounts", key, query.AuditOptions{Project: fields})) },
			func() { drainTyped(accounts.Audit(snap, key)) }},
	} {
		m, ty := testing.AllocsPerRun(20, c.mapAPI), testing.AllocsPerRun(20, c.typed)
		t.Logf("%s: map API %.0f allocs, typed %.0f", c.read, m, ty)
		if ty >= m {
			t.Errorf("%s: typed read makes %.0f allocations, the map API's %.0f", c.read, ty, m)
		}
	}
}
