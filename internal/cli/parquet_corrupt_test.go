package cli

import (
	"os"
	"strings"
	"testing"
)

// TestLoadParquetCorruptPage damages the data of one column chunk: the load
// fails naming the file, the row group and the column, and writes nothing.
func TestLoadParquetCorruptPage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ok(t, dir, "create", "customers", "--key", "id", "--db", "db")
	var rows [][]any
	for i := range 2000 {
		rows = append(rows, []any{strings.Repeat("k", 5) + string(rune('a'+i%26)) + strings.Repeat("x", i%7), int64(i) * 1000, strings.Repeat("note ", 1+i%13)})
	}
	p := writeParquet(t, dir, "c.parquet", []pqColumn{{name: "id", kind: pqString}, {name: "at", kind: pqTimestamp}, {name: "note", kind: pqString}}, rows...)
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	// Damage bytes in the middle of the file: column data, not the footer.
	for j := len(data) / 2; j < len(data)/2+64; j++ {
		data[j] ^= 0x5a
	}
	write(t, dir, "bad.parquet", string(data))
	fails(t, dir, 1, `bad Parquet file: bad.parquet row group 1 of 1, column "`, "load", "customers", "bad.parquet", "--at", "at", "--db", "db")
	if out := ok(t, dir, "export", "customers", "--db", "db").stdout; strings.Count(out, "\n") != 1 {
		t.Fatalf("a corrupt file loaded rows:\n%s", out)
	}
	ok(t, dir, "load", "customers", "c.parquet", "--at", "at", "--db", "db")
}
