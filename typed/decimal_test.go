package typed_test

import (
	"errors"
	"math"
	"reflect"
	"testing"

	"github.com/bitempo/bitempo/internal/testutil"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
	"github.com/bitempo/bitempo/typed"
)

// Invoice has a decimal attribute and a nullable one.
type Invoice struct {
	ID    string            `bitempo:"id,key"`
	Total encoding.Decimal  `bitempo:"total"`
	Fee   *encoding.Decimal `bitempo:"fee"`
	Rate  float64           `bitempo:"rate"`
}

// dec parses a decimal of a test (testutil.Decimal).
var dec = testutil.Decimal

// TestDecimalFields writes decimal fields (negative, zero, 18 digits, scales
// 0 to 18, a nil pointer) and reads them back identically, scale included,
// through Get, History (whose closed versions share their successor's
// attributes and are filled from a map) and Snapshot, and through the map API.
func TestDecimalFields(t *testing.T) {
	// MixedTypes: an undeclared attribute would otherwise keep the decimal type
	// (precision and scale) its first value established.
	db, invoices := openTable[Invoice](t, "invoices", func(def *store.TableDef) { def.MixedTypes = true })
	var values []Invoice
	for i, s := range []string{"232.10", "-0.05", "0", "0.000", "999999999999999999", "-0.999999999999999999", "7"} {
		v := Invoice{ID: string(rune('a' + i)), Total: dec(t, s), Rate: 0.5}
		if i%2 == 0 {
			v.Fee = ptr(dec(t, "-"+s))
		}
		values = append(values, v)
	}
	update(t, db, func(tx *txn.Tx) error {
		for _, v := range values {
			if _, err := invoices.Upsert(tx, v, 0); err != nil {
				return err
			}
		}
		return nil
	})
	update(t, db, func(tx *txn.Tx) error {
		for _, v := range values {
			next := v
			next.Rate = 1
			if _, err := invoices.Upsert(tx, next, 10); err != nil { // retires the first version
				return err
			}
		}
		return nil
	})
	for _, want := range values {
		key := invoices.Key(want)
		got, err := invoices.Get(db, key, query.AsOf{Valid: 5})
		if err != nil || !reflect.DeepEqual(got.Value, want) {
			t.Errorf("Get %v:\n got %+v, %v\nwant %+v", key, got.Value, err, want)
		}
		n := 0
		for v, err := range invoices.History(db, key, store.NegInfinity, store.Infinity, query.HistoryOptions{}) {
			w := want
			if v.ValidFrom == 10 {
				w.Rate = 1
			}
			if err != nil || !reflect.DeepEqual(v.Value, w) {
				t.Errorf("History %v:\n got %+v, %v\nwant %+v", key, v.Value, err, w)
			}
			n++
		}
		if n < 2 {
			t.Errorf("History %v: %d versions", key, n)
		}
		// Audit also reads the retired record, which shares its successor's
		// attributes and comes back as a map.
		n = 0
		for v, err := range invoices.Audit(db, key) {
			w := want
			if v.ValidFrom == 10 {
				w.Rate = 1
			}
			if err != nil || !reflect.DeepEqual(v.Value, w) {
				t.Errorf("Audit %v:\n got %+v, %v\nwant %+v", key, v.Value, err, w)
			}
			n++
		}
		if n < 3 {
			t.Errorf("Audit %v: %d records", key, n)
		}
		attrs, err := query.Get(db, "invoices", key, query.AsOf{Valid: 5}, query.GetOptions{})
		if err != nil || attrs.Attrs["total"] != want.Total {
			t.Errorf("map API %v: %v %v, want total %v", key, attrs.Attrs, err, want.Total)
		}
	}
	n := 0
	for v, err := range invoices.Snapshot(db, query.AsOf{Valid: 5}, query.KeyRange{}) {
		if err != nil || !reflect.DeepEqual(v.Value, values[n]) {
			t.Errorf("Snapshot %d:\n got %+v, %v\nwant %+v", n, v.Value, err, values[n])
		}
		n++
	}
	if n != len(values) {
		t.Errorf("Snapshot: %d versions, want %d", n, len(values))
	}
	if _, err := typed.New[struct {
		K encoding.Decimal `bitempo:"k,key"`
	}]("t"); !errors.Is(err, typed.ErrSchema) {
		t.Errorf("a decimal key field: %v, want ErrSchema", err)
	}
}

