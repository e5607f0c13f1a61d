package query_test

import (
	"errors"
	"fmt"
	"log"
	"strings"
	"time"

	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// day is a date as a valid-time tick (microseconds since the Unix epoch, UTC).
func day(date string) int64 {
	t, err := time.Parse(time.DateOnly, date)
	if err != nil {
		panic(err)
	}
	return t.UnixMicro()
}

func date(tick int64) string {
	if tick == store.Infinity {
		return "+inf"
	}
	return time.UnixMicro(tick).UTC().Format(time.DateOnly)
}

// openCustomers opens an in-memory store with a customers table: Alice (101)
// in the East until 2022-03-01 and in the West after, Bob (102) in the North.
func openCustomers() *store.DB {
	db, err := store.Open("example", store.Options{InMemory: true})
	if err != nil {
		log.Fatal(err)
	}
	_, err = db.CreateTable(store.TableDef{Name: "customers", Axis: store.AxisDate,
		Key: []store.KeyColumn{{Name: "customer_id", Type: store.Int64}}})
	if err != nil {
		log.Fatal(err)
	}
	_, err = txn.Update(db, func(tx *txn.Tx) error {
		if _, err := tx.Upsert("customers", store.Key{101}, store.Attrs{"name": "Alice Smith", "region": "East"}, day("2020-01-01")); err != nil {
			return err
		}
		if _, err := tx.Upsert("customers", store.Key{101}, store.Attrs{"name": "Alice Smith", "region": "West"}, day("2022-03-01")); err != nil {
			return err
		}
		_, err := tx.Upsert("customers", store.Key{102}, store.Attrs{"name": "Bob Johnson", "region": "North"}, day("2021-05-01"))
		return err
	})
	if err != nil {
		log.Fatal(err)
	}
	return db
}

// A versioned fact table (orders) joined to a versioned dimension (customers)
// has two readings at a reference point, and both must count every order once:
// "as written" resolves each order version's customer at the order version's own
// valid_from; "as of the reference point" resolves everything at one instant.
// Both start from a snapshot of the orders at the reference point, which holds
// one version per order; summing every version instead counts 5001 twice.
func Example_versionedFactsAndDimensions() {
	db := openCustomers()
	defer db.Close()
	_, err := db.CreateTable(store.TableDef{Name: "orders", Axis: store.AxisDate,
		Key: []store.KeyColumn{{Name: "order_id", Type: store.Int64}}})
	if err != nil {
		log.Fatal(err)
	}
	_, err = txn.Update(db, func(tx *txn.Tx) error {
		for _, o := range []struct {
			id       int64
			customer int64
			amount   int64
			status   string
			from, to int64
		}{
			{5001, 101, 250, "Pending", day("2021-06-10"), day("2021-07-01")},
			{5001, 101, 300, "Shipped", day("2021-07-01"), store.Infinity},
			{5002, 102, 300, "Pending", day("2022-01-15"), store.Infinity},
		} {
			attrs := store.Attrs{"customer_id": o.customer, "amount": o.amount, "status": o.status}
			if err := tx.Put("orders", store.Key{o.id}, attrs, o.from, o.to); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}

	for _, ref := range []string{"2021-06-15", "2022-05-01"} {
		at := day(ref)
		var orders []store.Version
		for o, err := range query.Snapshot(db, "orders", query.AsOf{Valid: at}, query.KeyRange{}, query.SnapshotOptions{}) {
			if err != nil {
				log.Fatal(err)
			}
			orders = append(orders, o)
		}
		// One fact per order version for each reading: the customer at the order
		// version's valid_from (as written), or at the reference point.
		asWritten := make([]query.Fact, len(orders))
		asOf := make([]query.Fact, len(orders))
		var sum int64
		for i, o := range orders {
			customer := store.Key{o.Attrs["customer_id"]}
			asWritten[i] = query.Fact{Key: customer, At: o.ValidFrom}
			asOf[i] = query.Fact{Key: customer, At: at}
			sum += o.Attrs["amount"].(int64)
		}
		written, err := query.Resolve(db, "customers", asWritten, query.ResolveOptions{Attrs: true})
		if err != nil {
			log.Fatal(err)
		}
		pinned, err := query.Resolve(db, "customers", asOf, query.ResolveOptions{Attrs: true})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("reference point %s: %d order versions, amount %d\n", ref, len(orders), sum)
		for i, o := range orders {
			fmt.Printf("  order %v %v %v: as written %v, as of the reference point %v\n", o.Key[0], o.Attrs["status"],
				o.Attrs["amount"], written[i].Attrs["region"], pinned[i].Attrs["region"])
		}
	}

	var all int64
	for o, err := range query.HistoryRange(db, "orders", query.KeyRange{}, store.NegInfinity, store.Infinity, query.HistoryOptions{}) {
		if err != nil {
			log.Fatal(err)
		}
		all += o.Attrs["amount"].(int64)
	}
	fmt.Printf("every version of every order, without a reference point: %d (double counts 5001)\n", all)
	// Output:
	// reference point 2021-06-15: 1 order versions, amount 250
	//   order 5001 Pending 250: as written East, as of the reference point East
	// reference point 2022-05-01: 2 order versions, amount 600
	//   order 5001 Shipped 300: as written East, as of the reference point West
	//   order 5002 Pending 300: as written North, as of the reference point North
	// every version of every order, without a reference point: 850 (double counts 5001)
}

func ExampleSnapshot() {
	db := openCustomers()
	defer db.Close()
	for v, err := range query.Snapshot(db, "customers", query.AsOf{Valid: day("2021-06-15")}, query.KeyRange{}, query.SnapshotOptions{}) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(v.Key, v.Attrs["region"], date(v.ValidFrom), date(v.ValidTo))
	}
	// Output:
	// 101 East 2020-01-01 2022-03-01
	// 102 North 2021-05-01 +inf
}

// Pages resume exactly after their last row, reading the transaction time the
// first page pinned, whatever commits in between.
func ExampleHistoryPage() {
	db := openCustomers()
	defer db.Close()
	opts := query.HistoryOptions{Limit: 2}
	for {
		page, err := query.HistoryPage(db, "customers", query.KeyRange{}, store.NegInfinity, store.Infinity, opts)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("page:")
		for _, v := range page.Rows {
			fmt.Println(" ", v.Key, v.Attrs["region"], date(v.ValidFrom), date(v.ValidTo))
		}
		if page.Next == "" {
			break
		}
		opts.Cursor = page.Next
		_, err = txn.Update(db, func(tx *txn.Tx) error { // not seen by the next page
			return tx.Delete("customers", store.Key{102}, store.NegInfinity, store.Infinity)
		})
		if err != nil {
			log.Fatal(err)
		}
	}
	// Output:
	// page:
	//   101 East 2020-01-01 2022-03-01
	//   101 West 2022-03-01 +inf
	// page:
	//   102 North 2021-05-01 +inf
}

// A correction of the past retires records and asserts new ones; the audit
// trail keeps both, with the transactions that asserted and retired them.
func ExampleAudit() {
	db := openCustomers()
	defer db.Close()
	loaded := db.LastTx()
	_, err := txn.Update(db, func(tx *txn.Tx) error { // Alice really moved on 2022-02-01
		_, err := tx.Upsert("customers", store.Key{101}, store.Attrs{"name": "Alice Smith", "region": "West"}, day("2022-02-01"))
		return err
	})
	if err != nil {
		log.Fatal(err)
	}
	when := func(tx int64) string {
		switch tx {
		case loaded:
			return "load"
		case store.Infinity:
			return "now"
		}
		return "fix"
	}
	for v, err := range query.Audit(db, "customers", store.Key{101}, query.AuditOptions{}) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%-4s .. %-4s sk %d %v %s .. %s\n", when(v.TxFrom), when(v.TxTo), v.SK, v.Attrs["region"], date(v.ValidFrom), date(v.ValidTo))
	}
	// Output:
	// load .. fix  sk 1 East 2020-01-01 .. 2022-03-01
	// load .. fix  sk 2 West 2022-03-01 .. +inf
	// fix  .. now  sk 1 East 2020-01-01 .. 2022-02-01
	// fix  .. now  sk 2 West 2022-02-01 .. +inf
}

// Facts resolved at load time store surrogate keys. After a correction, the
// change feed since the load names the records that changed; only the facts
// whose key and valid time fall in one of them need resolving again.
func ExampleChanges() {
	db := openCustomers()
	defer db.Close()
	alice, bob := int64(101), int64(102)
	facts := []query.Fact{
		{Key: store.Key{alice}, At: day("2021-06-10")},
		{Key: store.Key{alice}, At: day("2022-02-15")},
		{Key: store.Key{bob}, At: day("2022-07-22")},
	}
	resolved, err := query.Resolve(db, "customers", facts, query.ResolveOptions{})
	if err != nil {
		log.Fatal(err)
	}
	loaded := db.LastTx()

	_, err = txn.Update(db, func(tx *txn.Tx) error { // Alice really moved on 2022-02-01
		_, err := tx.Upsert("customers", store.Key{101}, store.Attrs{"name": "Alice Smith", "region": "West"}, day("2022-02-01"))
		return err
	})
	if err != nil {
		log.Fatal(err)
	}

	var stale []int
	for c, err := range query.Changes(db, "customers", loaded, query.Latest, "", query.ChangesOptions{}) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(c.Op, c.Version.Key, c.Version.Attrs["region"], date(c.Version.ValidFrom), date(c.Version.ValidTo))
		for i, f := range facts {
			if f.Key[0] == c.Version.Key[0] && c.Version.Covers(f.At) && !contains(stale, i) {
				stale = append(stale, i)
			}
		}
	}
	again := make([]query.Fact, len(stale))
	for j, i := range stale {
		again[j] = facts[i]
	}
	fresh, err := query.Resolve(db, "customers", again, query.ResolveOptions{})
	if err != nil {
		log.Fatal(err)
	}
	for j, i := range stale {
		fmt.Printf("fact %d: sk %d -> %d\n", i, resolved[i].SK, fresh[j].SK)
	}
	// Output:
	// retired 101 East 2020-01-01 2022-03-01
	// retired 101 West 2022-03-01 +inf
	// asserted 101 East 2020-01-01 2022-02-01
	// asserted 101 West 2022-02-01 +inf
	// fact 0: sk 1 -> 1
	// fact 1: sk 1 -> 2
}

