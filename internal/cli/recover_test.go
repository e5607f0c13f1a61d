package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// walOnlyStore writes n synced transactions that stay in the store's
// write-ahead log and returns the path of its largest log file.
func walOnlyStore(t *testing.T, dir string, n int) string {
	t.Helper()
	db, err := store.Open(filepath.Join(dir, "db"), store.Options{Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateTable(store.TableDef{Name: "t", Key: []store.KeyColumn{{Name: "id", Type: store.String}}}); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if _, err := txn.Update(db, func(tx *txn.Tx) error {
			return tx.Put("t", store.Key{fmt.Sprintf("k%03d", i)}, store.Attrs{"n": i, "pad": strings.Repeat("p", 400)}, 0, store.Infinity)
		}); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	logs, _ := filepath.Glob(filepath.Join(dir, "db", "*.log"))
	var best string
	var size int64
	for _, l := range logs {
		if st, err := os.Stat(l); err == nil && st.Size() > size {
			best, size = l, st.Size()
		}
	}
	return best
}

// TestDamagedStoreMessages damages a store's files and checks what the tool
// says: the error in plain words, never "internal error" and never the advice
// to create a store; for a damaged write-ahead log, the way out (recover),
// which keeps the transactions before the damage and lists the lost ones.
func TestDamagedStoreMessages(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	wal := walOnlyStore(t, dir, 100)
	b, err := os.ReadFile(wal)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0xff
	if err := os.WriteFile(wal, b, 0o644); err != nil {
		t.Fatal(err)
	}
	plain := func(r result) {
		t.Helper()
		for _, bad := range []string{"internal error", "create one", "panic"} {
			if strings.Contains(r.stderr, bad) {
				t.Fatalf("stderr says %q:\n%s", bad, r.stderr)
			}
		}
	}
	plain(fails(t, dir, 1, "store db has a damaged write-ahead log", "get", "t", "k000", "--valid", "2024-01-01", "--db", "db"))
	r := fails(t, dir, 1, "run: bitempo recover --db db", "verify", "--db", "db")
	plain(r)

	r = ok(t, dir, "recover", "--db", "db")
	if !strings.Contains(r.stdout, "recovered: write-ahead log") || !strings.Contains(r.stdout, "lost tx ") || !strings.Contains(r.stdout, ": ok") {
		t.Fatalf("recover said:\n%s", r.stdout)
	}
	ok(t, dir, "get", "t", "k000", "--valid", "2024-01-01", "--db", "db")
	r = ok(t, dir, "recover", "--db", "db")
	if !strings.Contains(r.stdout, "nothing to recover") {
		t.Fatalf("second recover said:\n%s", r.stdout)
	}

	// A deleted MANIFEST marker: damage, not a missing store.
	markers, _ := filepath.Glob(filepath.Join(dir, "db", "marker.manifest.*"))
	for _, m := range markers {
		if err := os.Remove(m); err != nil {
			t.Fatal(err)
		}
	}
	plain(fails(t, dir, 1, "store db is corrupt", "get", "t", "k000", "--valid", "2024-01-01", "--db", "db"))
	plain(fails(t, dir, 1, "store db is corrupt", "create", "u", "--key", "id", "--db", "db"))
}
