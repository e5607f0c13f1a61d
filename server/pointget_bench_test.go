package server

import (
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/bitempo/bitempo/internal/cli"
	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
)

// BenchmarkPointGet prices one point get four ways on the same store, with
// the server in process on loopback: the library's query.Get, the JSON API
// (client and server), the tool's get command in process (cli.RunShared, what
// the server runs), and the tool's protocol (a client sending the command line,
// the server running it). Allocations per get (-benchmem) do not depend on the
// machine's load; the times do.
func BenchmarkPointGet(b *testing.B) {
	srv, db := serveStore(b, filepath.Join(b.TempDir(), "s.db"), Options{Name: "s.db"})
	if _, code := mustRun(db, "create", "customers", "--key", "id", "--axis", "date"); code != 0 {
		b.Fatal("create")
	}
	if _, e, code := runRemote(b, srv.URL, []string{"load", "customers", "x.csv", "--at", "at"}, 2, "id,city,at\nc1,Oslo,2024-01-01\nc1,Bergen,2024-03-11\n"); code != 0 {
		b.Fatal(e)
	}
	args := []string{"get", "customers", "c1", "--valid", "2024-03-20"}
	b.Run("query.Get", func(b *testing.B) {
		for b.Loop() {
			if _, err := query.Get(db, "customers", store.Key{"c1"}, query.AsOf{Valid: day("2024-03-20")}, query.GetOptions{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("JSON API", func(b *testing.B) {
		c := &http.Client{}
		for b.Loop() {
			resp, err := c.Get(srv.URL + "/v1/tables/customers/get?key=c1&valid=2024-03-20")
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				b.Fatal(resp.Status)
			}
		}
	})
	b.Run("tool in process", func(b *testing.B) {
		for b.Loop() {
			if _, e, code := runLocal(db, args); code != 0 {
				b.Fatal(e)
			}
		}
	})
	b.Run("tool protocol", func(b *testing.B) {
		for b.Loop() {
			if _, e, code := runRemote(b, srv.URL, args, 0, ""); code != 0 {
				b.Fatal(e)
			}
		}
	})
	b.Run("tool's file arguments", func(b *testing.B) {
		for b.Loop() {
			if files, _ := cli.FileArgs(args, false); len(files) != 0 {
				b.Fatal(fmt.Sprint(files))
			}
		}
	})
}
