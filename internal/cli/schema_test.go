package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDeclaredDecimalColumn: a declared decimal column reads its cells exactly
// at its scale (232.1 is 232.10), prints with its scale in every output form
// (JSON as a number literal), refuses a cell with more digits after the point
// naming file, line, column and type, and writes nothing then.
func TestDeclaredDecimalColumn(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := ok(t, dir, "create", "prices", "--key", "id", "--axis", "date",
		"--columns", "price:decimal(10,2),category:string,updated:time,opened:date", "--db", "db")
	if !strings.Contains(r.stdout, "columns price:decimal(10,2),category:string,updated:time,opened:date") {
		t.Fatalf("create: %s", r.stdout)
	}
	write(t, dir, "p.csv", "id,on,price,category,updated,opened\n"+
		"a,2024-01-01,232.1,20.00,2024-01-01T10:00:00Z,2023-12-31\n"+
		"b,2024-01-01,10,x,,\n")
	ok(t, dir, "load", "prices", "p.csv", "--at", "on", "--db", "db")
	r = ok(t, dir, "get", "prices", "a", "--db", "db")
	wantLines(t, r.stdout, "id,valid_from,valid_to,sk,price,category,updated,opened",
		"a,2024-01-01,,1,232.10,20.00,2024-01-01T10:00:00Z,2023-12-31")
	r = ok(t, dir, "get", "prices", "b", "--format", "json", "--db", "db")
	if !strings.Contains(r.stdout, `"price":10.00,"category":"x","updated":null,"opened":null`) {
		t.Fatalf("json: %s", r.stdout)
	}
	for _, cmd := range [][]string{{"scan", "prices"}, {"history", "prices", "a"}, {"audit", "prices", "a"}, {"export", "prices"}, {"changes", "prices", "--since", "0"}} {
		r = ok(t, dir, append(cmd, "--format", "json", "--db", "db")...)
		if !strings.Contains(r.stdout, `"price":232.10`) {
			t.Fatalf("%s: %s", cmd[0], r.stdout)
		}
	}
	r = ok(t, dir, "export", "prices", "--format", "csv", "--db", "db")
	if !strings.Contains(r.stdout, ",232.10,") {
		t.Fatalf("export csv: %s", r.stdout)
	}

	before, _ := dumpState(t, dir, "db")
	write(t, dir, "bad.csv", "id,on,price\nc,2024-02-01,1.5\nd,2024-02-01,0.125\n")
	fails(t, dir, 1, `bad.csv line 3, column 3 (price): "0.125" is not a decimal(10,2): it has more than 2 digits after the point`,
		"load", "prices", "bad.csv", "--at", "on", "--db", "db")
	write(t, dir, "big.csv", "id,on,price\nc,2024-02-01,123456789.5\n")
	fails(t, dir, 1, `big.csv line 2, column 3 (price): "123456789.5" is not a decimal(10,2): it has more than 10 digits`,
		"load", "prices", "big.csv", "--at", "on", "--db", "db")
	write(t, dir, "date.csv", "id,on,opened\nc,2024-02-01,2024-02-01T10:00:00Z\n")
	fails(t, dir, 1, `date.csv line 2, column 3 (opened): "2024-02-01T10:00:00Z" is not a date`,
		"load", "prices", "date.csv", "--at", "on", "--db", "db")
	if after, _ := dumpState(t, dir, "db"); after != before {
		t.Fatalf("a failed load changed the store")
	}
	// --skip-bad loads the good rows and reports the bad one.
	r = ok(t, dir, "load", "prices", "bad.csv", "--at", "on", "--skip-bad", "--db", "db")
	if !strings.Contains(r.stderr, "bad.csv line 3") || !strings.Contains(r.stderr, "1 row") {
		t.Fatalf("skip-bad: %s", r.stderr)
	}
	r = ok(t, dir, "get", "prices", "c", "--attrs", "price", "--db", "db")
	wantLines(t, r.stdout, "id,valid_from,valid_to,sk,price", "c,2024-02-01,,3,1.50")

	// --types must agree with the declaration; a decimal type's comma stays
	// inside it. Loading p.csv again changes nothing.
	r = ok(t, dir, "load", "prices", "p.csv", "--at", "on", "--types", "price=decimal(10,2),category=string", "--db", "db")
	if !strings.Contains(r.stderr, "no transaction") {
		t.Fatalf("reload: %s", r.stderr)
	}
	// --types must agree with the declaration.
	fails(t, dir, 2, "declares column price as decimal(10,2)", "load", "prices", "bad.csv", "--at", "on", "--types", "price=float64", "--db", "db")
	// put reads --set values by the declaration too.
	ok(t, dir, "put", "prices", "e", "--from", "2024-03-01", "--set", "price=7.5", "--set", "opened=2024-03-01", "--db", "db")
	r = ok(t, dir, "get", "prices", "e", "--attrs", "price,opened", "--db", "db")
	wantLines(t, r.stdout, "id,valid_from,valid_to,sk,price,opened", "e,2024-03-01,,4,7.50,2024-03-01")
	fails(t, dir, 2, `"7.555" is not a decimal(10,2)`, "put", "prices", "e", "--from", "2024-03-01", "--set", "price=7.555", "--db", "db")
	fails(t, dir, 2, "declares column price as decimal(10,2)", "put", "prices", "e", "--from", "2024-03-01", "--set", "price=7", "--types", "price=string", "--db", "db")
	ok(t, dir, "verify", "--db", "db")
}

