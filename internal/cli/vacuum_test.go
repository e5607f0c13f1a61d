package cli

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestVacuumCommand: a table created with --retain-tx loses the records retired
// longer ago; a read before the horizon fails, reads after it still work.
func TestVacuumCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fails(t, dir, 2, "--retain-tx", "create", "customers", "--key", "customer_id", "--retain-tx", "soon", "--db", "db")
	r := ok(t, dir, "create", "customers", "--key", "customer_id", "--axis", "date", "--retain-tx", "1ms", "--db", "db")
	if !strings.Contains(r.stdout, "retaining retired records for 1ms") {
		t.Fatalf("create says: %s", r.stdout)
	}
	write(t, dir, "customers.csv", customersCSV)
	ok(t, dir, "load", "customers", "customers.csv", "--from", "valid_from", "--to", "valid_to", "--open-sentinel", "9999-12-31", "--db", "db")
	t1 := firstTx(t, dir)
	correct(t, dir)
	time.Sleep(20 * time.Millisecond)
	r = ok(t, dir, "vacuum", "--db", "db")
	if !strings.Contains(r.stderr, "customers: horizon") || strings.Contains(r.stderr, "dropped 0 retired records") {
		t.Fatalf("vacuum says: %s", r.stderr)
	}
	r = fails(t, dir, 1, "before the retention horizon", "get", "customers", "c1", "--valid", "2024-03-05", "--tx", t1, "--db", "db")
	if !regexp.MustCompile(`transaction time \d{4}-\d\d-\d\dT[0-9:.]+Z is before the retention horizon \d{4}-\d\d-\d\dT[0-9:.]+Z `).MatchString(r.stderr) {
		t.Fatalf("a read before the horizon says: %s", r.stderr)
	}
	r = ok(t, dir, "get", "customers", "c1", "--valid", "2024-03-05", "--db", "db")
	if !strings.Contains(r.stdout, "Bergen") {
		t.Fatalf("latest read after the vacuum: %s", r.stdout)
	}
	// --since 0 is the first commit still held: the feed after the horizon.
	write(t, dir, "fix2.csv", "customer_id,at,name,city,score\nc2,2024-04-01,Bo,Molde,5\n")
	ok(t, dir, "load", "customers", "fix2.csv", "--at", "at", "--db", "db")
	r = ok(t, dir, "changes", "customers", "--since", "0", "--db", "db")
	if !strings.Contains(r.stderr, "customers was vacuumed through") || !strings.Contains(r.stdout, "Molde") {
		t.Fatalf("changes --since 0 after a vacuum:\nstdout: %s\nstderr: %s", r.stdout, r.stderr)
	}
	fails(t, dir, 1, "before the retention horizon", "changes", "customers", "--since", t1, "--db", "db")
	ok(t, dir, "verify", "--db", "db")
}