func contains(list []int, x int) bool {
	for _, y := range list {
		if y == x {
			return true
		}
	}
	return false
}

func ExampleGetBySK() {
	db := openCustomers()
	defer db.Close()
	res, err := query.Resolve(db, "customers", []query.Fact{{Key: store.Key{101}, At: day("2023-01-12")}}, query.ResolveOptions{})
	if err != nil {
		log.Fatal(err)
	}
	v, err := query.GetBySK(db, "customers", res[0].SK, query.Latest, query.GetOptions{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(v.SK, v.Key, v.Attrs["region"], date(v.ValidFrom))
	// Output:
	// 2 101 West 2022-03-01
}

func ExampleGaps() {
	db := openCustomers()
	defer db.Close()
	_, err := txn.Update(db, func(tx *txn.Tx) error { // a load that lost a month of Alice
		return tx.Delete("customers", store.Key{101}, day("2021-01-01"), day("2021-02-01"))
	})
	if err != nil {
		log.Fatal(err)
	}
	opts := query.GapOptions{CheckStart: true, StartsAfter: day("2021-01-01")}
	for g, err := range query.Gaps(db, "customers", opts) {
		if err != nil {
			log.Fatal(err)
		}
		for _, p := range g.Gaps {
			fmt.Println(g.Key, "gap", date(p.From), date(p.To))
		}
		if g.LateStart {
			fmt.Println(g.Key, "starts", date(g.First))
		}
	}
	// Output:
	// 101 gap 2021-01-01 2021-02-01
	// 102 starts 2021-05-01
}

// Facts come in any order and keep it; a miss policy says what a fact that no
// version covers gets. txn.ResolveInferred, which writes, creates a placeholder
// member for an unknown key (customer 103 below), which real data takes over
// later.
func ExampleResolve() {
	db := openCustomers()
	defer db.Close()
	facts := []query.Fact{
		{Key: store.Key{101}, At: day("2023-01-12")},
		{Key: store.Key{102}, At: day("2021-01-01")}, // before Bob's first version
		{Key: store.Key{101}, At: day("2021-06-10")},
		{Key: store.Key{103}, At: day("2022-07-22")}, // unknown customer
	}
	for _, policy := range []string{"null", "default", "inferred"} {
		var res []query.Resolution
		var err error
		switch policy {
		case "null":
			res, err = query.Resolve(db, "customers", facts, query.ResolveOptions{Miss: query.MissNull})
		case "default":
			res, err = query.Resolve(db, "customers", facts, query.ResolveOptions{Miss: query.MissDefault, Default: 999})
		case "inferred":
			res, err = txn.ResolveInferred(db, "customers", facts, query.ResolveOptions{Miss: query.MissNull})
		}
		if err != nil {
			log.Fatal(err)
		}
		var out []string
		for _, r := range res {
			switch {
			case r.Inferred:
				out = append(out, fmt.Sprintf("%d (inferred)", r.SK))
			case r.Found():
				out = append(out, fmt.Sprint(r.SK))
			default:
				out = append(out, fmt.Sprintf("%d (%v)", r.SK, r.Reason))
			}
		}
		fmt.Println(strings.Join(out, ", "))
	}
	_, err := query.Resolve(db, "customers", facts, query.ResolveOptions{Miss: query.MissError})
	fmt.Println("MissError fails on the first miss:", errors.Is(err, query.ErrBeforeFirst))
	// Output:
	// 2, 0 (before the first version), 1, 0 (unknown key)
	// 2, 999 (before the first version), 1, 999 (unknown key)
	// 2, 0 (before the first version), 1, 4 (inferred)
	// MissError fails on the first miss: true
}

// A projection decodes only the attributes it names: here only each
// customer's region, every other attribute stepped over in the stored record.
// A name no version holds ("segment") is simply absent.
func ExampleSnapshot_project() {
	db := openCustomers()
	defer db.Close()
	at := query.AsOf{Valid: day("2023-01-01")}
	for v, err := range query.Snapshot(db, "customers", at, query.KeyRange{},
		query.SnapshotOptions{Project: []string{"region", "segment"}}) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(v.Key, v.Attrs)
	}
	// Output:
	// 101 map[region:West]
	// 102 map[region:North]
}

// Resolve with Attrs and a projection returns each fact's version with only
// the projected attributes.
func ExampleResolveOptions_project() {
	db := openCustomers()
	defer db.Close()
	facts := []query.Fact{{Key: store.Key{101}, At: day("2021-06-01")}, {Key: store.Key{101}, At: day("2023-06-01")}}
	res, err := query.Resolve(db, "customers", facts, query.ResolveOptions{Attrs: true, Project: []string{"region"}})
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range res {
		fmt.Println(r.Index, r.SK, r.Attrs)
	}
	// Output:
	// 0 1 map[region:East]
	// 1 2 map[region:West]
}

// HistoryOptions.Project reads a key's history with only some attributes.
func ExampleHistoryOptions_project() {
	db := openCustomers()
	defer db.Close()
	for v, err := range query.History(db, "customers", store.Key{101}, store.NegInfinity, store.Infinity,
		query.HistoryOptions{Project: []string{"region"}}) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(date(v.ValidFrom), date(v.ValidTo), v.Attrs)
	}
	// Output:
	// 2020-01-01 2022-03-01 map[region:East]
	// 2022-03-01 +inf map[region:West]
}

