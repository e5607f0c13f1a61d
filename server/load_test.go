package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bitempo/bitempo/internal/cli"
	"github.com/bitempo/bitempo/internal/testlong"
	"github.com/bitempo/bitempo/internal/wire"
	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
)

// runLocal runs a command line in process on db, without HTTP: the answer
// the server's must equal.
func runLocal(db *store.DB, args []string) (string, string, int) {
	var o, e bytes.Buffer
	code := cli.RunShared(args, cli.Shared{DB: db, Name: "s.db", Stdout: &o, Stderr: &e})
	return o.String(), e.String(), code
}

// runRemote runs a command line through the server, uploading file (when
// not empty) as the argument at index upload.
func runRemote(t testing.TB, url string, args []string, upload int, file string) (string, string, int) {
	h := &wire.Header{Version: wire.Version, Args: args}
	if file != "" {
		h.Uploads = []wire.Upload{{Arg: upload, Size: int64(len(file))}}
	}
	var b bytes.Buffer
	_ = wire.WriteHeader(&b, h)
	b.WriteString(file)
	resp, err := http.Post(url+wire.Path, wire.ContentType, &b)
	if err != nil {
		t.Error(err)
		return "", "", -1
	}
	defer resp.Body.Close()
	fr := wire.NewReader(resp.Body)
	var o, e strings.Builder
	for {
		kind, p, err := fr.Next()
		if err != nil {
			t.Errorf("%v: answer cut off: %v", args, err)
			return "", "", -1
		}
		switch kind {
		case wire.KindStdout:
			o.Write(p)
		case wire.KindStderr:
			e.Write(p)
		case wire.KindExit:
			var x wire.Exit
			_ = json.Unmarshal(p, &x)
			return o.String(), e.String(), x.Status
		}
	}
}

