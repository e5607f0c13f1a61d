package cli

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestEraseCommand: erase removes a customer from every read, says so in
// the change feed, leaves no file holding its data, and --check finds it.
func TestEraseCommand(t *testing.T) {
	t.Parallel()
	dir := customersStore(t)
	t1 := firstTx(t, dir)
	fails(t, dir, 1, "customers c1 exists and was not erased", "erase", "customers", "c1", "--check", "--db", "db")
	fails(t, dir, 1, "customers c9 was never erased: unknown key", "erase", "customers", "c9", "--check", "--db", "db")
	r := ok(t, dir, "erase", "customers", "c1", "--reason", "request 17", "--db", "db")
	if !strings.Contains(r.stderr, "erased customers c1") {
		t.Fatalf("erase says: %s", r.stderr)
	}
	fails(t, dir, 1, "unknown key", "get", "customers", "c1", "--valid", "2024-03-05", "--db", "db")
	fails(t, dir, 1, "unknown key", "get", "customers", "c1", "--valid", "2024-03-05", "--tx", t1, "--db", "db")
	ok(t, dir, "get", "customers", "c2", "--valid", "2024-03-05", "--db", "db")
	r = ok(t, dir, "erase", "customers", "c1", "--check", "--db", "db")
	if !strings.Contains(r.stdout, "customers c1 erased at transaction") {
		t.Fatalf("--check says: %s", r.stdout)
	}
	r = ok(t, dir, "changes", "customers", "--since", "0", "--db", "db", "--format", "json")
	if !strings.Contains(r.stdout, "erased") || strings.Contains(r.stdout, `"c1"`) {
		t.Fatalf("changes after the erasure:\n%s", r.stdout)
	}
	fails(t, dir, 1, "holds nothing of the key", "erase", "customers", "c1", "--db", "db")
	ok(t, dir, "verify", "--db", "db")
	// c1's name: no file of the store holds it any more.
	err := filepath.WalkDir(filepath.Join(dir, "db"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if bytes.Contains(b, []byte("Ada")) {
			t.Errorf("%s still holds the erased customer's name", path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestChangesErasureRow: an erasure in the change feed is a well-formed row
// of its own in every format: the header's columns, op "erased", the erasing
// transaction as RFC 3339, no key, and the record count and reason.
func TestChangesErasureRow(t *testing.T) {
	t.Parallel()
	dir := customersStore(t)
	ok(t, dir, "erase", "customers", "c1", "--reason", "ticket 1", "--db", "db")
	r := ok(t, dir, "changes", "customers", "--since", "0", "--db", "db", "--format", "csv")
	lines := csvLines(r.stdout)
	header, err := csv.NewReader(strings.NewReader(lines[0])).Read()
	if err != nil {
		t.Fatal(err)
	}
	if header[len(header)-2] != "erased_records" || header[len(header)-1] != "erasure_reason" {
		t.Fatalf("header: %v", header)
	}
	recs, err := csv.NewReader(strings.NewReader(r.stdout)).ReadAll()
	if err != nil {
		t.Fatalf("changes csv: %v\n%s", err, r.stdout)
	}
	var erased []string
	for _, rec := range recs[1:] {
		if rec[1] == "erased" {
			erased = rec
		}
	}
	if erased == nil {
		t.Fatalf("no erasure row:\n%s", r.stdout)
	}
	if _, err := time.Parse(time.RFC3339Nano, erased[0]); err != nil {
		t.Fatalf("erasure tx %q: %v", erased[0], err)
	}
	for i := 2; i < len(erased)-2; i++ {
		if erased[i] != "" {
			t.Fatalf("erasure row prints %s=%q:\n%s", header[i], erased[i], r.stdout)
		}
	}
	if erased[len(erased)-2] != "3" || erased[len(erased)-1] != "ticket 1" {
		t.Fatalf("erasure row: %v", erased)
	}
	r = ok(t, dir, "changes", "customers", "--since", "0", "--db", "db", "--format", "json")
	var row map[string]any
	for _, m := range jsonRows(t, r.stdout) {
		if m["op"] == "erased" {
			row = m
		}
	}
	if row == nil || len(row) != len(header) || row["customer_id"] != nil || row["valid_to"] != nil ||
		row["tx_from"] != nil || row["erasure_reason"] != "ticket 1" || row["erased_records"] != json.Number("3") || row["tx"] != erased[0] {
		t.Fatalf("erasure row in json: %v\n%s", row, r.stdout)
	}
	r = ok(t, dir, "changes", "customers", "--since", "0", "--db", "db", "--format", "table")
	if !strings.Contains(r.stdout, "erased") || !strings.Contains(r.stdout, "ticket 1") || strings.Contains(r.stdout, "1970") {
		t.Fatalf("erasure row in a table:\n%s", r.stdout)
	}
}
