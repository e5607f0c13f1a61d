package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bitempo/bitempo/internal/sealed"

	"github.com/bitempo/bitempo/store"
)

func TestStoreErrors(t *testing.T) {
	t.Parallel()
	dir := customersStore(t)
	fails(t, dir, 1, "no bitempo store at nothere", "get", "customers", "c1", "--db", "nothere")
	if _, err := os.Stat(filepath.Join(dir, "nothere")); !os.IsNotExist(err) {
		t.Fatalf("a read created the store: %v", err)
	}
	fails(t, dir, 1, "no bitempo store at nothere", "load", "customers", "customers.csv", "--at", "x", "--db", "nothere")
	write(t, dir, "notes.txt", "hello")
	os.Mkdir(filepath.Join(dir, "home"), 0o755)
	write(t, dir, "home/notes.txt", "hello")
	fails(t, dir, 1, "home is not a bitempo store", "scan", "customers", "--db", "home")
	fails(t, dir, 1, "notes.txt is not a bitempo store", "verify", "--db", "notes.txt")
	fails(t, dir, 1, `unknown table: "nope"; the tables of db are: customers`, "get", "nope", "c1", "--db", "db")

	// A store held open by another process is locked; the message says by whom.
	db, err := store.Open(filepath.Join(dir, "db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := fails(t, dir, 1, "store db is locked by another process", "get", "customers", "c1", "--db", "db")
	if _, err := os.Stat("/proc/locks"); err == nil && !strings.Contains(r.stderr, fmt.Sprintf("(pid %d)", os.Getpid())) {
		t.Errorf("lock message does not name this process: %s", r.stderr)
	}
	fails(t, dir, 1, "locked", "load", "customers", "customers.csv", "--at", "valid_from", "--db", "db")
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	ok(t, dir, "get", "customers", "c1", "--valid", "2024-01-01", "--db", "db")
}

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	dir := customersStore(t)
	for _, c := range []struct {
		want string
		args []string
	}{
		{`unknown command "frobnicate"`, []string{"frobnicate"}},
		{"unknown flag: --bogus", []string{"get", "customers", "c1", "--bogus"}},
		{"want a table NAME and its KEY values", []string{"get", "customers"}},
		{"--key is required", []string{"create", "t"}},
		{"--track or --track-except, not both", []string{"create", "t", "--key", "id", "--track", "a", "--track-except", "b"}},
		{"unknown axis", []string{"create", "t", "--key", "id", "--axis", "weeks"}},
		{"unknown key type", []string{"create", "t", "--key", "id", "--key-types", "float"}},
		{"--from 2024-02-01 is not before --to 2024-01-01", []string{"history", "customers", "c1", "--from", "2024-02-01", "--to", "2024-01-01"}},
		{"--tx", []string{"get", "customers", "c1", "--tx", "yesterday"}},
		{"--facts FILE is required", []string{"resolve", "customers", "--key", "customer_id", "--at", "x"}},
		{"no arguments", []string{"verify", "extra"}},
		{"--from T is required", []string{"put", "customers", "c1", "--set", "city=Oslo"}},
		{"want a table NAME and its KEY values", []string{"delete", "customers"}},
	} {
		r := fails(t, dir, 2, c.want, append(c.args, "--db", "db")...)
		if !strings.Contains(r.stderr, "--help)") {
			t.Errorf("usage error without a pointer to --help: %s", r.stderr)
		}
	}
	fails(t, dir, 1, "table already exists", "create", "customers", "--key", "id", "--db", "db")
}

func TestHelpEverywhere(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, name := range []string{"demo", "create", "load", "put", "delete", "get", "history", "audit", "scan", "changes", "resolve", "dump", "verify", "stats", "compact"} {
		r := ok(t, dir, name, "--help")
		if !strings.Contains(r.stdout, "Examples:") || !strings.Contains(r.stdout, "bitempo "+name) || !strings.Contains(r.stdout, "--db") {
			t.Errorf("%s --help lacks an example or the flags:\n%s", name, r.stdout)
		}
	}
	r := ok(t, dir, "--help")
	if !strings.Contains(r.stdout, "bitempo demo") {
		t.Errorf("root help does not point at the demo:\n%s", r.stdout)
	}
}

// brokenStore plants a record that overlaps another one of its key at the same
// transaction time (invariant 2), through the store's low-level writer.
func brokenStore(t *testing.T, dir string) {
	t.Helper()
	db, err := store.Open(filepath.Join(dir, "db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tbl, err := db.Table("customers")
	if err != nil {
		t.Fatal(err)
	}
	key := store.Key{"c1"}
	tuple, err := tbl.AppendKey(nil, key)
	if err != nil {
		t.Fatal(err)
	}
	w, err := db.BeginWrite(sealed.Key{})
	if err != nil {
		t.Fatal(err)
	}
	from, _ := parseAxisValue(store.AxisDate, "2024-02-01")
	to, _ := parseAxisValue(store.AxisDate, "2024-02-15")
	v := tbl.NewVersion(key, tuple, from, to, w.AllocSK(tbl), store.Attrs{"city": "Nowhere"})
	if err := w.Assert(tbl, v); err != nil {
		w.Abort()
		t.Fatal(err)
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
}

func TestVerify(t *testing.T) {
	t.Parallel()
	dir := customersStore(t)
	r := ok(t, dir, "verify", "--db", "db")
	if strings.TrimSpace(r.stdout) != "db: 1 tables, 4 keys, 7 records: ok" {
		t.Fatalf("verify: %q", r.stdout)
	}
	brokenStore(t, dir)
	r = fails(t, dir, 1, "verify: db has 1 problems", "verify", "--db", "db")
	if !strings.Contains(r.stdout, "invariant 2") || !strings.Contains(r.stdout, "overlap in valid time") || !strings.Contains(r.stdout, "key c1") {
		t.Fatalf("report:\n%s", r.stdout)
	}
}

func TestCorruptValue(t *testing.T) {
	t.Parallel()
	dir := customersStore(t)
	db, err := store.Open(filepath.Join(dir, "db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := db.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var target []byte
	for kv, err := range s.RawScan(nil, nil) {
		if err != nil {
			t.Fatal(err)
		}
		if e := db.DecodeEntry(kv); e.Keyspace == "current" && e.Key.String() == "c2" {
			target = kv.Key
			break
		}
	}
	s.Close()
	if target == nil {
		t.Fatal("no current record of c2")
	}
	if err := db.RawSet(sealed.Key{}, target, []byte{0xc1, 0xff}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	fails(t, dir, 1, "store db is corrupt", "get", "customers", "c2", "--valid", "2024-03-01", "--db", "db")
	r := fails(t, dir, 1, "verify: db has", "verify", "--db", "db")
	if !strings.Contains(r.stdout, "invariant 0") {
		t.Fatalf("report:\n%s", r.stdout)
	}
	r = ok(t, dir, "dump", "--table", "customers", "--db", "db")
	if !strings.Contains(r.stdout, "CORRUPT:") {
		t.Fatalf("dump does not flag the corrupt value:\n%s", r.stdout)
	}
}