// TestDeclaredJSONL: JSON numbers into a decimal column keep their digits
// (never read through a float64); a JSON string of a number is the number
// in a decimal column and stays a string in a string column.
func TestDeclaredJSONL(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ok(t, dir, "create", "p", "--key", "id", "--axis", "int", "--columns", "price:decimal(18,2),label:string", "--db", "db")
	write(t, dir, "p.jsonl", `{"id":"a","at":1,"price":232.10,"label":"20.00"}`+"\n"+
		`{"id":"b","at":1,"price":"20.00","label":"x"}`+"\n"+
		`{"id":"c","at":1,"price":1234567890123456.78}`+"\n")
	ok(t, dir, "load", "p", "p.jsonl", "--at", "at", "--db", "db")
	r := ok(t, dir, "scan", "p", "--format", "json", "--db", "db")
	for _, want := range []string{`"id":"a","valid_from":1,"valid_to":null,"sk":1,"price":232.10,"label":"20.00"`,
		`"price":20.00,"label":"x"`, `"price":1234567890123456.78`} {
		if !strings.Contains(r.stdout, want) {
			t.Fatalf("scan lacks %s:\n%s", want, r.stdout)
		}
	}
	write(t, dir, "bad.jsonl", `{"id":"d","at":2,"price":true}`+"\n")
	fails(t, dir, 1, `bad.jsonl line 1, column "price": true is not a decimal(18,2)`, "load", "p", "bad.jsonl", "--at", "at", "--db", "db")
}

