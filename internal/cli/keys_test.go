package cli

import (
	"strings"
	"testing"
)

// TestHistoryAndAuditSeveralKeys checks that history and audit take several
// keys (printed key by key in the order given), a key prefix (fewer values than
// key columns, or --prefix) and refuse a count of values that names no keys.
func TestHistoryAndAuditSeveralKeys(t *testing.T) {
	dir := customersStore(t)
	r := ok(t, dir, "history", "customers", "c3", "c1", "--db", "db")
	wantLines(t, r.stdout,
		"customer_id,valid_from,valid_to,sk,name,city,score",
		"c3,2024-02-01,2024-05-01,5,Cy,Tromsø,3",
		"c3,2024-07-01,,6,Cy,Tromsø,4",
		"c1,2024-01-01,2024-03-11,1,Ada,Oslo,10",
		"c1,2024-03-11,2024-06-01,2,Ada,Bergen,11",
		"c1,2024-06-01,,3,Ada,Oslo,12",
	)
	r = ok(t, dir, "audit", "customers", "c4", "c2", "--db", "db")
	if lines := csvLines(r.stdout); len(lines) != 3 || !strings.HasPrefix(lines[1], "c4,") || !strings.HasPrefix(lines[2], "c2,") {
		t.Fatalf("audit of two keys:\n%s", r.stdout)
	}
	r = ok(t, dir, "history", "customers", "c1", "c2", "--timeline", "--db", "db")
	if !strings.Contains(r.stdout, "customers c1\n") || !strings.Contains(r.stdout, "customers c2\n") {
		t.Fatalf("timelines of two keys:\n%s", r.stdout)
	}

	ok(t, dir, "create", "prices", "--key", "sku,store", "--key-types", "string,int64", "--axis", "int", "--db", "db")
	write(t, dir, "prices.csv", "sku,store,valid_from,valid_to,price\na,1,0,10,5\na,1,10,,6\na,2,0,,7\nb,1,0,,8\n")
	ok(t, dir, "load", "prices", "prices.csv", "--from", "valid_from", "--to", "valid_to", "--db", "db")
	want := []string{"sku,store,valid_from,valid_to,sk,price", "a,1,0,10,1,5", "a,1,10,,2,6", "a,2,0,,3,7"}
	r = ok(t, dir, "history", "prices", "a", "--db", "db")
	wantLines(t, r.stdout, want...)
	r = ok(t, dir, "history", "prices", "--prefix", "a", "--db", "db")
	wantLines(t, r.stdout, want...)
	r = ok(t, dir, "history", "prices", "b", "1", "a", "2", "--db", "db")
	wantLines(t, r.stdout, "sku,store,valid_from,valid_to,sk,price", "b,1,0,,4,8", "a,2,0,,3,7")
	r = ok(t, dir, "audit", "prices", "--prefix", "a", "--db", "db")
	if lines := csvLines(r.stdout); len(lines) != 4 || !strings.HasPrefix(lines[3], "a,2,") {
		t.Fatalf("audit of a prefix:\n%s", r.stdout)
	}
	fails(t, dir, 2, "give 2 values per key, got 3 values", "history", "prices", "a", "1", "b", "--db", "db")
	fails(t, dir, 2, "not both", "audit", "prices", "a", "--prefix", "b", "--db", "db")
	fails(t, dir, 2, "or --prefix", "history", "prices", "--db", "db")
}
