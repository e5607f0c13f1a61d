package txn_test

import (
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/engine/pebble"
	"github.com/bitempo/bitempo/internal/storetest"
	"github.com/bitempo/bitempo/internal/testutil"
	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

func openSchemaStore(t *testing.T, dir string) *store.DB {
	t.Helper()
	db, err := storetest.Open(dir, pebble.Options{}, store.Options{Clock: atomicClock(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// mustDecimal parses a decimal of a test (testutil.Decimal).
var mustDecimal = testutil.Decimal

var productsDef = store.TableDef{
	Name: "products", Key: []store.KeyColumn{{Name: "sku", Type: store.String}},
	Columns: []store.Column{
		{Name: "price", Type: store.DecimalType(10, 2)},
		{Name: "category", Type: store.ColumnType{Kind: store.TypeString}, Nullable: true},
		{Name: "launched", Type: store.ColumnType{Kind: store.TypeDate}, Nullable: true},
	},
}

func TestDeclaredColumnsConvertExactValues(t *testing.T) {
	db := openSchemaStore(t, t.TempDir())
	defer db.Close()
	if _, err := db.CreateTable(productsDef); err != nil {
		t.Fatal(err)
	}
	day := time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)
	if _, err := txn.Update(db, func(tx *txn.Tx) error {
		if err := tx.Put("products", store.Key{"a"}, store.Attrs{"price": 232.1, "category": "tools", "launched": day}, 0, store.Infinity); err != nil {
			return err
		}
		return tx.Put("products", store.Key{"b"}, store.Attrs{"price": 11, "extra": "kept"}, 0, store.Infinity)
	}); err != nil {
		t.Fatal(err)
	}
	testutil.Verify(t, db)
	for key, want := range map[string]string{"a": "232.10", "b": "11.00"} {
		v, err := query.Get(db, "products", store.Key{key}, query.AsOf{Valid: 5}, query.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		d, ok := v.Attrs["price"].(encoding.Decimal)
		if !ok || d.String() != want {
			t.Fatalf("%s: price %#v, want decimal %s", key, v.Attrs["price"], want)
		}
	}
	// The same prices given as decimals, floats or integers are the same values:
	// no new version.
	last := db.LastTx()
	if _, err := txn.Update(db, func(tx *txn.Tx) error {
		if _, err := tx.Upsert("products", store.Key{"a"}, store.Attrs{"price": mustDecimal(t, "232.10"), "category": "tools", "launched": day}, 0); err != nil {
			return err
		}
		_, err := tx.Upsert("products", store.Key{"b"}, store.Attrs{"price": 11.0, "extra": "kept"}, 0)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if db.LastTx() != last {
		t.Fatalf("re-sending equal values committed a transaction")
	}
	// SCD2 closes (records that share their successor's attributes) verify
	// against the declaration too.
	for i := range 5 {
		if _, err := txn.Update(db, func(tx *txn.Tx) error {
			_, err := tx.Upsert("products", store.Key{"a"}, store.Attrs{"price": int64(10 + i)}, int64(10*(i+1)))
			return err
		}); err != nil {
			t.Fatal(err)
		}
		testutil.Verify(t, db)
	}
	if typ, ok := db.AttrType(mustTable(t, db, "products"), "price"); !ok || typ.String() != "decimal(10,2)" {
		t.Fatalf("established type of price = %v %v", typ, ok)
	}
	if typ, ok := db.AttrType(mustTable(t, db, "products"), "extra"); !ok || typ.Kind != store.TypeString {
		t.Fatalf("established type of extra = %v %v", typ, ok)
	}
}

func mustTable(t *testing.T, db *store.DB, name string) *store.Table {
	t.Helper()
	tb, err := db.Table(name)
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

func TestDeclaredColumnsRefuseMisfitsAndWriteNothing(t *testing.T) {
	db := openSchemaStore(t, t.TempDir())
	defer db.Close()
	strict := productsDef
	strict.Name, strict.Strict = "strict", true
	for _, def := range []store.TableDef{productsDef, strict, {
		Name: "feed", Key: []store.KeyColumn{{Name: "id", Type: store.Int64}}, Kind: store.Changes,
		Columns: []store.Column{{Name: "qty", Type: store.ColumnType{Kind: store.TypeUint64}}},
	}} {
		if _, err := db.CreateTable(def); err != nil {
			t.Fatal(err)
		}
	}
	good := func(tx *txn.Tx) error {
		return tx.Put("products", store.Key{"ok"}, store.Attrs{"price": 1.5}, 0, 10)
	}
	day := time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)
	for name, tc := range map[string]struct {
		write  func(tx *txn.Tx) error
		column string
	}{
		"a string in a decimal column": {func(tx *txn.Tx) error {
			return tx.Put("products", store.Key{"a"}, store.Attrs{"price": "n/a"}, 0, 10)
		}, "price"},
		"more digits than the scale": {func(tx *txn.Tx) error {
			return tx.Put("products", store.Key{"a"}, store.Attrs{"price": 0.125}, 0, 10)
		}, "price"},
		"more digits than the precision": {func(tx *txn.Tx) error {
			return tx.Put("products", store.Key{"a"}, store.Attrs{"price": int64(123_456_789)}, 0, 10)
		}, "price"},
		"a null in a column that is not nullable": {func(tx *txn.Tx) error {
			return tx.Put("products", store.Key{"a"}, store.Attrs{"price": nil}, 0, 10)
		}, "price"},
		"a missing column that is not nullable": {func(tx *txn.Tx) error {
			return tx.Put("products", store.Key{"a"}, store.Attrs{"category": "x"}, 0, 10)
		}, "price"},
		"a time that is not a date": {func(tx *txn.Tx) error {
			return tx.Put("products", store.Key{"a"}, store.Attrs{"price": 1, "launched": day.Add(time.Hour)}, 0, 10)
		}, "launched"},
		"an undeclared attribute of a strict table": {func(tx *txn.Tx) error {
			return tx.Put("strict", store.Key{"a"}, store.Attrs{"price": 1, "colour": "red"}, 0, 10)
		}, "colour"},
		"a negative number in a uint64 column, through Apply": {func(tx *txn.Tx) error {
			_, err := tx.Apply("feed", "b1", []txn.Event{{Key: store.Key{int64(1)}, At: 5, Seq: 1, Op: txn.OpUpsert, Attrs: store.Attrs{"qty": -3}}})
			return err
		}, "qty"},
	} {
		t.Run(name, func(t *testing.T) {
			last := db.LastTx()
			_, err := txn.Update(db, func(tx *txn.Tx) error {
				if err := good(tx); err != nil {
					return err
				}
				return tc.write(tx)
			})
			var se *store.SchemaError
			if !errors.Is(err, store.ErrSchema) || !errors.As(err, &se) || se.Column != tc.column {
				t.Fatalf("err = %v, want a SchemaError on column %q", err, tc.column)
			}
			if db.LastTx() != last {
				t.Fatal("a refused transaction committed")
			}
		})
	}
	testutil.Verify(t, db)
}

func TestAddAndWidenColumnsOverTransactionTime(t *testing.T) {
	dir := t.TempDir()
	db := openSchemaStore(t, dir)
	if _, err := db.CreateTable(store.TableDef{Name: "p", Key: []store.KeyColumn{{Name: "id", Type: store.String}},
		Columns: []store.Column{{Name: "qty", Type: store.ColumnType{Kind: store.TypeInt64}}}}); err != nil {
		t.Fatal(err)
	}
	put := func(attrs store.Attrs, from, to int64) {
		t.Helper()
		if _, err := txn.Update(db, func(tx *txn.Tx) error { return tx.Put("p", store.Key{"k"}, attrs, from, to) }); err != nil {
			t.Fatal(err)
		}
		testutil.Verify(t, db)
	}
	put(store.Attrs{"qty": 5}, 0, 100)
	before := db.LastTx()
	if _, err := txn.Update(db, func(tx *txn.Tx) error {
		if err := tx.AddColumn("p", store.Column{Name: "note", Type: store.ColumnType{Kind: store.TypeString}}); err == nil {
			t.Error("AddColumn of a column that is not nullable succeeded")
		}
		if err := tx.AddColumn("p", store.Column{Name: "note", Type: store.ColumnType{Kind: store.TypeString}, Nullable: true}); err != nil {
			return err
		}
		if err := tx.WidenColumn("p", "qty", store.ColumnType{Kind: store.TypeString}); err == nil {
			t.Error("int64 widened to string")
		}
		return tx.WidenColumn("p", "qty", store.DecimalType(12, 3))
	}); err != nil {
		t.Fatal(err)
	}
	altered := db.LastTx()
	if altered == before {
		t.Fatal("a declaration change committed no transaction")
	}
	// Splitting the version stored before the widening writes its int64 as
	// the column's decimal, and a new value must fit the new type.
	put(store.Attrs{"qty": mustDecimal(t, "7.125"), "note": "half"}, 50, 100)
	if _, err := txn.Update(db, func(tx *txn.Tx) error {
		return tx.Put("p", store.Key{"k"}, store.Attrs{"qty": 1.0001}, 0, 10)
	}); !errors.Is(err, store.ErrSchema) {
		t.Fatalf("a value beyond the widened scale: %v", err)
	}
	check := func(db *store.DB) {
		t.Helper()
		tb := mustTable(t, db, "p")
		if err := txn.View(db, func(s *store.Snapshot) error {
			old, err := s.Declaration(tb, before)
			if err != nil {
				return err
			}
			now, err := s.Declaration(tb, altered)
			if err != nil {
				return err
			}
			if got := store.FormatColumns(old.Columns); got != "qty:int64 not null" {
				t.Errorf("declaration before the change: %s", got)
			}
			if got := store.FormatColumns(now.Columns); got != "qty:decimal(12,3) not null,note:string" || now.Since != altered {
				t.Errorf("declaration after the change: %s since %d", got, now.Since)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		v, err := query.Get(db, "p", store.Key{"k"}, query.AsOf{Valid: 10}, query.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if d, ok := v.Attrs["qty"].(encoding.Decimal); !ok || d.String() != "5.000" {
			t.Fatalf("qty of the split piece = %#v, want 5.000", v.Attrs["qty"])
		}
		if _, ok := v.Attrs["note"]; ok {
			t.Fatal("the added column has a value in an old version")
		}
	}
	check(db)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openSchemaStore(t, dir)
	defer db.Close()
	check(db)
	testutil.Verify(t, db)
}

func TestUndeclaredAttributesKeepTheirEstablishedType(t *testing.T) {
	dir := t.TempDir()
	db := openSchemaStore(t, dir)
	for _, def := range []store.TableDef{
		{Name: "fixed", Key: []store.KeyColumn{{Name: "id", Type: store.String}}},
		{Name: "mixed", Key: []store.KeyColumn{{Name: "id", Type: store.String}}, MixedTypes: true},
	} {
		if _, err := db.CreateTable(def); err != nil {
			t.Fatal(err)
		}
	}
	for _, table := range []string{"fixed", "mixed"} {
		if _, err := txn.Update(db, func(tx *txn.Tx) error {
			return tx.Put(table, store.Key{"k"}, store.Attrs{"price": 415.26, "note": nil}, 0, 10)
		}); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openSchemaStore(t, dir)
	defer db.Close()
	fixed := mustTable(t, db, "fixed")
	if typ, ok := db.AttrType(fixed, "price"); !ok || typ.Kind != store.TypeFloat64 {
		t.Fatalf("price established %v %v after reopen", typ, ok)
	}
	if _, ok := db.AttrType(fixed, "note"); ok {
		t.Fatal("a null established a type")
	}
	last := db.LastTx()
	_, err := txn.Update(db, func(tx *txn.Tx) error {
		return tx.Put("fixed", store.Key{"k"}, store.Attrs{"price": "415.26"}, 10, 20)
	})
	var se *store.SchemaError
	if !errors.As(err, &se) || se.Column != "price" || se.Type != "float64" || db.LastTx() != last {
		t.Fatalf("a string where a float64 was established: %v", err)
	}
	// An integer is a float64 where one was established; the note takes the
	// type of its first non-null value, in this very transaction.
	if _, err := txn.Update(db, func(tx *txn.Tx) error {
		if err := tx.Put("fixed", store.Key{"k"}, store.Attrs{"price": 415, "note": "a"}, 10, 20); err != nil {
			return err
		}
		if err := tx.Put("fixed", store.Key{"j"}, store.Attrs{"note": 5}, 10, 20); !errors.Is(err, store.ErrSchema) {
			t.Errorf("a second type for note in one transaction: %v", err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	v, err := query.Get(db, "fixed", store.Key{"k"}, query.AsOf{Valid: 15}, query.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := v.Attrs["price"].(float64); !ok || p != 415 {
		t.Fatalf("price %#v, want float64 415", v.Attrs["price"])
	}
	if _, err := txn.Update(db, func(tx *txn.Tx) error {
		return tx.Put("mixed", store.Key{"k"}, store.Attrs{"price": "n/a"}, 10, 20)
	}); err != nil {
		t.Fatalf("a table with MixedTypes refused a new type: %v", err)
	}
	testutil.Verify(t, db)
}
