package cli

import (
	"strings"
	"testing"
)

// scan --attrs and resolve --attrs print only the named attributes, in the
// order given; a name the table never stored is an empty column.
func TestScanAndResolveAttrs(t *testing.T) {
	t.Parallel()
	dir := customersStore(t)
	r := ok(t, dir, "scan", "customers", "--valid", "2024-03-12", "--attrs", "score,city,nope", "--db", "db")
	wantLines(t, r.stdout,
		"customer_id,valid_from,valid_to,sk,score,city,nope",
		"c1,2024-03-11,2024-06-01,2,11,Bergen,",
		"c2,2024-01-15,,4,,Trondheim,",
		"c3,2024-02-01,2024-05-01,5,3,Tromsø,",
	)
	write(t, dir, "orders.csv", "order_id,customer_id,ordered_on,city\no1,c1,2024-03-08,X\no2,c1,2024-03-12,Y\n")
	r = ok(t, dir, "resolve", "customers", "--facts", "orders.csv", "--key", "customer_id", "--at", "ordered_on", "--attrs", "city", "--db", "db")
	wantLines(t, r.stdout,
		"order_id,customer_id,ordered_on,city,sk,customers_city",
		"o1,c1,2024-03-08,X,1,Oslo",
		"o2,c1,2024-03-12,Y,2,Bergen",
	)
}

// get, history, audit and changes --attrs print only the named attributes, in
// the order given, as scan --attrs does; a name the table never stored is an
// empty column, and no --attrs prints every attribute.
func TestPointReadsAttrs(t *testing.T) {
	t.Parallel()
	dir := customersStore(t)
	r := ok(t, dir, "get", "customers", "c1", "--valid", "2024-03-12", "--attrs", "score,nope,city", "--db", "db")
	wantLines(t, r.stdout,
		"customer_id,valid_from,valid_to,sk,score,nope,city",
		"c1,2024-03-11,2024-06-01,2,11,,Bergen",
	)
	r = ok(t, dir, "get", "customers", "c1", "--valid", "2024-03-12", "--db", "db")
	wantLines(t, r.stdout,
		"customer_id,valid_from,valid_to,sk,name,city,score",
		"c1,2024-03-11,2024-06-01,2,Ada,Bergen,11",
	)
	r = ok(t, dir, "history", "customers", "c1", "c3", "--attrs", "city", "--db", "db")
	wantLines(t, r.stdout,
		"customer_id,valid_from,valid_to,sk,city",
		"c1,2024-01-01,2024-03-11,1,Oslo",
		"c1,2024-03-11,2024-06-01,2,Bergen",
		"c1,2024-06-01,,3,Oslo",
		"c3,2024-02-01,2024-05-01,5,Tromsø",
		"c3,2024-07-01,,6,Tromsø",
	)
	r = ok(t, dir, "history", "customers", "c1", "c2", "c3", "--from", "2024-06-15", "--attrs", "score", "--db", "db")
	wantLines(t, r.stdout,
		"customer_id,valid_from,valid_to,sk,score",
		"c1,2024-06-01,,3,12",
		"c2,2024-01-15,,4,",
		"c3,2024-07-01,,6,4",
	)
	r = ok(t, dir, "history", "customers", "c1", "--timeline", "--attrs", "city", "--db", "db")
	if !strings.Contains(r.stdout, "rows: sk, valid period, city\n") || !strings.Contains(r.stdout, ")   Bergen\n") || strings.Contains(r.stdout, "Ada") {
		t.Fatalf("timeline --attrs city:\n%s", r.stdout)
	}
	// audit and changes print tx columns (the test's commit times): compare
	// the others.
	r = ok(t, dir, "audit", "customers", "c1", "c3", "--attrs", "score,city", "--db", "db")
	wantColumns(t, r.stdout, 6,
		"customer_id,valid_from,valid_to,sk,score,city",
		"c1,2024-01-01,2024-03-11,1,10,Oslo",
		"c1,2024-03-11,2024-06-01,2,11,Bergen",
		"c1,2024-06-01,,3,12,Oslo",
		"c3,2024-02-01,2024-05-01,5,3,Tromsø",
		"c3,2024-07-01,,6,4,Tromsø",
	)
	r = ok(t, dir, "changes", "customers", "--since", "0", "--attrs", "name", "--db", "db")
	lines := csvLines(r.stdout)
	for i := range lines {
		lines[i] = lines[i][strings.Index(lines[i], ",")+1:] // drop tx
	}
	wantColumns(t, strings.Join(lines, "\n"), 6,
		"op,customer_id,valid_from,valid_to,sk,name",
		"asserted,c1,2024-01-01,2024-03-11,1,Ada",
		"asserted,c1,2024-03-11,2024-06-01,2,Ada",
		"asserted,c1,2024-06-01,,3,Ada",
		"asserted,c2,2024-01-15,,4,Bo",
		"asserted,c3,2024-02-01,2024-05-01,5,Cy",
		"asserted,c3,2024-07-01,,6,Cy",
		"asserted,c4,2024-01-01,2024-02-01,7,Di",
	)
}

// wantColumns is wantLines on the first n columns of each line.
func wantColumns(t *testing.T, got string, n int, want ...string) {
	t.Helper()
	lines := csvLines(got)
	for i, l := range lines {
		lines[i] = strings.Join(strings.SplitN(l, ",", n+1)[:min(n, strings.Count(l, ",")+1)], ",")
	}
	wantLines(t, strings.Join(lines, "\n"), want...)
}
