package typed_test

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/bitempo/bitempo/internal/testutil"
	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
	"github.com/bitempo/bitempo/typed"
)

// Customer is the struct the tests store: a string key, plain, nullable and
// time attributes, and a field left out.
type Customer struct {
	ID      string     `bitempo:"id,key"`
	City    string     `bitempo:"city"`
	Tier    *string    `bitempo:"tier"` // nullable
	Since   time.Time  `bitempo:"since"`
	Score   float64    `bitempo:"score"`
	Orders  int32      `bitempo:"orders"`
	Closed  *time.Time `bitempo:"closed"`
	Note    []byte     `bitempo:"note"`
	Scratch int        `bitempo:"-"` // left out
}

func day(s string) int64 {
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		panic(err)
	}
	return t.UnixMicro()
}

func ptr[V any](v V) *V { return &v }

func open(t *testing.T) (*store.DB, *typed.Table[Customer]) {
	t.Helper()
	return openTable[Customer](t, "customers", func(def *store.TableDef) { def.Axis = store.AxisDate })
}

// openTable opens an in-memory store holding the typed table of T named name,
// its declaration changed by adjust first (nil: as T declares it).
func openTable[T any](tb testing.TB, name string, adjust func(*store.TableDef)) (*store.DB, *typed.Table[T]) {
	tb.Helper()
	db, err := store.Open("", store.Options{InMemory: true})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	table, err := typed.New[T](name)
	if err != nil {
		tb.Fatal(err)
	}
	def := table.Def()
	if adjust != nil {
		adjust(&def)
	}
	if _, err := db.CreateTable(def); err != nil {
		tb.Fatal(err)
	}
	return db, table
}

func update(t *testing.T, db *store.DB, fn func(tx *txn.Tx) error) txn.Commit {
	t.Helper()
	c, err := txn.Update(db, fn)
	if err != nil {
		t.Fatal(err)
	}
	testutil.Verify(t, db)
	return c
}

// TestOsloBergen is the map API's first scenario with a struct: Oslo from 1
// January, Bergen from 11 March; the state as known before the move stays
// readable; the three misses are told apart.
func TestOsloBergen(t *testing.T) {
	db, customers := open(t)
	since := time.Date(2023, 6, 1, 12, 0, 0, 0, time.UTC)
	first := update(t, db, func(tx *txn.Tx) error {
		_, err := customers.Upsert(tx, Customer{ID: "c1", City: "Oslo", Tier: ptr("gold"), Since: since, Score: 1.5, Orders: 3, Note: []byte{}}, day("2024-01-01"))
		return err
	})
	update(t, db, func(tx *txn.Tx) error {
		out, err := customers.Upsert(tx, Customer{ID: "c1", City: "Bergen", Tier: ptr("gold"), Since: since, Score: 1.5, Orders: 3, Note: []byte{}}, day("2024-03-11"))
		if out != txn.Changed {
			t.Errorf("move: %v", out)
		}
		return err
	})
	v, err := customers.Get(db, store.Key{"c1"}, query.AsOf{Valid: day("2024-03-08")})
	if err != nil {
		t.Fatal(err)
	}
	want := Customer{ID: "c1", City: "Oslo", Tier: ptr("gold"), Since: since, Score: 1.5, Orders: 3, Note: []byte{}}
	if !reflect.DeepEqual(v.Value, want) || v.SK != 1 || v.ValidFrom != day("2024-01-01") || v.ValidTo != day("2024-03-11") || v.TxTo != store.Infinity {
		t.Fatalf("on 8 March: %+v", v)
	}
	v, err = customers.Get(db, store.Key{"c1"}, query.AsOf{Valid: day("2024-03-12")})
	if err != nil || v.Value.City != "Bergen" || v.SK != 2 || v.ValidTo != store.Infinity || v.TxTo != store.Infinity {
		t.Fatalf("on 12 March: %+v, %v", v, err)
	}
	v, err = customers.Get(db, store.Key{"c1"}, query.AsOf{Valid: day("2024-03-12"), Tx: first.Tx})
	if err != nil || v.Value.City != "Oslo" || v.ValidTo != store.Infinity {
		t.Fatalf("as known before the move: %+v, %v", v, err)
	}

	// A gap, then the three misses and an unknown key.
	update(t, db, func(tx *txn.Tx) error {
		if err := customers.Delete(tx, store.Key{"c1"}, day("2024-02-01"), day("2024-02-10")); err != nil {
			return err
		}
		_, err := customers.DeleteAt(tx, store.Key{"c1"}, day("2024-06-01"))
		return err
	})
	for _, tt := range []struct {
		key   string
		valid string
		want  error
	}{
		{"c1", "2023-12-31", query.ErrBeforeFirst},
		{"c1", "2024-02-05", query.ErrInGap},
		{"c1", "2024-06-01", query.ErrAfterLast},
		{"c9", "2024-03-01", query.ErrUnknownKey},
	} {
		_, err := customers.Get(db, store.Key{tt.key}, query.AsOf{Valid: day(tt.valid)})
		var miss *query.Miss
		if !errors.Is(err, tt.want) || !errors.As(err, &miss) {
			t.Errorf("Get %s at %s: %v, want %v", tt.key, tt.valid, err, tt.want)
		}
	}
}

