package cli

import "testing"

// scan --attrs and resolve --attrs print only the named attributes, in the
// order given; a name the table never stored is an empty column.
func TestScanAndResolveAttrs(t *testing.T) {
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
