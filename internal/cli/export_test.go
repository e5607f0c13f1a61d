package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestExportColumnsAndFormats(t *testing.T) {
	t.Parallel()
	dir := customersStore(t)
	correct(t, dir)
	// Without --history and with --valid: exactly scan's rows.
	scan := ok(t, dir, "scan", "customers", "--valid", "2024-03-12", "--db", "db").stdout
	if got := ok(t, dir, "export", "customers", "--valid", "2024-03-12", "--db", "db").stdout; got != scan {
		t.Fatalf("export --valid:\n%s\nscan:\n%s", got, scan)
	}
	// Without --valid: every version in effect now, over all valid time.
	wantLines(t, ok(t, dir, "export", "customers", "--db", "db").stdout,
		"customer_id,valid_from,valid_to,sk,name,city,score",
		"c1,2024-01-01,2024-03-01,1,Ada,Oslo,10",
		"c1,2024-03-01,2024-06-01,2,Ada,Bergen,11",
		"c1,2024-06-01,,3,Ada,Oslo,12",
		"c2,2024-01-15,,4,Bo,Trondheim,",
		"c3,2024-02-01,2024-05-01,5,Cy,Tromsø,3",
		"c3,2024-07-01,,6,Cy,Tromsø,4",
		"c4,2024-01-01,2024-02-01,7,Di,Bodø,1",
	)
	// As known at the first load's transaction time: before the correction.
	first := firstTx(t, dir)
	out := ok(t, dir, "export", "customers", "--tx", first, "--db", "db").stdout
	if !strings.Contains(out, "c1,2024-03-11,2024-06-01,2,Ada,Bergen,11") || strings.Contains(out, "2024-03-01") {
		t.Fatalf("export --tx %s:\n%s", first, out)
	}
	// --history: every record, tx_from and tx_to after valid_to.
	rows := jsonRows(t, ok(t, dir, "export", "customers", "--history", "-o", "h.json", "--db", "db").stdout)
	if len(rows) != 0 {
		t.Fatalf("-o printed rows on stdout: %v", rows)
	}
	data, err := os.ReadFile(filepath.Join(dir, "h.json"))
	if err != nil {
		t.Fatal(err)
	}
	rows = jsonRows(t, string(data))
	if len(rows) != 9 {
		t.Fatalf("history has %d records, want 9 (7 loaded, c1's first two retired and replaced)", len(rows))
	}
	lines := csvLines(ok(t, dir, "export", "customers", "--history", "--db", "db").stdout)
	if lines[0] != "customer_id,valid_from,valid_to,tx_from,tx_to,sk,name,city,score" {
		t.Fatalf("history header: %s", lines[0])
	}
	retired := 0
	for _, r := range rows {
		if r["tx_to"] != nil {
			retired++
		}
	}
	if retired != 2 {
		t.Fatalf("retired records: %d, want 2: %v", retired, rows)
	}
	// Parquet: typed, open ends null.
	ok(t, dir, "export", "customers", "--history", "-o", "h.parquet", "--db", "db")
	got := strings.Join(parquetSchemaOf(t, filepath.Join(dir, "h.parquet")), ", ")
	want := "customer_id STRING, valid_from DATE, valid_to DATE, tx_from TIMESTAMP(isAdjustedToUTC=true,unit=MICROS), tx_to TIMESTAMP(isAdjustedToUTC=true,unit=MICROS), sk INT(64,false), name STRING, city STRING, score INT(64,true)"
	if got != want {
		t.Fatalf("schema:\n%s\nwant:\n%s", got, want)
	}
	if st, err := os.Stat(filepath.Join(dir, "h.parquet")); err != nil || st.Mode().Perm() != 0o644 {
		t.Fatalf("h.parquet: %v %v", st.Mode(), err)
	}
	fails(t, dir, 2, "do not go with it", "export", "customers", "--history", "--valid", "2024-01-01", "--db", "db")
	fails(t, dir, 2, "unknown --format", "export", "customers", "--format", "xml", "--db", "db")
	fails(t, dir, 1, "unknown table", "export", "nope", "-o", "nope.parquet", "--db", "db")
	if _, err := os.Stat(filepath.Join(dir, "nope.parquet")); !os.IsNotExist(err) {
		t.Fatalf("a failed export left a file: %v", err)
	}
	names, _ := filepath.Glob(filepath.Join(dir, ".*tmp*"))
	if len(names) != 0 {
		t.Fatalf("temporary files left: %v", names)
	}
}