// TestServerLoad runs 8 clients against one server for a bounded time, each
// mixing point reads (the JSON API and the tool's get), scans, resolves of a
// fact file and loads of new keys; every answer read at a pinned transaction
// time must equal the same command run in process on the store, and every
// load must commit. It logs p50 and p99 per kind, and a point read's cost in
// process for comparison.
func TestServerLoad(t *testing.T) {
	testlong.Skip(t, "8 clients for 10 seconds")
	srv, db := serveStore(t, filepath.Join(t.TempDir(), "s.db"), Options{Name: "s.db"})
	if _, code := mustRun(db, "create", "customers", "--key", "id", "--axis", "date"); code != 0 {
		t.Fatal("create")
	}
	var seed strings.Builder
	seed.WriteString("id,city,tier,at\n")
	for i := range 2000 {
		fmt.Fprintf(&seed, "c%d,city%d,tier%d,2024-01-%02d\n", i, i%50, i%3, 1+i%28)
		fmt.Fprintf(&seed, "c%d,moved%d,tier%d,2024-03-%02d\n", i, i%40, i%3, 1+i%28)
	}
	if _, _, code := runRemote(t, srv.URL, []string{"load", "customers", "seed.csv", "--at", "at"}, 2, seed.String()); code != 0 {
		t.Fatal("seed load")
	}
	var facts strings.Builder
	facts.WriteString("order,id,on\n")
	for i := range 500 {
		fmt.Fprintf(&facts, "o%d,c%d,2024-0%d-15\n", i, (i*7)%2000, 1+i%4)
	}
	factsPath := filepath.Join(t.TempDir(), "facts.csv")
	if err := os.WriteFile(factsPath, []byte(facts.String()), 0o644); err != nil {
		t.Fatal(err)
	}

	duration := 10 * time.Second
	var mu sync.Mutex
	lat := map[string][]time.Duration{}
	record := func(kind string, d time.Duration) {
		mu.Lock()
		lat[kind] = append(lat[kind], d)
		mu.Unlock()
	}
	stopAt := time.Now().Add(duration)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; time.Now().Before(stopAt) && !t.Failed(); n++ {
				tx := cli.FormatTx(db.LastTx())
				key := fmt.Sprintf("c%d", (w*977+n*31)%2000)
				switch n % 6 {
				case 0, 1: // point read, JSON API
					start := time.Now()
					resp, err := http.Get(srv.URL + "/v1/tables/customers/get?key=" + key + "&valid=2024-03-20&tx=" + tx)
					if err != nil {
						t.Error(err)
						return
					}
					var got versionJSON
					_ = json.NewDecoder(resp.Body).Decode(&got)
					resp.Body.Close()
					record("get (JSON API)", time.Since(start))
					txv, _ := cli.ParseTx(tx)
					v, err := query.Get(db, "customers", store.Key{key}, query.AsOf{Valid: day("2024-03-20"), Tx: txv}, query.GetOptions{})
					if err != nil || got.SK != v.SK || fmt.Sprint(got.Attrs["city"]) != fmt.Sprint(v.Attrs["city"]) {
						t.Errorf("get %s at tx %s: server %+v, in process %+v %v", key, tx, got, v, err)
					}
				case 2: // point read, the tool's get
					args := []string{"get", "customers", key, "--valid", "2024-03-20", "--tx", tx}
					start := time.Now()
					o, e, code := runRemote(t, srv.URL, args, 0, "")
					record("get (tool)", time.Since(start))
					compare(t, args, o, e, code, db)
				case 3: // scan
					args := []string{"scan", "customers", "--valid", "2024-02-10", "--tx", tx, "--format", "json"}
					start := time.Now()
					o, e, code := runRemote(t, srv.URL, args, 0, "")
					record("scan 2000 keys", time.Since(start))
					compare(t, args, o, e, code, db)
				case 4: // resolve
					args := []string{"resolve", "customers", "--facts", "facts.csv", "--key", "id", "--at", "on", "--tx", tx, "--miss", "null"}
					start := time.Now()
					o, e, code := runRemote(t, srv.URL, args, 3, facts.String())
					record("resolve 500 facts", time.Since(start))
					local := slices.Clone(args)
					local[3] = factsPath
					lo, le, lcode := runLocal(db, local)
					if o != lo || e != le || code != lcode {
						t.Errorf("resolve differs: server exit %d %q / %q; in process exit %d %q / %q", code, trim(o), e, lcode, trim(lo), le)
					}
				case 5: // load of new keys
					file := fmt.Sprintf("id,city,tier,at\nw%d-%d,Lima,gold,2024-05-01\nw%d-%d,Quito,gold,2024-06-01\n", w, n, w, n)
					start := time.Now()
					_, e, code := runRemote(t, srv.URL, []string{"load", "customers", "new.csv", "--at", "at"}, 2, file)
					record("load 2 rows", time.Since(start))
					if code != 0 {
						t.Errorf("load: exit %d %q", code, e)
					}
					if _, err := query.Get(db, "customers", store.Key{fmt.Sprintf("w%d-%d", w, n)}, query.AsOf{Valid: day("2024-05-02")}, query.GetOptions{}); err != nil {
						t.Errorf("after the load: %v", err)
					}
				}
			}
		}()
	}
	wg.Wait()
	kinds := make([]string, 0, len(lat))
	for k := range lat {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	for _, k := range kinds {
		ds := lat[k]
		slices.Sort(ds)
		t.Logf("%-18s n=%5d p50=%v p99=%v", k, len(ds), ds[len(ds)/2], ds[len(ds)*99/100])
	}
	// Point reads one at a time, through the server and in process, for scale.
	var alone, aloneTool []time.Duration
	for i := range 500 {
		start := time.Now()
		resp, err := http.Get(srv.URL + fmt.Sprintf("/v1/tables/customers/get?key=c%d&valid=2024-03-20", i))
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		alone = append(alone, time.Since(start))
		if i%5 == 0 {
			start = time.Now()
			runRemote(t, srv.URL, []string{"get", "customers", fmt.Sprintf("c%d", i), "--valid", "2024-03-20"}, 0, "")
			aloneTool = append(aloneTool, time.Since(start))
		}
	}
	for _, l := range []struct {
		kind string
		ds   []time.Duration
	}{{"get alone (JSON)", alone}, {"get alone (tool)", aloneTool}} {
		slices.Sort(l.ds)
		t.Logf("%-18s n=%5d p50=%v p99=%v", l.kind, len(l.ds), l.ds[len(l.ds)/2], l.ds[len(l.ds)*99/100])
	}
	var inproc []time.Duration
	for i := range 2000 {
		start := time.Now()
		if _, err := query.Get(db, "customers", store.Key{fmt.Sprintf("c%d", i)}, query.AsOf{Valid: day("2024-03-20")}, query.GetOptions{}); err != nil {
			t.Fatal(err)
		}
		inproc = append(inproc, time.Since(start))
	}
	slices.Sort(inproc)
	t.Logf("%-18s n=%5d p50=%v p99=%v", "get (in process)", len(inproc), inproc[len(inproc)/2], inproc[len(inproc)*99/100])
}

// compare runs args in process and requires the server's answer to equal it.
func compare(t *testing.T, args []string, o, e string, code int, db *store.DB) {
	lo, le, lcode := runLocal(db, args)
	if o != lo || e != le || code != lcode {
		t.Errorf("%v differs: server exit %d %q / %q; in process exit %d %q / %q", args, code, trim(o), e, lcode, trim(lo), le)
	}
}

func mustRun(db *store.DB, args ...string) (string, int) {
	o, _, code := runLocal(db, args)
	return o, code
}

func trim(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}