// TestLateChangeLandsBetween: an Upsert effective between two versions closes
// the earlier one at its time and runs to the later one's start.
func TestLateChangeLandsBetween(t *testing.T) {
	db, customers := open(t)
	update(t, db, func(tx *txn.Tx) error {
		if _, err := customers.Upsert(tx, Customer{ID: "c1", City: "Oslo"}, day("2024-01-01")); err != nil {
			return err
		}
		_, err := customers.Upsert(tx, Customer{ID: "c1", City: "Bergen"}, day("2024-03-11"))
		return err
	})
	update(t, db, func(tx *txn.Tx) error {
		out, err := customers.Upsert(tx, Customer{ID: "c1", City: "Trondheim"}, day("2024-02-01"))
		if out != txn.Changed {
			t.Errorf("late change: %v", out)
		}
		return err
	})
	var got []string
	for v, err := range customers.History(db, store.Key{"c1"}, store.NegInfinity, store.Infinity, query.HistoryOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, v.Value.City+" "+time.UnixMicro(v.ValidFrom).UTC().Format(time.DateOnly))
	}
	if want := "Oslo 2024-01-01,Trondheim 2024-02-01,Bergen 2024-03-11"; strings.Join(got, ",") != want {
		t.Fatalf("history %v, want %s", got, want)
	}
	n := 0
	for v, err := range customers.Audit(db, store.Key{"c1"}) {
		if err != nil || v.Value.ID != "c1" {
			t.Fatalf("audit: %+v, %v", v, err)
		}
		n++
	}
	if n != 4 { // Oslo (retired, then re-asserted shorter), Bergen, Trondheim
		t.Fatalf("audit has %d records, want 4", n)
	}
}

// TestSnapshotAndResolve checks the scans and the batch join, with each miss
// policy's output.
func TestSnapshotAndResolve(t *testing.T) {
	db, customers := open(t)
	update(t, db, func(tx *txn.Tx) error {
		for _, c := range []Customer{{ID: "a", City: "Oslo", Orders: 1}, {ID: "b", City: "Bergen", Orders: 2}, {ID: "c", City: "Molde", Orders: 3}} {
			if _, err := customers.Upsert(tx, c, day("2024-01-01")); err != nil {
				return err
			}
		}
		_, err := customers.Upsert(tx, Customer{ID: "b", City: "Bodø", Orders: 2}, day("2024-02-01"))
		return err
	})
	var cities []string
	for v, err := range customers.Snapshot(db, query.AsOf{Valid: day("2024-03-01")}, query.KeyRange{Start: store.Key{"b"}}) {
		if err != nil {
			t.Fatal(err)
		}
		cities = append(cities, v.Value.ID+"="+v.Value.City)
	}
	if strings.Join(cities, ",") != "b=Bodø,c=Molde" {
		t.Fatalf("snapshot: %v", cities)
	}
	facts := []query.Fact{{Key: store.Key{"b"}, At: day("2024-03-01")}, {Key: store.Key{"zz"}, At: day("2024-03-01")}, {Key: store.Key{"b"}, At: day("2024-01-15")}, {Key: store.Key{"a"}, At: day("2023-01-01")}}
	res, err := customers.Resolve(db, facts, query.ResolveOptions{Miss: query.MissNull})
	if err != nil {
		t.Fatal(err)
	}
	got := make([]string, len(res))
	for i, r := range res {
		got[i] = r.Reason.String() + ":" + r.Value.ID + ":" + r.Value.City
	}
	if want := "found:b:Bodø,unknown key::,found:b:Bergen,before the first version::"; strings.Join(got, ",") != want {
		t.Fatalf("resolve: %v\nwant %s", got, want)
	}
	if _, err := customers.Resolve(db, facts, query.ResolveOptions{}); !errors.Is(err, query.ErrUnknownKey) {
		t.Fatalf("MissError: %v", err)
	}
	res, err = customers.ResolveInferred(db, facts, query.ResolveOptions{Miss: query.MissNull})
	if err != nil || !res[1].Inferred || !reflect.DeepEqual(res[1].Value, Customer{ID: "zz"}) || res[0].Value.City != "Bodø" {
		t.Fatalf("ResolveInferred: %+v, %v", res, err)
	}
}

