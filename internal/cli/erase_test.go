package cli

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEraseCommand: erase removes a customer from every read, says so in
// the change feed, leaves no file holding its data, and --check finds it.
func TestEraseCommand(t *testing.T) {
	dir := customersStore(t)
	t1 := firstTx(t, dir)
	fails(t, dir, 1, "never erased", "erase", "customers", "c1", "--check", "--db", "db")
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
