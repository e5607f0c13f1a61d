package store

import (
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/bitempo/bitempo/engine"
	"github.com/bitempo/bitempo/layout"
)

// TestVerifyFindsRecordsThatDoNotFitTheirDeclaration plants a declaration
// (catalog entry and schema entry) that the records already stored contradict,
// as a damaged or hand-edited store could, and checks that Verify reports
// invariant 7 for them and for a catalog that disagrees with the newest
// schema entry.
func TestVerifyFindsRecordsThatDoNotFitTheirDeclaration(t *testing.T) {
	db, err := Open("db", Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tb, err := db.CreateTable(TableDef{Name: "p", Key: []KeyColumn{{Name: "id", Type: String}}})
	if err != nil {
		t.Fatal(err)
	}
	commitOne(t, db, tb, "a", 1) // n: int64 1
	rep, err := Verify(db)
	if err != nil || !rep.OK() {
		t.Fatalf("before: %v %v", rep, err)
	}
	def := cloneDef(tb.TableDef)
	def.Columns = []Column{{Name: "n", Type: ColumnType{Kind: TypeString}}}
	cat, _ := msgpack.Marshal(&catalogRecord{ID: tb.ID, Def: def})
	decl, _ := marshalDeclaration(&def)
	if err := db.commit([]engine.Write{{Key: layout.CatalogKey("p"), Value: cat}, {Key: layout.SchemaKey(tb.ID, 0), Value: decl}}, true); err != nil {
		t.Fatal(err)
	}
	reopened := newTable(def, tb.ID)
	db.mu.Lock()
	db.tables["p"], db.byID[tb.ID] = reopened, reopened
	db.mu.Unlock()
	rep, err = Verify(db)
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK() || !strings.Contains(rep.String(), "invariant 7") || !strings.Contains(rep.String(), `column "n"`) {
		t.Fatalf("a record that does not fit its declaration: %s", rep)
	}
	// A catalog entry newer than the schema entries is reported too.
	def.Columns = append(def.Columns, Column{Name: "m", Type: ColumnType{Kind: TypeBool}, Nullable: true})
	other := newTable(def, tb.ID)
	db.mu.Lock()
	db.tables["p"], db.byID[tb.ID] = other, other
	db.mu.Unlock()
	if rep, _ = Verify(db); !strings.Contains(rep.String(), "not the newest recorded one") {
		t.Fatalf("a catalog that disagrees with the schema entries: %s", rep)
	}
}

func TestParseColumnTypes(t *testing.T) {
	for in, want := range map[string]string{
		"decimal(10,2)": "decimal(10,2)", "NUMERIC( 12 , 3 )": "decimal(12,3)", "decimal(5)": "decimal(5,0)",
		"int": "int64", "double": "float64", "date": "date", "timestamp": "time", "text": "string", "uint64": "uint64",
	} {
		got, err := ParseColumnType(in)
		if err != nil || got.String() != want {
			t.Errorf("ParseColumnType(%q) = %v, %v; want %s", in, got, err, want)
		}
	}
	for _, bad := range []string{"decimal", "decimal10,2)", "decimal(10,2", "decimal(19,2)", "decimal(2,3)", "decimal(0)", "decimal(a,b)", "float32", ""} {
		if _, err := ParseColumnType(bad); err == nil {
			t.Errorf("ParseColumnType(%q) accepted", bad)
		}
	}
	cols, err := ParseColumns("price:decimal(10,2) not null, category:string,updated:time")
	if err != nil || FormatColumns(cols) != "price:decimal(10,2) not null,category:string,updated:time" {
		t.Fatalf("ParseColumns = %v, %v", FormatColumns(cols), err)
	}
	for _, bad := range []string{"", "price", ":int64", "price:money"} {
		if _, err := ParseColumns(bad); err == nil {
			t.Errorf("ParseColumns(%q) accepted", bad)
		}
	}
}
