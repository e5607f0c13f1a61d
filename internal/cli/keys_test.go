package cli

import (
	"strings"
	"testing"
)

// TestHistoryAndAuditSeveralKeys checks that history and audit take several
// keys (printed key by key in the order given), a key prefix (fewer values than
// key columns, or --prefix) and refuse a count of values that names no keys.
func TestHistoryAndAuditSeveralKeys(t *testing.T) {
	t.Parallel()
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

// TestPrefixMatchesStringStart checks that --prefix on scan, history and audit
// matches the last value given as the start of a string key component (sku-1
// selects sku-10), the earlier ones and integer components whole.
func TestPrefixMatchesStringStart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ok(t, dir, "create", "items", "--key", "sku", "--axis", "int", "--db", "db")
	write(t, dir, "items.csv", "sku,valid_from,valid_to,price\nSKU-00001,0,,1\nSKU-00010,0,,2\nsku-1,0,,3\nsku-10,0,,4\nsku-1a,0,,5\nsku-2,0,,6\n")
	ok(t, dir, "load", "items", "items.csv", "--from", "valid_from", "--to", "valid_to", "--db", "db")
	keysOf := func(out string) string {
		var ks []string
		for _, l := range csvLines(out)[1:] {
			ks = append(ks, strings.SplitN(l, ",", 2)[0])
		}
		return strings.Join(ks, " ")
	}
	for _, tc := range []struct{ prefix, want string }{
		{"SKU-0000", "SKU-00001"},
		{"SKU-000", "SKU-00001 SKU-00010"},
		{"sku-1", "sku-1 sku-10 sku-1a"},
		{"sku-10", "sku-10"},
		{"sku-3", ""},
	} {
		r := ok(t, dir, "scan", "items", "--valid", "5", "--prefix", tc.prefix, "--db", "db")
		if got := keysOf(r.stdout); got != tc.want {
			t.Errorf("scan --prefix %s: keys %q, want %q", tc.prefix, got, tc.want)
		}
		r = ok(t, dir, "history", "items", "--prefix", tc.prefix, "--db", "db")
		if got := keysOf(r.stdout); got != tc.want {
			t.Errorf("history --prefix %s: keys %q, want %q", tc.prefix, got, tc.want)
		}
		r = ok(t, dir, "audit", "items", "--prefix", tc.prefix, "--db", "db")
		if got := keysOf(r.stdout); got != tc.want {
			t.Errorf("audit --prefix %s: keys %q, want %q", tc.prefix, got, tc.want)
		}
	}
	r := ok(t, dir, "history", "items", "--prefix", "sku-1", "--timeline", "--db", "db")
	if !strings.Contains(r.stdout, "items sku-10\n") || strings.Contains(r.stdout, "sku-2") {
		t.Fatalf("timelines of a string prefix:\n%s", r.stdout)
	}

	// A composite key: the earlier values match whole, the last as a string
	// prefix; an integer component matches whole.
	ok(t, dir, "create", "stock", "--key", "region,sku", "--axis", "int", "--db", "db")
	write(t, dir, "stock.csv", "region,sku,valid_from,valid_to,n\neu,sku-1,0,,1\neu,sku-12,0,,2\neu-west,sku-1,0,,3\nus,sku-1,0,,4\n")
	ok(t, dir, "load", "stock", "stock.csv", "--from", "valid_from", "--to", "valid_to", "--db", "db")
	r = ok(t, dir, "scan", "stock", "--valid", "5", "--prefix", "eu,sku-1", "--db", "db")
	wantLines(t, r.stdout, "region,sku,valid_from,valid_to,sk,n", "eu,sku-1,0,,1,1", "eu,sku-12,0,,2,2")
	r = ok(t, dir, "scan", "stock", "--valid", "5", "--prefix", "eu", "--db", "db")
	if n := len(csvLines(r.stdout)); n != 4 {
		t.Fatalf("scan --prefix eu, every region starting with eu:\n%s", r.stdout)
	}
	r = ok(t, dir, "history", "stock", "eu", "--db", "db")
	if n := len(csvLines(r.stdout)); n != 3 {
		t.Fatalf("history of leading KEY values, matched whole:\n%s", r.stdout)
	}

	ok(t, dir, "create", "counts", "--key", "id", "--key-types", "int64", "--axis", "int", "--db", "db")
	write(t, dir, "counts.csv", "id,valid_from,valid_to,n\n1,0,,1\n10,0,,2\n")
	ok(t, dir, "load", "counts", "counts.csv", "--from", "valid_from", "--to", "valid_to", "--db", "db")
	r = ok(t, dir, "scan", "counts", "--valid", "5", "--prefix", "1", "--db", "db")
	wantLines(t, r.stdout, "id,valid_from,valid_to,sk,n", "1,0,,1,1")
}
