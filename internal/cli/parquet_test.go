package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// writeParquet writes a Parquet file with the tool's own writer.
func writeParquet(t *testing.T, dir, name string, cols []pqColumn, rows ...[]any) string {
	t.Helper()
	p := filepath.Join(dir, name)
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sink, err := newParquetSink(f, cols)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if err := sink.add(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := sink.close(); err != nil {
		t.Fatal(err)
	}
	return p
}

// parquetSchemaOf returns "name TYPE" for each column of a Parquet file, with
// the logical type when there is one.
func parquetSchemaOf(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := parquet.OpenFile(strings.NewReader(string(data)), int64(len(data)))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var out []string
	for _, path := range f.Schema().Columns() {
		leaf, _ := f.Schema().Lookup(path...)
		typ := leaf.Node.Type()
		name := typ.Kind().String()
		if lt := typ.LogicalType(); lt != nil && lt.Value != nil {
			name = lt.String()
		}
		out = append(out, path[0]+" "+name)
	}
	return out
}

const day = int64(86_400_000_000)

func TestLoadParquetVersionsAndChanges(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ok(t, dir, "create", "customers", "--key", "region,id", "--key-types", "string,int64", "--axis", "date", "--db", "db")
	// Versions: a date axis read from DATE columns, typed attributes, nulls.
	writeParquet(t, dir, "v.parquet",
		[]pqColumn{{name: "region", kind: pqString}, {name: "id", kind: pqInt64}, {name: "from", kind: pqDate}, {name: "to", kind: pqDate},
			{name: "score", kind: pqDouble}, {name: "n", kind: pqInt64}, {name: "vip", kind: pqBool}, {name: "zip", kind: pqString}, {name: "seen", kind: pqTimestamp}},
		[]any{"eu", int64(1), 19723 * day, 19800 * day, 1.0, int64(7), true, "0123", 19723*day + 1_500_000},
		[]any{"eu", int64(1), 19800 * day, nil, 2.5, nil, false, nil, nil},
		[]any{"us", int64(2), nil, nil, nil, int64(-3), nil, "9", nil},
	)
	r := ok(t, dir, "load", "customers", "v.parquet", "--from", "from", "--to", "to", "--db", "db")
	if !strings.Contains(r.stderr, "3 rows") {
		t.Fatalf("summary: %s", r.stderr)
	}
	r = ok(t, dir, "export", "customers", "--format", "json", "--db", "db")
	rows := jsonRows(t, r.stdout)
	if len(rows) != 3 {
		t.Fatalf("rows: %v", rows)
	}
	// A whole DOUBLE stays a float, a STRING of digits stays a string, a
	// TIMESTAMP is a time (exported as TIMESTAMP again), nulls are null, and
	// open ends are open.
	first := rows[0]
	if first["valid_from"] != "2024-01-01" || first["valid_to"] != "2024-03-18" || first["score"].(interface{ String() string }).String() != "1" ||
		first["zip"] != "0123" || first["vip"] != true || first["seen"] != "2024-01-01T00:00:01.5Z" {
		t.Fatalf("first row: %v", first)
	}
	wantLines(t, ok(t, dir, "export", "customers", "--db", "db").stdout,
		"region,id,valid_from,valid_to,sk,score,n,vip,zip,seen",
		"eu,1,2024-01-01,2024-03-18,1,1,7,true,0123,2024-01-01T00:00:01.5Z",
		"eu,1,2024-03-18,,2,2.5,,false,,",
		"us,2,,,3,,-3,,9,",
	)
	r = ok(t, dir, "export", "customers", "-o", "out.parquet", "--db", "db")
	got := strings.Join(parquetSchemaOf(t, filepath.Join(dir, "out.parquet")), ", ")
	want := "region STRING, id INT(64,true), valid_from DATE, valid_to DATE, sk INT(64,false), score DOUBLE, n INT(64,true), vip BOOLEAN, zip STRING, seen TIMESTAMP(isAdjustedToUTC=true,unit=MICROS)"
	if got != want {
		t.Fatalf("schema:\n%s\nwant:\n%s", got, want)
	}

	// Changes of a periods table and CDC events of a changes table.
	ok(t, dir, "create", "subs", "--key", "account", "--kind", "changes", "--axis", "int", "--db", "db")
	writeParquet(t, dir, "feed.parquet",
		[]pqColumn{{name: "account", kind: pqString}, {name: "lsn", kind: pqInt64}, {name: "op", kind: pqString}, {name: "plan", kind: pqString}},
		[]any{"a1", int64(10), "u", "free"},
		[]any{"a1", int64(20), "u", "pro"},
		[]any{"a1", int64(30), "d", nil},
	)
	ok(t, dir, "load", "subs", "feed.parquet", "--at", "lsn", "--op-col", "op", "--delete-value", "d", "--db", "db")
	wantLines(t, ok(t, dir, "export", "subs", "--db", "db").stdout,
		"account,valid_from,valid_to,sk,plan",
		"a1,10,20,1,free",
		"a1,20,30,2,pro",
	)
	// Loading the same file again is a no-op: the batch id is the file's hash.
	r = ok(t, dir, "load", "subs", "feed.parquet", "--at", "lsn", "--op-col", "op", "--delete-value", "d", "--db", "db")
	if !strings.Contains(r.stderr, "already applied") && !strings.Contains(r.stderr, "no transaction") {
		t.Fatalf("reload: %s", r.stderr)
	}
	ok(t, dir, "create", "people", "--key", "id", "--key-types", "int64", "--axis", "time", "--db", "db")
	writeParquet(t, dir, "changes.parquet",
		[]pqColumn{{name: "id", kind: pqInt64}, {name: "at", kind: pqTimestamp}, {name: "city", kind: pqString}},
		[]any{int64(1), 19723 * day, "Oslo"},
		[]any{int64(1), 19800 * day, "Bergen"},
	)
	ok(t, dir, "load", "people", "changes.parquet", "--input-format", "parquet", "--at", "at", "--db", "db")
	wantLines(t, ok(t, dir, "export", "people", "--db", "db").stdout,
		"id,valid_from,valid_to,sk,city",
		"1,2024-01-01T00:00:00Z,2024-03-18T00:00:00Z,1,Oslo",
		"1,2024-03-18T00:00:00Z,,2,Bergen",
	)
	ok(t, dir, "verify", "--db", "db")
}

func TestLoadParquetBadFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ok(t, dir, "create", "customers", "--key", "id", "--axis", "date", "--db", "db")
	good := writeParquet(t, dir, "good.parquet",
		[]pqColumn{{name: "id", kind: pqString}, {name: "from", kind: pqDate}, {name: "to", kind: pqDate}, {name: "name", kind: pqString}},
		[]any{"c1", 19723 * day, nil, "Ada"})
	data, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	write(t, dir, "text.parquet", "id,from,to\nc1,2024-01-01,\n")
	write(t, dir, "truncated.parquet", string(data[:len(data)/2]))
	writeParquet(t, dir, "nokey.parquet",
		[]pqColumn{{name: "customer", kind: pqString}, {name: "from", kind: pqDate}, {name: "to", kind: pqDate}},
		[]any{"c1", 19723 * day, nil})
	writeParquet(t, dir, "floatkey.parquet",
		[]pqColumn{{name: "id", kind: pqDouble}, {name: "from", kind: pqDate}, {name: "to", kind: pqDate}},
		[]any{1.5, 19723 * day, nil})
	for _, c := range []struct{ file, want string }{
		{"text.parquet", "bad Parquet file: text.parquet"},
		{"truncated.parquet", "bad Parquet file: truncated.parquet"},
		{"nokey.parquet", `nokey.parquet has no column "id"`},
		{"floatkey.parquet", `floatkey.parquet: column "id" is DOUBLE, which cannot be a key column`},
	} {
		fails(t, dir, 1, c.want, "load", "customers", c.file, "--from", "from", "--to", "to", "--db", "db")
	}
	if out := ok(t, dir, "export", "customers", "--db", "db").stdout; strings.Count(out, "\n") != 1 {
		t.Fatalf("a bad file wrote rows:\n%s", out)
	}
	fails(t, dir, 2, "cannot tell the format", "load", "customers", "x.dat", "--from", "from", "--to", "to", "--db", "db")
	ok(t, dir, "load", "customers", "good.parquet", "--from", "from", "--to", "to", "--db", "db")
}