// TestEstablishedTypes: an undeclared attribute is read as the type its first
// value established: "10" into a float64 attribute is 10.0, "n/a" is a bad
// row (never a new string column), and a backfill still sums it afterwards.
func TestEstablishedTypes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ok(t, dir, "create", "c", "--key", "id", "--axis", "date", "--group-by", "user", "--db", "db")
	write(t, dir, "a.csv", "id,on,user,price\nk1,2024-01-01,u1,10.5\nk2,2024-01-01,u1,2.25\n")
	ok(t, dir, "load", "c", "a.csv", "--at", "on", "--db", "db")
	r := ok(t, dir, "describe", "c", "--db", "db")
	if !strings.Contains(r.stdout, "attribute types: user string, price float64") {
		t.Fatalf("describe: %s", r.stdout)
	}
	// Integer cells into the float64 attribute are floats.
	write(t, dir, "b.csv", "id,on,user,price\nk1,2024-02-01,u1,10\nk2,2024-02-01,u1,11\n")
	ok(t, dir, "load", "c", "b.csv", "--at", "on", "--db", "db")
	r = ok(t, dir, "dump", "--table", "c", "--db", "db")
	if strings.Contains(r.stdout, "price=10 ") || strings.Contains(r.stdout, "int64") {
		t.Fatalf("dump shows an int: %s", r.stdout)
	}
	before, _ := dumpState(t, dir, "db")
	write(t, dir, "dirty.csv", "id,on,user,price\nk1,2024-03-01,u1,12.5\nk2,2024-03-01,u1,n/a\n")
	fails(t, dir, 1, `dirty.csv line 3, column 4 (price): "n/a" is not a float64`, "load", "c", "dirty.csv", "--at", "on", "--db", "db")
	fails(t, dir, 1, `dirty.csv line 3, column 4 (price): "n/a" is not a float64`, append([]string{"load", "c", "dirty.csv", "--at", "on", "--db", "db"}, streamed...)...)
	fails(t, dir, 1, `dirty.csv line 3, column 4 (price): "n/a" is not a float64`, "load", "c", "dirty.csv", "--at", "on", "--batch-size", "1", "--db", "db")
	if after, _ := dumpState(t, dir, "db"); after != before {
		t.Fatalf("a failed load changed the store")
	}
	r = ok(t, dir, "load", "c", "dirty.csv", "--at", "on", "--skip-bad", "--db", "db")
	if !strings.Contains(r.stderr, `dirty.csv line 3, column 4 (price): "n/a" is not a float64`) {
		t.Fatalf("skip-bad: %s", r.stderr)
	}
	r = ok(t, dir, "describe", "c", "--db", "db")
	if !strings.Contains(r.stdout, "price float64") {
		t.Fatalf("the dirty file changed the type: %s", r.stdout)
	}
	// --types cannot re-type an established attribute.
	fails(t, dir, 2, "holds float64 values", "load", "c", "dirty.csv", "--at", "on", "--types", "price=string", "--db", "db")
	// A put reads by the established type too.
	fails(t, dir, 2, `"cheap" is not a float64`, "put", "c", "k3", "--from", "2024-01-01", "--set", "user=u1", "--set", "price=cheap", "--db", "db")
	write(t, dir, "left.csv", "user,ts\nu1,2024-03-15\n")
	r = ok(t, dir, "backfill", "c", "--left", "left.csv", "--group-by", "user", "--ts", "ts", "--agg", "sum(price)", "--db", "db")
	if !strings.Contains(r.stdout, "u1,2024-03-15,23.5") {
		t.Fatalf("backfill: %s", r.stdout)
	}
	ok(t, dir, "verify", "--db", "db")
}

