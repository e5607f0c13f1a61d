package main

import (
	"database/sql"
	"encoding/csv"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// These tests check bitempo's Parquet against DuckDB's: DuckDB's read_parquet of
// a bitempo export returns the rows bitempo prints, and a Parquet file written
// by DuckDB's COPY ... TO loads into bitempo and resolves facts the way DuckDB's
// ASOF JOIN does. They run the bitempo tool as a user would.

// bitempoTool builds the bitempo command line tool of the enclosing module.
func bitempoTool(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "bitempo")
	build := exec.Command("go", "build", "-o", bin, "./tools/bitempo")
	build.Dir = filepath.Join("..", "..", "..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build bitempo: %v\n%s", err, out)
	}
	return bin
}

func runTool(t *testing.T, bin, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, append(args, "--db", "db", "--quiet")...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("bitempo %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	return string(out)
}

// duckRows runs a query and renders every value as bitempo's CSV output does:
// dates as YYYY-MM-DD, timestamps as RFC 3339 UTC, null as empty.
func duckRows(t *testing.T, db *sql.DB, dateCols map[string]bool, query string) [][]string {
	t.Helper()
	rows, err := db.Query(query)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out [][]string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		rec := make([]string, len(cols))
		for i, v := range vals {
			switch x := v.(type) {
			case nil:
			case time.Time:
				if dateCols[cols[i]] {
					rec[i] = x.UTC().Format("2006-01-02")
				} else {
					rec[i] = x.UTC().Format("2006-01-02T15:04:05.999999Z07:00")
				}
			case float64:
				rec[i] = strconv.FormatFloat(x, 'f', -1, 64)
				if math.Abs(x) >= 1e21 {
					rec[i] = strconv.FormatFloat(x, 'g', -1, 64)
				}
			case []byte:
				rec[i] = fmt.Sprintf("%x", x)
			default:
				rec[i] = fmt.Sprint(x)
			}
		}
		out = append(out, rec)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func csvRecords(t *testing.T, s string) [][]string {
	t.Helper()
	recs, err := csv.NewReader(strings.NewReader(s)).ReadAll()
	if err != nil {
		t.Fatalf("%v\n%s", err, s)
	}
	return recs
}

func openDuck(t *testing.T) *sql.DB {
	t.Helper()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestDuckDBReadsExport(t *testing.T) {
	bin := bitempoTool(t)
	dir := t.TempDir()
	runTool(t, bin, dir, "create", "customers", "--key", "region,id", "--key-types", "string,int64", "--axis", "date")
	var b strings.Builder
	b.WriteString("region,id,valid_from,valid_to,name,score,vip\n")
	for i := range 200 {
		from := fmt.Sprintf("2024-%02d-01", 1+i%6)
		to := fmt.Sprintf("2024-%02d-15", 7+i%5)
		if i%4 == 0 {
			to = ""
		}
		score := fmt.Sprintf("%d.%d", i, i%10)
		if i%7 == 0 {
			score = ""
		}
		fmt.Fprintf(&b, "r%d,%d,%s,%s,name %d,%s,%t\n", i%3, i, from, to, i, score, i%2 == 0)
	}
	if err := os.WriteFile(filepath.Join(dir, "c.csv"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	runTool(t, bin, dir, "load", "customers", "c.csv", "--from", "valid_from", "--to", "valid_to")
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("fix.csv", "region,id,at,name,score,vip\nr0,3,2024-03-03,renamed,1.5,true\n")
	runTool(t, bin, dir, "load", "customers", "fix.csv", "--at", "at")
	duck := openDuck(t)
	dates := map[string]bool{"valid_from": true, "valid_to": true}
	for _, c := range []struct{ args, order string }{
		{"", "region, id, valid_from"},
		{"--history", "region, id, valid_from, tx_from"},
	} {
		args := []string{"export", "customers", "-o", "x.parquet"}
		if c.args != "" {
			args = append(args, c.args)
		}
		runTool(t, bin, dir, args...)
		csvArgs := append(slices.Clone(args[:2]), "--format", "csv")
		if c.args != "" {
			csvArgs = append(csvArgs, c.args)
		}
		want := csvRecords(t, runTool(t, bin, dir, csvArgs...))
		got := duckRows(t, duck, dates, fmt.Sprintf("SELECT * FROM read_parquet('%s') ORDER BY %s",
			filepath.Join(dir, "x.parquet"), c.order))
		if len(got) != len(want)-1 || len(got) < 200 {
			t.Fatalf("%s: DuckDB read %d rows, bitempo printed %d", c.args, len(got), len(want)-1)
		}
		for i := range got {
			if strings.Join(got[i], ",") != strings.Join(want[i+1], ",") {
				t.Fatalf("%s row %d:\nDuckDB  %v\nbitempo %v", c.args, i, got[i], want[i+1])
			}
		}
	}
}

func TestDuckDBParquetResolvesLikeAsOfJoin(t *testing.T) {
	bin := bitempoTool(t)
	dir := t.TempDir()
	duck := openDuck(t)
	dims := filepath.Join(dir, "dims.parquet")
	facts := filepath.Join(dir, "facts.parquet")
	for _, q := range []string{
		`CREATE TABLE dims AS SELECT 'c' || (i % 50) AS customer_id,
			DATE '2024-01-01' + CAST((i // 50) * 20 AS INTEGER) AS valid_from,
			CASE WHEN i // 50 = 4 THEN NULL ELSE DATE '2024-01-01' + CAST((i // 50) * 20 + 20 - (i % 3) AS INTEGER) END AS valid_to,
			'city' || (i % 7) AS city, CAST(i AS BIGINT) AS n, CAST(i AS DECIMAL(10,2)) / 4 AS amount
			FROM range(250) t(i)`,
		`CREATE TABLE facts AS SELECT CAST(j AS BIGINT) AS order_id, 'c' || (j % 60) AS customer_id,
			DATE '2023-12-25' + CAST(j % 130 AS INTEGER) AS ordered_on FROM range(1000) t(j)`,
		fmt.Sprintf(`COPY dims TO '%s' (FORMAT parquet)`, dims),
		fmt.Sprintf(`COPY facts TO '%s' (FORMAT parquet)`, facts),
	} {
		if _, err := duck.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	runTool(t, bin, dir, "create", "customers", "--key", "customer_id", "--axis", "date")
	runTool(t, bin, dir, "load", "customers", dims, "--from", "valid_from", "--to", "valid_to")
	// DuckDB's view of the same resolution: the version with the greatest
	// valid_from at or before the fact's date, if the fact's date is before its
	// valid_to.
	want := duckRows(t, duck, map[string]bool{"ordered_on": true}, `
		SELECT f.order_id, f.customer_id, f.ordered_on,
			CASE WHEN d.valid_to IS NULL OR f.ordered_on < d.valid_to THEN d.city END,
			CASE WHEN d.valid_to IS NULL OR f.ordered_on < d.valid_to THEN d.n END,
			CASE WHEN d.valid_to IS NULL OR f.ordered_on < d.valid_to THEN CAST(d.amount AS DOUBLE) END
		FROM facts f ASOF LEFT JOIN dims d ON f.customer_id = d.customer_id AND f.ordered_on >= d.valid_from
		ORDER BY f.order_id`)
	got := csvRecords(t, runTool(t, bin, dir, "resolve", "customers", "--facts", facts, "--key", "customer_id",
		"--at", "ordered_on", "--miss", "null", "--format", "csv"))
	if strings.Join(got[0], ",") != "order_id,customer_id,ordered_on,sk,city,n,amount" {
		t.Fatalf("header: %v", got[0])
	}
	found := 0
	for i, w := range want {
		g := append(slices.Clone(got[i+1][:3]), got[i+1][4:]...) // without sk
		if strings.Join(g, ",") != strings.Join(w, ",") {
			t.Fatalf("fact %d:\nbitempo %v\nDuckDB  %v", i, g, w)
		}
		if w[3] != "" {
			found++
		}
	}
	if len(got)-1 != len(want) || found < 300 || found == len(want) {
		t.Fatalf("%d facts resolved by bitempo, %d by DuckDB, %d with a version", len(got)-1, len(want), found)
	}
	// resolve -o out.parquet reads back in DuckDB as the same rows.
	runTool(t, bin, dir, "resolve", "customers", "--facts", facts, "--key", "customer_id",
		"--at", "ordered_on", "--miss", "null", "-o", filepath.Join(dir, "out.parquet"))
	back := duckRows(t, duck, nil, fmt.Sprintf(`SELECT count(*), count(city), sum(n) FROM read_parquet('%s')`, filepath.Join(dir, "out.parquet")))
	sums := duckRows(t, duck, nil, `SELECT count(*), count(c), sum(n) FROM (`+strings.ReplaceAll(`
		SELECT CASE WHEN d.valid_to IS NULL OR f.ordered_on < d.valid_to THEN d.city END AS c,
			CASE WHEN d.valid_to IS NULL OR f.ordered_on < d.valid_to THEN d.n END AS n
		FROM facts f ASOF LEFT JOIN dims d ON f.customer_id = d.customer_id AND f.ordered_on >= d.valid_from`, "\n", " ")+`)`)
	if fmt.Sprint(back) != fmt.Sprint(sums) {
		t.Fatalf("resolve -o out.parquet read by DuckDB: %v, want %v", back, sums)
	}
}