func TestResolveAndBackfillParquet(t *testing.T) {
	t.Parallel()
	dir := customersStore(t)
	writeParquet(t, dir, "orders.parquet",
		[]pqColumn{{name: "order_id", kind: pqInt64}, {name: "customer_id", kind: pqString}, {name: "ordered_on", kind: pqDate}, {name: "amount", kind: pqDouble}},
		[]any{int64(1), "c1", 19790 * day, 9.5},
		[]any{int64(2), "c2", 19800 * day, 20.0},
	)
	r := ok(t, dir, "resolve", "customers", "--facts", "orders.parquet", "--key", "customer_id", "--at", "ordered_on", "--db", "db")
	wantLines(t, r.stdout,
		"order_id,customer_id,ordered_on,amount,sk,name,city,score",
		"1,c1,2024-03-08,9.5,1,Ada,Oslo,10",
		"2,c2,2024-03-18,20.0,4,Bo,Trondheim,",
	)
	ok(t, dir, "resolve", "customers", "--facts", "orders.parquet", "--key", "customer_id", "--at", "ordered_on", "-o", "resolved.parquet", "--db", "db")
	got := strings.Join(parquetSchemaOf(t, filepath.Join(dir, "resolved.parquet")), ", ")
	want := "order_id INT(64,true), customer_id STRING, ordered_on STRING, amount DOUBLE, sk INT(64,true), name STRING, city STRING, score INT(64,true)"
	if got != want {
		t.Fatalf("resolved schema:\n%s\nwant:\n%s", got, want)
	}
	// The Parquet output reads back as the same rows.
	ok(t, dir, "create", "resolved", "--key", "order_id", "--key-types", "int64", "--db", "db")
	ok(t, dir, "load", "resolved", "resolved.parquet", "--at", "ordered_on", "--ignore", "sk", "--db", "db")
	wantLines(t, ok(t, dir, "scan", "resolved", "--valid", "2024-12-31T00:00:00Z", "--db", "db").stdout,
		"order_id,valid_from,valid_to,sk,customer_id,amount,name,city,score",
		"1,2024-03-08T00:00:00Z,,1,c1,9.5,Ada,Oslo,10",
		"2,2024-03-18T00:00:00Z,,2,c2,20,Bo,Trondheim,",
	)
	// A failed resolve writes no file.
	fails(t, dir, 1, "unknown key", "resolve", "customers", "--facts", "orders.parquet", "--key", "order_id", "--at", "ordered_on", "-o", "bad.parquet", "--db", "db")
	if _, err := os.Stat(filepath.Join(dir, "bad.parquet")); !os.IsNotExist(err) {
		t.Fatalf("a failed resolve left bad.parquet: %v", err)
	}
	fails(t, dir, 1, "cannot be --key", "resolve", "customers", "--facts", "orders.parquet", "--key", "amount", "--at", "ordered_on", "--db", "db")
}