// TestDeclarationErrors checks that a struct that cannot describe a table is
// refused when it is declared (New) or checked against the store (Check, or the
// first write), never later.
func TestDeclarationErrors(t *testing.T) {
	type unexported struct {
		ID   string `bitempo:"id,key"`
		city string
	}
	_ = unexported{city: "unused but for the check"}
	type unsupported struct {
		ID   string `bitempo:"id,key"`
		Tags []string
	}
	type noKey struct{ City string }
	type ptrKey struct {
		ID *string `bitempo:"id,key"`
	}
	type floatKey struct {
		ID float64 `bitempo:"id,key"`
	}
	type dupName struct {
		ID   string `bitempo:"id,key"`
		A    string `bitempo:"x"`
		B    string `bitempo:"x"`
		Skip func() `bitempo:"-"`
	}
	type badOption struct {
		ID string `bitempo:"id,primary"`
	}
	for name, err := range map[string]error{
		"unexported":  declare[unexported](),
		"unsupported": declare[unsupported](),
		"no key":      declare[noKey](),
		"pointer key": declare[ptrKey](),
		"float key":   declare[floatKey](),
		"dup name":    declare[dupName](),
		"bad option":  declare[badOption](),
		"not struct":  declare[string](),
	} {
		var se *typed.SchemaError
		if !errors.Is(err, typed.ErrSchema) || !errors.As(err, &se) {
			t.Errorf("%s: %v, want a *SchemaError", name, err)
		}
	}

	db, _ := open(t) // customers: key id string
	type wrongName struct {
		CID  string `bitempo:"cid,key"`
		City string `bitempo:"city"`
	}
	type wrongType struct {
		ID int64 `bitempo:"id,key"`
	}
	type keyAsAttr struct {
		Key string `bitempo:"k,key"`
		ID  string `bitempo:"id"`
	}
	type twoKeys struct {
		ID  string `bitempo:"id,key"`
		Sub string `bitempo:"sub,key"`
	}
	for name, err := range map[string]error{
		"wrong name":  check[wrongName](db),
		"wrong type":  check[wrongType](db),
		"key as attr": check[keyAsAttr](db),
		"two keys":    check[twoKeys](db),
	} {
		if !errors.Is(err, typed.ErrSchema) {
			t.Errorf("%s: %v, want ErrSchema", name, err)
		}
	}
	// The first write checks too, and writes nothing.
	tbl, err := typed.New[wrongName]("customers")
	if err != nil {
		t.Fatal(err)
	}
	_, err = txn.Update(db, func(tx *txn.Tx) error {
		_, err := tbl.Upsert(tx, wrongName{CID: "x", City: "Oslo"}, 0)
		return err
	})
	if !errors.Is(err, typed.ErrSchema) || !strings.Contains(err.Error(), `"cid"`) {
		t.Fatalf("write with a mis-declared key: %v", err)
	}
	if _, err := typed.New[Customer]("nope"); err != nil {
		t.Fatal(err)
	}
	if err := check[Customer](db); err != nil {
		t.Fatalf("Customer fits: %v", err)
	}
}

func declare[T any]() error {
	_, err := typed.New[T]("customers")
	return err
}

func check[T any](db *store.DB) error {
	tbl, err := typed.New[T]("customers")
	if err != nil {
		return err
	}
	return tbl.Check(db)
}

