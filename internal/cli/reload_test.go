package cli

import (
	"strings"
	"testing"
)

// Loading a file a second time changes nothing when the file holds several
// rows for one key and time: of those, the last row in the file wins on every
// load, so the second load finds every version in place (no new surrogate key,
// no transaction, no change-feed entry). Checked for CSV, JSON lines and
// Parquet, in memory, streamed through sorted runs and in batches, with a late
// row, and for a changes table.
func TestReloadWithDuplicateRowsChangesNothing(t *testing.T) {
	t.Parallel() // its own directory; a binary per load, which waits on syncs
	const csv = "id,on,price\n" +
		"k1,2024-01-01,10\n" +
		"k1,2024-02-01,11\n" +
		"k1,2024-02-01,12\n" + // the last row for k1 at 2024-02-01 wins
		"k2,2024-03-01,5\n" +
		"k1,2024-01-15,10\n" + // late: between k1's first two rows, equal to the version in effect
		"k2,2024-03-01,5\n" + // an identical repeat
		"k2,2024-01-01,4\n" // late: before k2's first row
	const jsonl = `{"id":"k1","on":"2024-01-01","price":10}` + "\n" +
		`{"id":"k1","on":"2024-02-01","price":11}` + "\n" +
		`{"id":"k1","on":"2024-02-01","price":12}` + "\n" +
		`{"id":"k2","on":"2024-03-01","price":5}` + "\n" +
		`{"id":"k2","on":"2024-01-01","price":4}` + "\n"
	declared := []string{"--columns", "price:decimal(10,2)"}
	for _, tc := range []struct {
		name, file, kind string
		flags            []string
		create           []string
	}{
		{"csv", "f.csv", "periods", nil, nil},
		{"csv streamed", "f.csv", "periods", streamed, nil},
		{"csv batched", "f.csv", "periods", []string{"--batch-size", "1"}, nil},
		{"jsonl", "f.jsonl", "periods", nil, nil},
		{"parquet", "f.parquet", "periods", nil, nil},
		{"parquet streamed", "f.parquet", "periods", streamed, nil},
		{"csv changes table", "f.csv", "changes", nil, nil},
		{"csv changes table batched", "f.csv", "changes", []string{"--batch-size", "2"}, nil},
		{"csv changes table streamed", "f.csv", "changes", streamed, nil},
		// The same into a table that declares price a decimal.
		{"csv declared", "f.csv", "periods", nil, declared},
		{"csv declared streamed", "f.csv", "periods", streamed, declared},
		{"jsonl declared", "f.jsonl", "periods", nil, declared},
		{"parquet declared", "f.parquet", "periods", nil, declared},
		{"csv changes table declared", "f.csv", "changes", nil, declared},
		{"jsonl changes table declared streamed", "f.jsonl", "changes", streamed, declared},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			write(t, dir, "f.csv", csv)
			write(t, dir, "f.jsonl", jsonl)
			writeParquet(t, dir, "f.parquet", []pqColumn{{name: "id", kind: pqString}, {name: "on", kind: pqString}, {name: "price", kind: pqInt64}},
				[]any{"k1", "2024-01-01", int64(10)}, []any{"k1", "2024-02-01", int64(11)}, []any{"k1", "2024-02-01", int64(12)},
				[]any{"k2", "2024-03-01", int64(5)}, []any{"k2", "2024-01-01", int64(4)})
			ok(t, dir, append([]string{"create", "p", "--key", "id", "--axis", "date", "--kind", tc.kind, "--db", "db"}, tc.create...)...)
			load := append([]string{"load", "p", tc.file, "--at", "on", "--db", "db"}, tc.flags...)
			ok(t, dir, load...)
			state := func() (string, string) {
				h := ok(t, dir, "export", "p", "--history", "--db", "db").stdout
				c := ok(t, dir, "changes", "p", "--since", "0", "--db", "db").stdout
				return h, c
			}
			history, feed := state()
			if !strings.Contains(history, "k1,2024-02-01,,") || !strings.Contains(history, ",12") || strings.Contains(history, ",11\n") || strings.Contains(history, ",11.00\n") {
				t.Fatalf("the last row for k1 at 2024-02-01 (price 12) should hold, alone:\n%s", history)
			}
			if tc.create != nil && !strings.Contains(history, ",12.00\n") {
				t.Fatalf("the last row for k1 at 2024-02-01 (price 12) should hold, alone:\n%s", history)
			}
			r := ok(t, dir, load...)
			if !strings.Contains(r.stderr, "no transaction") {
				t.Errorf("the second load committed something: %s", r.stderr)
			}
			history2, feed2 := state()
			if history2 != history {
				t.Errorf("the second load changed the versions:\nbefore:\n%s\nafter:\n%s", history, history2)
			}
			if feed2 != feed {
				t.Errorf("the second load changed the change feed:\nbefore:\n%s\nafter:\n%s", feed, feed2)
			}
		})
	}
}
