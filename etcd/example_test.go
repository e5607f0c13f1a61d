package etcd_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/bitempo/bitempo/etcd"
	"github.com/bitempo/bitempo/etcd/etcdtest"
	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// A store on etcd is opened with one call and then used exactly like one on
// Pebble. Here the cluster is a single member started inside the example; in
// production Endpoints name the members of a 3- or 5-member cluster.
func ExampleOpen() {
	dir, err := os.MkdirTemp("", "bitempo-example-")
	if err != nil {
		log.Fatal(err)
	}
	c, err := etcdtest.Start(dir, 1, etcdtest.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	db, err := etcd.Open(context.Background(), etcd.Config{
		Endpoints: c.Endpoints(),
		Prefix:    "/bitempo/customers",
	}, store.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	if _, err := db.CreateTable(store.TableDef{
		Name: "customers",
		Key:  []store.KeyColumn{{Name: "id", Type: store.String}},
		Axis: store.AxisInt,
	}); err != nil {
		log.Fatal(err)
	}
	for _, move := range []struct {
		city string
		at   int64
	}{{"Oslo", 1}, {"Bergen", 10}} {
		if _, err := txn.Update(db, func(tx *txn.Tx) error {
			_, err := tx.Upsert("customers", store.Key{"c1"}, store.Attrs{"city": move.city}, move.at)
			return err
		}); err != nil {
			log.Fatal(err)
		}
	}
	for _, at := range []int64{5, 12} {
		v, err := query.Get(db, "customers", store.Key{"c1"}, query.AsOf{Valid: at}, query.GetOptions{})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("at %d: %s\n", at, v.Attrs["city"])
	}
	rep, err := store.Verify(db)
	fmt.Println("verify:", rep.OK(), err)
	// Output:
	// at 5: Oslo
	// at 12: Bergen
	// verify: true <nil>
}