// Get with a projection reads one version and decodes only the named
// attributes; a name the table never stored is absent.
func ExampleGet_project() {
	db := openCustomers()
	defer db.Close()
	v, err := query.Get(db, "customers", store.Key{101}, query.AsOf{Valid: day("2021-06-01")},
		query.GetOptions{Project: []string{"region", "segment"}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(v.SK, v.Attrs)
	// Output:
	// 1 map[region:East]
}

// Audit with a projection lists every record of a key with only the
// named attributes.
func ExampleAudit_project() {
	db := openCustomers()
	defer db.Close()
	for v, err := range query.Audit(db, "customers", store.Key{101}, query.AuditOptions{Project: []string{"region"}}) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(v.SK, date(v.ValidFrom), date(v.ValidTo), v.Attrs)
	}
	// Output:
	// 1 2020-01-01 2022-03-01 map[region:East]
	// 2 2022-03-01 +inf map[region:West]
}

// Changes with a projection is a change feed that decodes only the named
// attributes of each changed record.
func ExampleChanges_project() {
	db := openCustomers()
	defer db.Close()
	for c, err := range query.Changes(db, "customers", 0, query.Latest, "", query.ChangesOptions{Project: []string{"name"}}) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(c.Op, c.Version.Key, c.Version.SK, c.Version.Attrs)
	}
	// Output:
	// asserted 101 1 map[name:Alice Smith]
	// asserted 101 2 map[name:Alice Smith]
	// asserted 102 3 map[name:Bob Johnson]
}
