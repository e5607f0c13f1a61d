package txn_test

import (
	"errors"
	"fmt"
	"log"

	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// A table declares a money column as decimal(10,2): a price given as a float
// is stored exactly with its scale, a value that does not fit is refused with
// nothing written, and a column added later is a transaction of its own.
func ExampleTx_AddColumn() {
	db, err := store.Open("", store.Options{InMemory: true})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	cols, err := store.ParseColumns("price:decimal(10,2) not null,category:string")
	if err != nil {
		log.Fatal(err)
	}
	_, err = db.CreateTable(store.TableDef{
		Name: "products", Key: []store.KeyColumn{{Name: "sku", Type: store.String}},
		Axis: store.AxisDate, Columns: cols,
	})
	if err != nil {
		log.Fatal(err)
	}
	_, err = txn.Update(db, func(tx *txn.Tx) error {
		_, err := tx.Upsert("products", store.Key{"SKU-1"}, store.Attrs{"price": 232.1, "category": "tools"}, day("2024-01-01"))
		return err
	})
	if err != nil {
		log.Fatal(err)
	}
	_, err = txn.Update(db, func(tx *txn.Tx) error {
		_, err := tx.Upsert("products", store.Key{"SKU-2"}, store.Attrs{"price": "n/a"}, day("2024-01-01"))
		return err
	})
	fmt.Println(errors.Is(err, store.ErrSchema))
	fmt.Println(err)

	_, err = txn.Update(db, func(tx *txn.Tx) error {
		return tx.AddColumn("products", store.Column{Name: "colour", Type: store.ColumnType{Kind: store.TypeString}, Nullable: true})
	})
	if err != nil {
		log.Fatal(err)
	}
	v, err := query.Get(db, "products", store.Key{"SKU-1"}, query.AsOf{Valid: day("2024-02-01")}, query.GetOptions{})
	if err != nil {
		log.Fatal(err)
	}
	products, _ := db.Table("products")
	fmt.Println(v.Attrs["price"], store.FormatColumns(products.Columns))
	// Output:
	// true
	// bitempo: table "products" column "price" (decimal(10,2)): value "n/a" (string): does not fit
	// 232.10 price:decimal(10,2) not null,category:string,colour:string
}