// TestDecimalConversions: a decimal field reads a stored int64 exactly (as a
// decimal of scale 0) when it has at most 18 digits; every other stored type,
// and a decimal read into a float or int field, is a *FieldError, from the
// stored record (Get) and from a closed version's map (History).
func TestDecimalConversions(t *testing.T) {
	db, invoices := openTable[Invoice](t, "invoices", func(def *store.TableDef) { def.MixedTypes = true })
	stored := []struct {
		key   string
		attrs store.Attrs
		want  *Invoice // nil: a *FieldError
	}{
		{"int", store.Attrs{"total": int64(-42), "fee": int64(999_999_999_999_999_999)}, &Invoice{ID: "int", Total: dec(t, "-42"), Fee: ptr(dec(t, "999999999999999999"))}},
		{"int19", store.Attrs{"total": int64(math.MaxInt64)}, nil},
		{"uint", store.Attrs{"total": uint64(math.MaxUint64)}, nil},
		{"float", store.Attrs{"total": 1.5}, nil},
		{"string", store.Attrs{"fee": "1.5"}, nil},
		{"decimal-in-float", store.Attrs{"rate": dec(t, "0.25")}, nil},
		{"null", store.Attrs{"total": nil, "fee": nil}, &Invoice{ID: "null"}},
	}
	update(t, db, func(tx *txn.Tx) error {
		for _, s := range stored {
			if _, err := tx.Upsert("invoices", store.Key{s.key}, s.attrs, 0); err != nil {
				return err
			}
		}
		return nil
	})
	update(t, db, func(tx *txn.Tx) error {
		for _, s := range stored {
			if _, err := tx.Upsert("invoices", store.Key{s.key}, store.Attrs{}, 10); err != nil {
				return err
			}
		}
		return nil
	})
	type Counter struct {
		ID    string `bitempo:"id,key"`
		Total int64  `bitempo:"total"`
	}
	counters, err := typed.New[Counter]("invoices")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := counters.Get(db, store.Key{"decimal-in-float"}, query.AsOf{Valid: 5}); err != nil {
		t.Fatal(err) // no total: nothing to convert
	}
	for _, s := range stored {
		got, err := invoices.Get(db, store.Key{s.key}, query.AsOf{Valid: 5})
		checkConversion(t, "Get "+s.key, got.Value, err, s.want)
		for v, err := range invoices.History(db, store.Key{s.key}, store.NegInfinity, 10, query.HistoryOptions{}) {
			checkConversion(t, "History "+s.key, v.Value, err, s.want)
		}
		for v, err := range invoices.Audit(db, store.Key{s.key}) { // the retired record is read from a map
			if err != nil || v.ValidFrom == 0 {
				checkConversion(t, "Audit "+s.key, v.Value, err, s.want)
			}
		}
	}
	_, err = counters.Get(db, store.Key{"int"}, query.AsOf{Valid: 5})
	if err != nil {
		t.Fatalf("an int64 in an int field: %v", err)
	}
	update(t, db, func(tx *txn.Tx) error {
		_, err := tx.Upsert("invoices", store.Key{"d"}, store.Attrs{"total": dec(t, "3")}, 0)
		return err
	})
	if _, err := counters.Get(db, store.Key{"d"}, query.AsOf{Valid: 5}); !errors.Is(err, typed.ErrField) {
		t.Errorf("a decimal in an int field: %v, want ErrField", err)
	}
}

func checkConversion(t *testing.T, what string, got Invoice, err error, want *Invoice) {
	t.Helper()
	if want == nil {
		var fe *typed.FieldError
		if !errors.Is(err, typed.ErrField) || !errors.As(err, &fe) {
			t.Errorf("%s: %+v, %v, want a *FieldError", what, got, err)
		}
		return
	}
	if err != nil || !reflect.DeepEqual(got, *want) {
		t.Errorf("%s:\n got %+v, %v\nwant %+v", what, got, err, *want)
	}
}
