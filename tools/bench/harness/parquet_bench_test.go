package main

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// TestParquetThroughput measures Parquet in and out at a size given by
// BITEMPO_PARQUET_ROWS (skipped when unset; 1000000 is a typical size): a
// date-axis table of that many versions (ten per key, a string, a float and an
// integer attribute) is loaded into bitempo from CSV, then
//
//   - bitempo exports it to Parquet, and DuckDB writes the same rows (read from
//     the same CSV into a table first) with COPY ... TO;
//   - DuckDB reads bitempo's export back (read_parquet into a table), and
//     bitempo loads DuckDB's file into a new table.
//
// Each step is timed on its own, as a user runs it (the bitempo tool as a
// process, DuckDB in this process with its default settings), and the rows per
// second are logged. It asserts only that every step handled every row.
func TestParquetThroughput(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("BITEMPO_PARQUET_ROWS"))
	if n <= 0 {
		t.Skip("set BITEMPO_PARQUET_ROWS to measure Parquet throughput")
	}
	bin := bitempoTool(t)
	dir := t.TempDir()
	csvPath := filepath.Join(dir, "versions.csv")
	writeVersionsCSV(t, csvPath, n)
	runTool(t, bin, dir, "create", "t", "--key", "id", "--key-types", "int64", "--axis", "date")
	runTool(t, bin, dir, "load", "t", "versions.csv", "--from", "valid_from", "--to", "valid_to", "--types", "amount=float64,n=int64")

	type step struct {
		what string
		took time.Duration
	}
	var steps []step
	timed := func(what string, fn func()) {
		start := time.Now()
		fn()
		steps = append(steps, step{what, time.Since(start)})
	}
	timed("bitempo export -o out.parquet", func() { runTool(t, bin, dir, "export", "t", "-o", "bitempo.parquet") })

	duck := openDuck(t)
	if _, err := duck.Exec(fmt.Sprintf(`CREATE TABLE src AS SELECT * FROM read_csv('%s', header = true,
		types = {'valid_from': 'DATE', 'valid_to': 'DATE', 'amount': 'DOUBLE', 'n': 'BIGINT', 'name': 'VARCHAR'})`, csvPath)); err != nil {
		t.Fatal(err)
	}
	duckPath := filepath.Join(dir, "duck.parquet")
	timed("DuckDB COPY ... TO parquet", func() {
		if _, err := duck.Exec(fmt.Sprintf(`COPY src TO '%s' (FORMAT parquet)`, duckPath)); err != nil {
			t.Fatal(err)
		}
	})
	var got int
	timed("DuckDB read_parquet of bitempo's export", func() {
		if _, err := duck.Exec(fmt.Sprintf(`CREATE TABLE back AS SELECT * FROM read_parquet('%s')`, filepath.Join(dir, "bitempo.parquet"))); err != nil {
			t.Fatal(err)
		}
	})
	if err := duck.QueryRow(`SELECT count(*) FROM back`).Scan(&got); err != nil || got != n {
		t.Fatalf("DuckDB read %d rows of bitempo's export (%v), want %d", got, err, n)
	}
	runTool(t, bin, dir, "create", "u", "--key", "id", "--key-types", "int64", "--axis", "date")
	timed("bitempo load of DuckDB's file", func() {
		runTool(t, bin, dir, "load", "u", "duck.parquet", "--from", "valid_from", "--to", "valid_to")
	})
	stats := runTool(t, bin, dir, "export", "u", "--format", "csv")
	if lines := countLines(stats) - 1; lines != n {
		t.Fatalf("bitempo loaded %d versions from DuckDB's file, want %d", lines, n)
	}
	for _, s := range steps {
		t.Logf("%-42s %8.2f s  %10.0f rows/s", s.what, s.took.Seconds(), float64(n)/s.took.Seconds())
	}
}

// writeVersionsCSV writes n versions, ten per key, of consecutive 30-day
// periods with the last one open.
func writeVersionsCSV(t *testing.T, path string, n int) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	fmt.Fprintln(w, "id,valid_from,valid_to,name,amount,n")
	r := rand.New(rand.NewPCG(1, 2))
	day0 := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range n {
		key, v := i/10, i%10
		from := day0.AddDate(0, 0, 30*v)
		to := from.AddDate(0, 0, 30).Format("2006-01-02")
		if v == 9 || i == n-1 {
			to = ""
		}
		fmt.Fprintf(w, "%d,%s,%s,customer %d,%.2f,%d\n", key, from.Format("2006-01-02"), to, key, r.Float64()*1000, r.IntN(100))
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func countLines(s string) int {
	n := 0
	for _, c := range s {
		if c == '\n' {
			n++
		}
	}
	return n
}