func TestExportMixedTypes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ok(t, dir, "create", "things", "--key", "id", "--axis", "int", "--mixed-types", "--db", "db")
	write(t, dir, "a.jsonl", `{"id":"a","from":1,"to":5,"v":1}`+"\n")
	write(t, dir, "b.jsonl", `{"id":"b","from":1,"to":5,"v":"one"}`+"\n")
	ok(t, dir, "load", "things", "a.jsonl", "--from", "from", "--to", "to", "--db", "db")
	ok(t, dir, "load", "things", "b.jsonl", "--from", "from", "--to", "to", "--db", "db")
	r := ok(t, dir, "export", "things", "-o", "t.parquet", "--db", "db")
	if !strings.Contains(r.stderr, "attributes v hold values of several types; written as STRING columns") {
		t.Fatalf("stderr: %s", r.stderr)
	}
	got := strings.Join(parquetSchemaOf(t, filepath.Join(dir, "t.parquet")), ", ")
	if got != "id STRING, valid_from INT(64,true), valid_to INT(64,true), sk INT(64,false), v STRING" {
		t.Fatalf("schema: %s", got)
	}
	ok(t, dir, "create", "copy", "--key", "id", "--axis", "int", "--db", "db")
	ok(t, dir, "load", "copy", "t.parquet", "--from", "valid_from", "--to", "valid_to", "--ignore", "sk", "--db", "db")
	wantLines(t, ok(t, dir, "export", "copy", "--db", "db").stdout, "id,valid_from,valid_to,sk,v", "a,1,5,1,1", "b,1,5,2,one")
}

// TestExportLoadRoundTrip exports generated tables on every axis, with
// multi-column keys, every attribute type a file can carry, nulls and open
// ends, to Parquet, loads the file into a new table and compares.
func TestExportLoadRoundTrip(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	times := map[string][]string{
		"time": {"2024-01-01T00:00:00Z", "2024-02-01T12:30:00.5Z", "2024-03-01T00:00:00Z"},
		"date": {"2024-01-01", "2024-02-01", "2024-03-01"},
		"int":  {"-5", "10", "1000000"},
	}
	for _, axis := range []string{"time", "date", "int"} {
		var b strings.Builder
		tm := times[axis]
		q := func(s string) string {
			if axis == "int" {
				return s
			}
			return `"` + s + `"`
		}
		for i := range 12 {
			from, to := q(tm[0]), q(tm[1])
			switch i % 4 {
			case 1:
				from = "null"
			case 2:
				to = "null"
			case 3:
				from, to = q(tm[1]), q(tm[2])
			}
			attrs := fmt.Sprintf(`"s":"v%d","n":%d,"f":%d.25,"ok":%t,"maybe":null`, i, i*1000-5, i, i%2 == 0)
			if i%3 == 0 {
				attrs = `"s":null,"n":null,"f":null,"ok":null,"maybe":"x"`
			}
			fmt.Fprintf(&b, `{"region":"r%d","id":%d,"from":%s,"to":%s,%s}`+"\n", i%3, i, from, to, attrs)
		}
		name := "t_" + axis
		write(t, dir, name+".jsonl", b.String())
		ok(t, dir, "create", name, "--key", "region,id", "--key-types", "string,int64", "--axis", axis, "--db", "db")
		ok(t, dir, "load", name, name+".jsonl", "--from", "from", "--to", "to", "--db", "db")
		ok(t, dir, "export", name, "-o", name+".parquet", "--db", "db")
		ok(t, dir, "create", name+"_copy", "--key", "region,id", "--key-types", "string,int64", "--axis", axis, "--db", "db")
		ok(t, dir, "load", name+"_copy", name+".parquet", "--from", "valid_from", "--to", "valid_to", "--ignore", "sk", "--db", "db")
		want := ok(t, dir, "export", name, "--format", "json", "--db", "db").stdout
		got := ok(t, dir, "export", name+"_copy", "--format", "json", "--db", "db").stdout
		// A load hands out its own surrogate keys; everything else is equal.
		noSK := regexp.MustCompile(`"sk":\d+,`)
		want, got = noSK.ReplaceAllString(want, ""), noSK.ReplaceAllString(got, "")
		if got != want {
			t.Fatalf("%s: round trip differs:\n%s\nwant:\n%s", axis, got, want)
		}
		if strings.Count(want, "\n") != 12 {
			t.Fatalf("%s: %d rows", axis, strings.Count(want, "\n"))
		}
	}
	ok(t, dir, "verify", "--db", "db")
}
