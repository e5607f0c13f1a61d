package cli

import (
	"strings"
	"testing"
)

// TestPutForPortionOf checks put: FOR PORTION OF over a version (split, the
// leftovers keep their attributes), an open-ended period, values read with the
// stored type or inferred, an identical put that writes nothing, and the
// summary line.
func TestPutForPortionOf(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// price holds 10 and then 9.5: an int64 and a float64, on purpose.
	ok(t, dir, "create", "prices", "--key", "sku", "--axis", "date", "--mixed-types", "--db", "db")
	write(t, dir, "prices.csv", "sku,valid_from,valid_to,price,cur,zip\nsku-1,2024-01-01,,10,EUR,0123\n")
	ok(t, dir, "load", "prices", "prices.csv", "--from", "valid_from", "--to", "valid_to", "--types", "zip=string", "--db", "db")

	r := ok(t, dir, "put", "prices", "sku-1", "--from", "2024-03-01", "--to", "2024-04-01", "--set", "price=9.5", "--set", "cur=EUR", "--set", "zip=0456", "--db", "db")
	if !strings.Contains(r.stderr, "put prices sku-1 over [2024-03-01, 2024-04-01): versions inserted 1 / closed 1 (trimmed 0, split 1, replaced whole 0) / unchanged 0; records asserted 3, retired 1; tx ") {
		t.Fatalf("put summary:\n%s", r.stderr)
	}
	r = ok(t, dir, "history", "prices", "sku-1", "--format", "json", "--db", "db")
	rows := jsonRows(t, r.stdout)
	if len(rows) != 3 {
		t.Fatalf("history after put: %v", rows)
	}
	mid := rows[1]
	if mid["valid_from"] != "2024-03-01" || mid["valid_to"] != "2024-04-01" || mid["price"].(interface{ String() string }).String() != "9.5" || mid["zip"] != "0456" {
		t.Fatalf("the put version: %v", mid)
	}
	if rows[0]["valid_to"] != "2024-03-01" || rows[2]["valid_from"] != "2024-04-01" || rows[2]["valid_to"] != nil ||
		rows[0]["zip"] != "0123" || rows[2]["price"].(interface{ String() string }).String() != "10" {
		t.Fatalf("leftovers: %v", rows)
	}

	// The same put again writes nothing.
	r = ok(t, dir, "put", "prices", "sku-1", "--from", "2024-03-01", "--to", "2024-04-01", "--set", "price=9.5", "--set", "cur=EUR", "--set", "zip=0456", "--db", "db")
	if !strings.Contains(r.stderr, "versions inserted 0 / closed 0 (trimmed 0, split 0, replaced whole 0) / unchanged 1; records asserted 0, retired 0; no transaction (nothing changed)") {
		t.Fatalf("identical put:\n%s", r.stderr)
	}

	// Open-ended: --to defaults to +inf; only the --set attributes are in the
	// new version, an empty value is null.
	r = ok(t, dir, "put", "prices", "sku-1", "--from", "2024-06-01", "--set", "price=11", "--set", "cur=", "--db", "db")
	if !strings.Contains(r.stderr, "over [2024-06-01, +inf): versions inserted 1 / closed 1 (trimmed 1, split 0, replaced whole 0)") {
		t.Fatalf("open-ended put:\n%s", r.stderr)
	}
	r = ok(t, dir, "get", "prices", "sku-1", "--valid", "2025-01-01", "--format", "json", "--db", "db")
	last := jsonRows(t, r.stdout)[0]
	if last["price"].(interface{ String() string }).String() != "11" || last["cur"] != nil || last["zip"] != nil || last["valid_to"] != nil {
		t.Fatalf("open-ended version: %v", last)
	}
	r = ok(t, dir, "get", "prices", "sku-1", "--valid", "2024-05-01", "--format", "json", "--db", "db")
	if row := jsonRows(t, r.stdout)[0]; row["valid_to"] != "2024-06-01" || row["cur"] != "EUR" {
		t.Fatalf("trimmed version: %v", row)
	}

	// A new key, an int key, a composite key.
	ok(t, dir, "put", "prices", "sku-2", "--from", "2024-01-01", "--set", "price=3", "--db", "db")
	ok(t, dir, "create", "stock", "--key", "region,n", "--key-types", "string,int64", "--axis", "int", "--db", "db")
	r = ok(t, dir, "put", "stock", "eu", "7", "--from", "0", "--to", "10", "--set", "qty=3", "--set", "ok=true", "--db", "db")
	if !strings.Contains(r.stderr, "put stock eu/7 over [0, 10): versions inserted 1 / closed 0") {
		t.Fatalf("composite key summary:\n%s", r.stderr)
	}
	r = ok(t, dir, "scan", "stock", "--valid", "5", "--db", "db")
	wantLines(t, r.stdout, "region,n,valid_from,valid_to,sk,qty,ok", "eu,7,0,10,1,3,true")

	// Refusals write nothing.
	before := ok(t, dir, "audit", "prices", "sku-1", "--db", "db").stdout
	fails(t, dir, 2, "--from T is required", "put", "prices", "sku-1", "--set", "price=1", "--db", "db")
	fails(t, dir, 2, "--from", "put", "prices", "sku-1", "--from", "yesterday-ish", "--set", "price=1", "--db", "db")
	fails(t, dir, 2, "--from 2024-05-01 is not before --to 2024-04-01", "put", "prices", "sku-1", "--from", "2024-05-01", "--to", "2024-04-01", "--db", "db")
	fails(t, dir, 2, "want COL=VALUE", "put", "prices", "sku-1", "--from", "2024-01-01", "--set", "price", "--db", "db")
	fails(t, dir, 2, "is not an int64", "put", "prices", "sku-1", "--from", "2024-01-01", "--set", "price=x", "--types", "price=int64", "--db", "db")
	fails(t, dir, 1, "unknown table", "put", "nope", "sku-1", "--from", "2024-01-01", "--db", "db")
	fails(t, dir, 2, "key of 2 columns", "put", "stock", "eu", "--from", "0", "--db", "db")
	if after := ok(t, dir, "audit", "prices", "sku-1", "--db", "db").stdout; after != before {
		t.Fatalf("a refused put wrote:\n%s\nwant:\n%s", after, before)
	}
	ok(t, dir, "create", "feed", "--key", "id", "--kind", "changes", "--db", "db")
	fails(t, dir, 1, "changes table", "put", "feed", "k", "--from", "2024-01-01T00:00:00Z", "--set", "a=1", "--db", "db")
	ok(t, dir, "verify", "--db", "db")
}