// TestFieldErrors checks that stored values that do not fit a field are a
// *FieldError naming the key, the attribute and the field, and that values
// that fit after conversion (widths, nulls) are read.
func TestFieldErrors(t *testing.T) {
	db, customers := openTable[Customer](t, "customers", func(def *store.TableDef) {
		def.Axis = store.AxisDate
		def.MixedTypes = true // stored values of other types than the fields'
	})
	update(t, db, func(tx *txn.Tx) error {
		if _, err := tx.Upsert("customers", store.Key{"a"}, store.Attrs{"orders": "many"}, 0); err != nil {
			return err
		}
		if _, err := tx.Upsert("customers", store.Key{"b"}, store.Attrs{"orders": int64(math.MaxInt32) + 1}, 0); err != nil {
			return err
		}
		if _, err := tx.Upsert("customers", store.Key{"c"}, store.Attrs{"orders": int64(-7), "tier": nil, "city": nil, "extra": "ignored"}, 0); err != nil {
			return err
		}
		_, err := tx.Upsert("customers", store.Key{"d"}, store.Attrs{"since": "2024-01-01"}, 0)
		return err
	})
	for _, key := range []string{"a", "b", "d"} {
		_, err := customers.Get(db, store.Key{key}, query.AsOf{Valid: 1})
		var fe *typed.FieldError
		if !errors.Is(err, typed.ErrField) || !errors.As(err, &fe) || fe.Key[0] != key {
			t.Errorf("key %s: %v, want a *FieldError", key, err)
		}
	}
	v, err := customers.Get(db, store.Key{"c"}, query.AsOf{Valid: 1})
	if err != nil || !reflect.DeepEqual(v.Value, Customer{ID: "c", Orders: -7}) {
		t.Fatalf("key c: %+v, %v", v, err)
	}
	// A scan stops at the first value that does not fit.
	n := 0
	for _, err := range customers.Snapshot(db, query.AsOf{Valid: 1}, query.KeyRange{}) {
		n++
		if !errors.Is(err, typed.ErrField) || n > 1 {
			t.Fatalf("snapshot: %v after %d", err, n)
		}
	}
	// History reports the same errors as Get.
	for _, err := range customers.History(db, store.Key{"a"}, store.NegInfinity, store.Infinity, query.HistoryOptions{}) {
		if !errors.Is(err, typed.ErrField) {
			t.Fatalf("history of a: %v", err)
		}
	}
}

// TestRoundTripKinds writes every supported field type, pointers set and
// nil, and reads them back identically through Get, History and Snapshot.
func TestRoundTripKinds(t *testing.T) {
	type Status string
	type All struct {
		K1  int32   `bitempo:"k1,key"`
		K2  []byte  `bitempo:"k2,key"`
		B   bool    `bitempo:"b"`
		I   int     `bitempo:"i"`
		I8  int8    `bitempo:"i8"`
		U   uint64  `bitempo:"u"`
		U16 uint16  `bitempo:"u16"`
		F32 float32 `bitempo:"f32"`
		S   Status
		T   time.Time
		PB  *bool
		PU  *uint
		PS  *string
		PT  *time.Time
		Raw []byte
	}
	db, err := store.Open("", store.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tbl, err := typed.New[All]("all")
	if err != nil {
		t.Fatal(err)
	}
	def := tbl.Def()
	if def.Key[0].Type != store.Int64 || def.Key[1].Type != store.Bytes {
		t.Fatalf("def %+v", def)
	}
	if _, err := db.CreateTable(def); err != nil {
		t.Fatal(err)
	}
	tm := time.Date(2024, 3, 11, 9, 30, 0, 123456000, time.UTC)
	values := []All{
		{K1: -5, K2: []byte("x"), B: true, I: -1 << 40, I8: -128, U: math.MaxUint64, U16: 65535, F32: 1.25, S: "open", T: tm,
			PB: ptr(false), PU: ptr(uint(7)), PS: ptr(""), PT: ptr(tm), Raw: []byte{}},
		{K1: 7, K2: []byte{}},
	}
	update(t, db, func(tx *txn.Tx) error {
		for _, v := range values {
			if err := tbl.Put(tx, v, 0, 10); err != nil {
				return err
			}
		}
		return nil
	})
	for _, want := range values {
		key := tbl.Key(want)
		got, err := tbl.Get(db, key, query.AsOf{Valid: 5})
		if err != nil || !reflect.DeepEqual(got.Value, want) {
			t.Errorf("Get %v:\n got %+v, %v\nwant %+v", key, got.Value, err, want)
		}
		for v, err := range tbl.History(db, key, store.NegInfinity, store.Infinity, query.HistoryOptions{}) {
			if err != nil || !reflect.DeepEqual(v.Value, want) {
				t.Errorf("History %v:\n got %+v, %v\nwant %+v", key, v.Value, err, want)
			}
		}
		n := 0
		for v, err := range tbl.Snapshot(db, query.AsOf{Valid: 5}, query.KeyRange{Prefix: key}) {
			if err != nil || !reflect.DeepEqual(v.Value, want) || v.ValidFrom != 0 || v.ValidTo != 10 {
				t.Errorf("Snapshot %v:\n got %+v, %v\nwant %+v", key, v, err, want)
			}
			n++
		}
		if n != 1 {
			t.Errorf("Snapshot of %v: %d versions", key, n)
		}
	}
}