func TestBackfillParquet(t *testing.T) {
	t.Parallel()
	dir, _ := contractsStore(t)
	writeParquet(t, dir, "left.parquet",
		[]pqColumn{{name: "row_id", kind: pqInt64}, {name: "user_id", kind: pqString}, {name: "ts", kind: pqDate}},
		[]any{int64(1), "u1", 19734 * day}, // 2024-01-12
		[]any{int64(2), "u2", 19734 * day},
	)
	r := ok(t, dir, "backfill", "contracts", "--left", "left.parquet", "--group-by", "user_id", "--ts", "ts",
		"--agg", "sum(amount)", "--agg", "count", "--db", "db")
	wantLines(t, r.stdout,
		"row_id,user_id,ts,amount_sum,count",
		"1,u1,2024-01-12,210,2",
		"2,u2,2024-01-12,70,1",
	)
	ok(t, dir, "backfill", "contracts", "--left", "left.parquet", "--group-by", "user_id", "--ts", "ts",
		"--agg", "sum(amount)", "--agg", "count", "-o", "features.parquet", "--db", "db")
	got := strings.Join(parquetSchemaOf(t, filepath.Join(dir, "features.parquet")), ", ")
	want := "row_id INT(64,true), user_id STRING, ts STRING, amount_sum INT(64,true), count INT(64,true)"
	if got != want {
		t.Fatalf("features schema:\n%s\nwant:\n%s", got, want)
	}
}