// TestCreateColumnsFrom infers a declaration from a sample of a file, prints
// it as a --columns line and creates the table with it; --strict refuses
// undeclared attributes.
func TestCreateColumnsFrom(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write(t, dir, "s.csv", "id,on,price,qty,opened,seen,name,flag\n"+
		"a,2024-01-01,232.10,3,2024-01-01,2024-01-01T10:00:00Z,x,true\n"+
		"b,2024-01-02,5.00,4,2024-01-02,2024-01-02T10:00:00Z,0123,false\n"+
		"c,2024-01-03,,,,,,\n")
	r := ok(t, dir, "create", "s", "--key", "id", "--axis", "date", "--columns-from", "s.csv", "--ignore", "on", "--strict", "--db", "db")
	want := "--columns 'price:decimal(8,2),qty:int64,opened:date,seen:time,name:string,flag:bool'"
	if !strings.Contains(r.stdout, want) {
		t.Fatalf("create --columns-from: want %s in\n%s", want, r.stdout)
	}
	ok(t, dir, "load", "s", "s.csv", "--at", "on", "--db", "db")
	r = ok(t, dir, "get", "s", "b", "--db", "db")
	wantLines(t, r.stdout, "id,valid_from,valid_to,sk,price,qty,opened,seen,name,flag",
		"b,2024-01-02,,2,5.00,4,2024-01-02,2024-01-02T10:00:00Z,0123,false")
	write(t, dir, "extra.csv", "id,on,other\nd,2024-01-01,1\n")
	fails(t, dir, 1, `column "other"`, "load", "s", "extra.csv", "--at", "on", "--db", "db")
	r = ok(t, dir, "describe", "s", "--db", "db")
	if !strings.Contains(r.stdout, "strict (latest): true") {
		t.Fatalf("describe: %s", r.stdout)
	}

	write(t, dir, "s.jsonl", `{"id":"a","price":232.10,"label":"20.00","n":1}`+"\n")
	r = ok(t, dir, "create", "j", "--key", "id", "--columns-from", "s.jsonl", "--db", "db")
	if !strings.Contains(r.stdout, "--columns 'price:decimal(8,2),label:string,n:int64'") {
		t.Fatalf("jsonl: %s", r.stdout)
	}
	fails(t, dir, 2, "not both", "create", "x", "--key", "id", "--columns", "a:int64", "--columns-from", "s.csv", "--db", "db")
	fails(t, dir, 2, "--strict needs --columns", "create", "x", "--key", "id", "--strict", "--db", "db")
	fails(t, dir, 2, "unknown column type", "create", "x", "--key", "id", "--columns", "a:money", "--db", "db")
}

// TestAlterAndDescribe: alter adds and widens columns in one transaction
// each; describe shows the declaration as of a transaction time and its
// history; values stored before a widening print as the new type; refusals
// name table, column and types and change nothing.
func TestAlterAndDescribe(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ok(t, dir, "create", "p", "--key", "id", "--axis", "int", "--columns", "price:decimal(6,2),qty:int64 not null", "--db", "db")
	write(t, dir, "a.csv", "id,at,price,qty\na,1,1.5,2\n")
	ok(t, dir, "load", "p", "a.csv", "--at", "at", "--db", "db")
	tx1 := jsonRows(t, ok(t, dir, "audit", "p", "a", "--format", "json", "--db", "db").stdout)[0]["tx_from"].(string)
	r := ok(t, dir, "alter", "p", "--widen", "price:decimal(8,3)", "--widen", "qty:decimal(10,1)", "--add-column", "note:string", "--db", "db")
	if !strings.Contains(r.stdout, "altered table p: added note string, widened price from decimal(6,2) to decimal(8,3), widened qty from int64 to decimal(10,1); tx ") {
		t.Fatalf("alter: %s", r.stdout)
	}
	r = ok(t, dir, "get", "p", "a", "--format", "json", "--db", "db")
	if !strings.Contains(r.stdout, `"price":1.500,"qty":2.0`) {
		t.Fatalf("values stored before the widening: %s", r.stdout)
	}
	if r = ok(t, dir, "history", "p", "a", "--timeline", "--db", "db"); !strings.Contains(r.stdout, "1.500 2.0") {
		t.Fatalf("the timeline prints values stored before the widening as stored: %s", r.stdout)
	}
	r = ok(t, dir, "describe", "p", "--db", "db")
	for _, want := range []string{"columns (latest): price decimal(8,3) nullable, qty decimal(10,1) not null, note string nullable",
		"strict (latest): false", "declaration created: price:decimal(6,2),qty:int64 not null",
		"declaration tx 20", ": price:decimal(8,3),qty:decimal(10,1) not null,note:string"} {
		if !strings.Contains(r.stdout, want) {
			t.Fatalf("describe lacks %q:\n%s", want, r.stdout)
		}
	}
	r = ok(t, dir, "describe", "p", "--tx", tx1, "--db", "db")
	if !strings.Contains(r.stdout, "columns (tx "+tx1+"): price decimal(6,2) nullable, qty int64 not null") {
		t.Fatalf("describe --tx: %s", r.stdout)
	}
	before, _ := dumpState(t, dir, "db")
	fails(t, dir, 1, `table "p" column "price": decimal(8,3) cannot be widened to decimal(8,2)`, "alter", "p", "--widen", "price:decimal(8,2)", "--db", "db")
	fails(t, dir, 1, `declares no column "nope"`, "alter", "p", "--widen", "nope:decimal(8,2)", "--db", "db")
	fails(t, dir, 1, `already declares column "note"`, "alter", "p", "--add-column", "note:int64", "--db", "db")
	fails(t, dir, 2, "must be nullable", "alter", "p", "--add-column", "x:int64 not null", "--db", "db")
	fails(t, dir, 2, "give --add-column", "alter", "p", "--db", "db")
	// An attribute that holds strings cannot be declared an int64.
	ok(t, dir, "create", "q", "--key", "id", "--axis", "int", "--db", "db2")
	write(t, dir, "q.csv", "id,at,v\na,1,x\n")
	ok(t, dir, "load", "q", "q.csv", "--at", "at", "--db", "db2")
	fails(t, dir, 1, `table "q" column "v" (int64): the attribute already holds string values`, "alter", "q", "--add-column", "v:int64", "--db", "db2")
	if after, _ := dumpState(t, dir, "db"); after != before {
		t.Fatalf("a refused alter changed the store")
	}
	ok(t, dir, "verify", "--db", "db")
}

