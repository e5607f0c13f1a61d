package server_test

import (
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/bitempo/bitempo/server"
	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// A service that embeds bitempo mounts the server's handler on its own mux:
// the tool then runs every command on the service's store (bitempo get
// customers c1 --db http://HOST:PORT/bitempo), and programs read it as JSON.
func ExampleHandler() {
	db, err := store.Open("", store.Options{InMemory: true})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	if _, err := db.CreateTable(store.TableDef{Name: "customers", Key: []store.KeyColumn{{Name: "id", Type: store.String}}, Axis: store.AxisDate}); err != nil {
		log.Fatal(err)
	}
	day := time.Date(2024, 3, 11, 0, 0, 0, 0, time.UTC).UnixMicro()
	if _, err := txn.Update(db, func(tx *txn.Tx) error {
		_, err := tx.Upsert("customers", store.Key{"c1"}, store.Attrs{"city": "Bergen"}, day)
		return err
	}); err != nil {
		log.Fatal(err)
	}

	mux := http.NewServeMux()
	mux.Handle("/bitempo/", http.StripPrefix("/bitempo", server.Handler(db, server.Options{BasePath: "/bitempo"})))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	resp, err := http.Get(srv.URL + "/bitempo/v1/tables/customers/get?key=c1&valid=2024-03-12")
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode, string(body[:len(`{"key":["c1"],"valid_from":"2024-03-11","valid_to":null`)]))

	resp, err = http.Get(srv.URL + "/bitempo/v1/tables/customers/get?key=c2&valid=2024-03-12")
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ = io.ReadAll(resp.Body)
	fmt.Print(resp.StatusCode, " ", string(body))
	// Output:
	// 200 {"key":["c1"],"valid_from":"2024-03-11","valid_to":null
	// 404 {"error":"bitempo: customers c2 at valid 2024-03-12 tx latest: unknown key","code":"ErrUnknownKey"}
}
