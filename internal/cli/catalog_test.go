package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDemoRefusesForeignStore checks that demo --db on a store it did not build
// leaves the store alone.
func TestDemoRefusesForeignStore(t *testing.T) {
	t.Parallel()
	dir := customersStore(t) // ./db holds customers, loaded by the user
	before, _ := dumpState(t, dir, "db")
	fails(t, dir, 1, "db is a bitempo store the demo did not create; it is left alone", "demo", "--db", "db")
	if after, _ := dumpState(t, dir, "db"); after != before {
		t.Fatal("demo changed a store it did not create")
	}
	// Its own store it rebuilds, and the data files of the commands it shows
	// are still there afterwards.
	r := ok(t, dir, "demo", "--db", "d")
	ok(t, dir, "demo", "--db", "d")
	if _, err := os.Stat(filepath.Join(dir, "d", demoMarker)); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(r.stdout, "\n") {
		if !strings.HasPrefix(line, "$ bitempo load ") {
			continue
		}
		file := strings.Fields(line)[4]
		if _, err := os.Stat(filepath.Join(dir, file)); err != nil {
			t.Fatalf("the demo shows %q, whose file is gone: %v", line, err)
		}
	}
}

func TestTablesDescribeDrop(t *testing.T) {
	t.Parallel()
	dir := customersStore(t)
	ok(t, dir, "create", "feed", "--key", "id", "--kind", "changes", "--db", "db")
	r := ok(t, dir, "tables", "--db", "db")
	wantLines(t, r.stdout,
		"table,kind,key,axis,attributes",
		`customers,periods,customer_id string,date,"name, city, score"`,
		"feed,changes,id string,time,")
	r = ok(t, dir, "describe", "customers", "--db", "db")
	wantLines(t, r.stdout,
		"table customers: periods table, key (customer_id string), date axis",
		"attributes: name, city, score",
		"attribute types: name string, city string, score int64",
		"columns (latest): none declared")
	fails(t, dir, 1, `unknown table: "nope"`, "describe", "nope", "--db", "db")
	// Without a terminal to ask, drop needs --yes.
	fails(t, dir, 2, "give --yes to confirm", "drop", "customers", "--db", "db")
	ok(t, dir, "get", "customers", "c1", "--valid", "2024-03-12", "--db", "db")
	r = ok(t, dir, "drop", "customers", "--yes", "--db", "db")
	if !strings.Contains(r.stdout, "dropped table customers") {
		t.Fatalf("drop: %s", r.stdout)
	}
	r = ok(t, dir, "tables", "--db", "db")
	wantLines(t, r.stdout, "table,kind,key,axis,attributes", "feed,changes,id string,time,")
	ok(t, dir, "verify", "--db", "db")
	fails(t, dir, 1, `unknown table: "customers"`, "drop", "customers", "--yes", "--db", "db")
}
