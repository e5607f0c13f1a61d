package cli

import (
	"path/filepath"
	"testing"
)

func TestBackupCommand(t *testing.T) {
	t.Parallel()
	dir := customersStore(t)
	want := ok(t, dir, "scan", "customers", "--valid", "2024-03-12", "--with-tx", "--db", "db").stdout
	ok(t, dir, "backup", "copy", "--db", "db")
	ok(t, dir, "verify", "--db", "copy")
	if got := ok(t, dir, "scan", "customers", "--valid", "2024-03-12", "--with-tx", "--db", "copy").stdout; got != want {
		t.Fatalf("backup scan:\n%s\nwant:\n%s", got, want)
	}
	// The copy is a store of its own: writing to it leaves the original alone.
	write(t, dir, "more.csv", "customer_id,at,name,city,score\nc9,2024-03-01,Eve,Oslo,1\n")
	ok(t, dir, "load", "customers", "more.csv", "--at", "at", "--db", "copy")
	if got := ok(t, dir, "scan", "customers", "--valid", "2024-03-12", "--with-tx", "--db", "db").stdout; got != want {
		t.Fatalf("original changed after a write to the backup:\n%s", got)
	}
	fails(t, dir, 1, "already exists", "backup", "copy", "--db", "db")
	fails(t, dir, 1, "no bitempo store", "backup", filepath.Join(dir, "b2"), "--db", "absent")
	fails(t, dir, 2, "DEST", "backup", "--db", "db")
}