// TestDeleteForPortionOf checks delete over a period (a split leaves a gap),
// over the rest of the timeline and over all of it, and its refusals.
func TestDeleteForPortionOf(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ok(t, dir, "create", "prices", "--key", "sku", "--axis", "date", "--db", "db")
	write(t, dir, "prices.csv", "sku,valid_from,valid_to,price\nsku-1,2024-01-01,2024-06-01,10\nsku-1,2024-06-01,,12\nsku-2,2024-01-01,,5\n")
	ok(t, dir, "load", "prices", "prices.csv", "--from", "valid_from", "--to", "valid_to", "--db", "db")

	r := ok(t, dir, "delete", "prices", "sku-1", "--from", "2024-03-01", "--to", "2024-04-01", "--db", "db")
	if !strings.Contains(r.stderr, "delete prices sku-1 over [2024-03-01, 2024-04-01): versions inserted 0 / closed 1 (trimmed 0, split 1, removed whole 0); records asserted 2, retired 1; tx ") {
		t.Fatalf("delete summary:\n%s", r.stderr)
	}
	r = ok(t, dir, "history", "prices", "sku-1", "--db", "db")
	wantLines(t, r.stdout,
		"sku,valid_from,valid_to,sk,price",
		"sku-1,2024-01-01,2024-03-01,1,10",
		"sku-1,2024-04-01,2024-06-01,4,10",
		"sku-1,2024-06-01,,2,12",
	)
	fails(t, dir, 1, "in a gap", "get", "prices", "sku-1", "--valid", "2024-03-15", "--db", "db")

	// --from alone: to +inf.
	r = ok(t, dir, "delete", "prices", "sku-1", "--from", "2024-05-01", "--db", "db")
	if !strings.Contains(r.stderr, "over [2024-05-01, +inf): versions inserted 0 / closed 2 (trimmed 1, split 0, removed whole 1)") {
		t.Fatalf("delete to +inf:\n%s", r.stderr)
	}
	// Neither: the whole timeline; again: nothing to do.
	r = ok(t, dir, "delete", "prices", "sku-1", "--db", "db")
	if !strings.Contains(r.stderr, "over [-inf, +inf): versions inserted 0 / closed 2 (trimmed 0, split 0, removed whole 2)") {
		t.Fatalf("delete of the whole timeline:\n%s", r.stderr)
	}
	r = ok(t, dir, "delete", "prices", "sku-1", "--db", "db")
	if !strings.Contains(r.stderr, "closed 0 (trimmed 0, split 0, removed whole 0); records asserted 0, retired 0; no transaction (nothing changed)") {
		t.Fatalf("delete of nothing:\n%s", r.stderr)
	}
	r = ok(t, dir, "scan", "prices", "--valid", "2024-02-01", "--db", "db")
	wantLines(t, r.stdout, "sku,valid_from,valid_to,sk,price", "sku-2,2024-01-01,,3,5")
	// The records stay in the audit trail.
	if n := len(csvLines(ok(t, dir, "audit", "prices", "sku-1", "--db", "db").stdout)); n != 1+5 {
		t.Fatalf("audit after deletes: %d lines", n)
	}

	before := ok(t, dir, "audit", "prices", "sku-2", "--db", "db").stdout
	fails(t, dir, 2, "--to", "delete", "prices", "sku-2", "--to", "soon", "--db", "db")
	fails(t, dir, 1, "unknown table", "delete", "nope", "sku-2", "--db", "db")
	if after := ok(t, dir, "audit", "prices", "sku-2", "--db", "db").stdout; after != before {
		t.Fatalf("a refused delete wrote:\n%s", after)
	}
	ok(t, dir, "create", "feed", "--key", "id", "--kind", "changes", "--db", "db")
	fails(t, dir, 1, "changes table", "delete", "feed", "k", "--db", "db")
	ok(t, dir, "verify", "--db", "db")
}