// TestDeclaredExportImport: the full-fidelity export carries every
// declaration with its transaction time and decimals exactly; import
// rebuilds them; a record that does not fit its declaration is refused with
// its file and line. Parquet export writes DECIMAL columns that load back
// exactly.
func TestDeclaredExportImport(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ok(t, dir, "create", "p", "--key", "id", "--axis", "int", "--columns", "price:decimal(10,2)", "--strict", "--db", "db")
	ok(t, dir, "create", "m", "--key", "id", "--axis", "int", "--mixed-types", "--db", "db")
	write(t, dir, "a.csv", "id,at,price\na,1,232.1\nb,1,-0.05\n")
	ok(t, dir, "load", "p", "a.csv", "--at", "at", "--db", "db")
	ok(t, dir, "alter", "p", "--add-column", "note:string", "--db", "db")
	write(t, dir, "b.csv", "id,at,price,note\na,2,99999999.99,big\n")
	ok(t, dir, "load", "p", "b.csv", "--at", "at", "--db", "db")
	ok(t, dir, "export", "--all", "--history", "-o", "ex", "--db", "db")
	manifest, err := os.ReadFile(filepath.Join(dir, "ex", "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"columns": "price:decimal(10,2)"`, `"strict": true`, `"columns": "price:decimal(10,2),note:string"`, `"mixed_types": true`} {
		if !strings.Contains(string(manifest), want) {
			t.Fatalf("manifest lacks %s:\n%s", want, manifest)
		}
	}
	ok(t, dir, "import", "ex", "--db", "db2")
	if a, b := comparableDump(t, dir, "db"), comparableDump(t, dir, "db2"); a != b {
		t.Fatalf("the import differs:\n%s\n%s", a, b)
	}
	r1 := ok(t, dir, "describe", "p", "--db", "db")
	r2 := ok(t, dir, "describe", "p", "--db", "db2")
	if r1.stdout != r2.stdout {
		t.Fatalf("describe differs:\n%s\n%s", r1.stdout, r2.stdout)
	}
	r := ok(t, dir, "describe", "m", "--db", "db2")
	if !strings.Contains(r.stdout, "mixed types") {
		t.Fatalf("mixed types lost: %s", r.stdout)
	}
	r = ok(t, dir, "history", "p", "a", "--format", "json", "--db", "db2")
	if !strings.Contains(r.stdout, `"price":232.10`) || !strings.Contains(r.stdout, `"price":99999999.99`) {
		t.Fatalf("history after import: %s", r.stdout)
	}
	// A record whose value does not fit the declaration of its time.
	records := filepath.Join(dir, "ex", "0001.records.jsonl")
	data, err := os.ReadFile(records)
	if err != nil {
		t.Fatal(err)
	}
	write(t, dir, "ex/0001.records.jsonl", strings.Replace(string(data), `{"decimal":"232.10"}`, `{"decimal":"232.125"}`, 1))
	fails(t, dir, 1, `0001.records.jsonl line 1: table "p" column "price" (decimal(10,2)): value 232.125 (decimal): has no exact form with 2 digits after the point`, "import", "ex", "--db", "db3")

	// Parquet: DECIMAL(10,2) columns, loaded back exactly into a new table.
	ok(t, dir, "export", "p", "-o", "p.parquet", "--db", "db")
	schema := strings.Join(parquetSchemaOf(t, filepath.Join(dir, "p.parquet")), " ")
	if !strings.Contains(schema, "DECIMAL(10,2)") {
		t.Fatalf("parquet schema: %s", schema)
	}
	r = ok(t, dir, "create", "p3", "--key", "id", "--axis", "int", "--columns-from", "p.parquet", "--db", "db")
	if !strings.Contains(r.stdout, "--columns 'price:decimal(10,2),note:string'") {
		t.Fatalf("--columns-from a Parquet file: %s", r.stdout)
	}
	ok(t, dir, "create", "p2", "--key", "id", "--axis", "int", "--db", "db")
	ok(t, dir, "load", "p2", "p.parquet", "--from", "valid_from", "--to", "valid_to", "--ignore", "sk", "--db", "db")
	r = ok(t, dir, "scan", "p2", "--format", "json", "--db", "db")
	if !strings.Contains(r.stdout, `"price":99999999.99`) || !strings.Contains(r.stdout, `"price":-0.05`) {
		t.Fatalf("parquet round trip: %s", r.stdout)
	}
	// Reloading the same Parquet file changes nothing.
	r = ok(t, dir, "load", "p2", "p.parquet", "--from", "valid_from", "--to", "valid_to", "--ignore", "sk", "--db", "db")
	if !strings.Contains(r.stderr, "no transaction") {
		t.Fatalf("reload: %s", r.stderr)
	}
}

// TestDecimalRoundTripCSVAndJSONL: a declared table exported as CSV and as
// JSON lines loads back, into a table declared from the export itself
// (create --columns-from), with the same decimals digit for digit.
func TestDecimalRoundTripCSVAndJSONL(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ok(t, dir, "create", "p", "--key", "id", "--axis", "int", "--columns", "price:decimal(12,3),n:int64", "--db", "db")
	write(t, dir, "a.csv", "id,at,price,n\na,1,232.1,1\nb,1,-0.005,2\nc,1,123456789.125,\n")
	ok(t, dir, "load", "p", "a.csv", "--at", "at", "--db", "db")
	want := ok(t, dir, "scan", "p", "--format", "json", "--db", "db").stdout
	if !strings.Contains(want, `"price":232.100`) || !strings.Contains(want, `"price":-0.005`) || !strings.Contains(want, `"price":123456789.125`) {
		t.Fatalf("scan: %s", want)
	}
	for _, format := range []string{"csv", "json"} {
		ext := map[string]string{"csv": "csv", "json": "jsonl"}[format]
		r := ok(t, dir, "export", "p", "--format", format, "--db", "db")
		write(t, dir, "out."+ext, r.stdout)
		name := "q" + format
		r = ok(t, dir, "create", name, "--key", "id", "--axis", "int", "--columns-from", "out."+ext, "--db", "db")
		if !strings.Contains(r.stdout, "price:decimal(") || !strings.Contains(r.stdout, ",3)") {
			t.Fatalf("%s: inferred %s", format, r.stdout)
		}
		ok(t, dir, "load", name, "out."+ext, "--from", "valid_from", "--to", "valid_to", "--ignore", "sk", "--db", "db")
		got := ok(t, dir, "scan", name, "--format", "json", "--db", "db").stdout
		if got != want {
			t.Fatalf("%s round trip:\nwant %s\ngot  %s", format, want, got)
		}
	}
}
