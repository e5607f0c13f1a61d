package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bitempo/bitempo/internal/cli"
	"github.com/bitempo/bitempo/internal/wire"
	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// day is midnight UTC of a YYYY-MM-DD date, in microseconds.
func day(s string) int64 {
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		panic(err)
	}
	return t.UnixMicro()
}

// customers serves a store holding customers c1 (Oslo from 2024-01-01, Bergen
// from 2024-03-11) and c2 (Rome from 2024-02-01), in periods table customers.
func customers(t *testing.T, opts Options) (*httptest.Server, *store.DB) {
	t.Helper()
	srv, db := serveStore(t, filepath.Join(t.TempDir(), "s.db"), opts)
	if _, err := db.CreateTable(store.TableDef{Name: "customers", Key: []store.KeyColumn{{Name: "id", Type: store.String}}, Axis: store.AxisDate}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ key, city, at string }{{"c1", "Oslo", "2024-01-01"}, {"c2", "Rome", "2024-02-01"}, {"c1", "Bergen", "2024-03-11"}} {
		if _, err := txn.Update(db, func(tx *txn.Tx) error {
			_, err := tx.Upsert("customers", store.Key{c.key}, store.Attrs{"city": c.city}, day(c.at))
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	return srv, db
}

// getJSON requests url with token (none when empty) and decodes the answer.
func getJSON(t *testing.T, url, token string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("GET %s: %d, not JSON: %q", url, resp.StatusCode, b)
	}
	return resp.StatusCode, m
}

func TestJSONAPI(t *testing.T) {
	srv, _ := customers(t, Options{})
	u := srv.URL + "/v1/tables/customers"
	status, v := getJSON(t, u+"/get?key=c1&valid=2024-03-08", "")
	if status != 200 || v["attrs"].(map[string]any)["city"] != "Oslo" || v["valid_from"] != "2024-01-01" || v["valid_to"] != "2024-03-11" {
		t.Fatalf("get: %d %v", status, v)
	}
	status, v = getJSON(t, u+"/get?key=c1&valid=2024-03-12", "")
	if status != 200 || v["attrs"].(map[string]any)["city"] != "Bergen" || v["valid_to"] != nil {
		t.Fatalf("get after the move: %d %v", status, v)
	}
	status, v = getJSON(t, srv.URL+"/v1/tables", "")
	if tables := v["tables"].([]any); status != 200 || len(tables) != 1 || tables[0].(map[string]any)["name"] != "customers" {
		t.Fatalf("tables: %d %v", status, v)
	}
	status, v = getJSON(t, u, "")
	if status != 200 || v["axis"] != "date" || v["kind"] != "periods" {
		t.Fatalf("describe: %d %v", status, v)
	}
	status, v = getJSON(t, srv.URL+"/v1/stats", "")
	if status != 200 || v["tables"] != float64(1) || v["last_tx"] == nil {
		t.Fatalf("stats: %d %v", status, v)
	}
	status, v = getJSON(t, u+"/keys?limit=1", "")
	if status != 200 || len(v["keys"].([]any)) != 1 || v["next"].([]any)[0] != "c1" {
		t.Fatalf("keys: %d %v", status, v)
	}
	status, v = getJSON(t, u+"/keys?after=c1", "")
	if status != 200 || len(v["keys"].([]any)) != 1 || v["keys"].([]any)[0].([]any)[0] != "c2" || v["next"] != nil {
		t.Fatalf("keys after c1: %d %v", status, v)
	}

	resp, err := http.Get(u + "/history?key=c1")
	if err != nil {
		t.Fatal(err)
	}
	var cities []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		var line versionJSON
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("history line %q: %v", sc.Text(), err)
		}
		cities = append(cities, line.Attrs["city"].(string))
	}
	resp.Body.Close()
	if resp.Header.Get("Content-Type") != "application/x-ndjson" || strings.Join(cities, ",") != "Oslo,Bergen" {
		t.Fatalf("history: %s %v", resp.Header.Get("Content-Type"), cities)
	}

	resp, err = http.Get(u + "/scan?valid=2024-03-12")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if lines := strings.Split(strings.TrimSpace(string(b)), "\n"); len(lines) != 2 || !strings.Contains(lines[0], "Bergen") || !strings.Contains(lines[1], "Rome") {
		t.Fatalf("scan: %s", b)
	}
}

func TestJSONErrors(t *testing.T) {
	srv, _ := customers(t, Options{})
	u := srv.URL + "/v1/tables/customers"
	for _, c := range []struct {
		path   string
		status int
		code   string
	}{
		{"/get?key=c9&valid=2024-03-08", 404, "ErrUnknownKey"},
		{"/get?key=c1&valid=2023-03-08", 404, "ErrBeforeFirst"},
		{"/get?key=c1&valid=not-a-date", 400, "ErrBadRequest"},
		{"/get?key=c1&tx=soon", 400, "ErrBadRequest"},
		{"/get?key=c1&key=c2", 400, "ErrBadRequest"},
		{"/get", 400, "ErrBadRequest"},
		{"/keys?limit=0", 400, "ErrBadRequest"},
		{"/history?key=c1&tx=soon", 400, "ErrBadRequest"},
		{"/../../nosuch/get?key=c1", 404, "ErrNoRoute"},
	} {
		status, v := getJSON(t, u+c.path, "")
		if status != c.status || v["code"] != c.code || v["error"] == "" {
			t.Errorf("GET %s: %d %v, want %d %s", c.path, status, v, c.status, c.code)
		}
	}
	for path, code := range map[string]string{
		"/v1/tables/nosuch/get?key=c1": "ErrUnknownTable",
		"/v1/tables/nosuch":            "ErrUnknownTable",
		"/v1/nothing":                  "ErrNoRoute",
		"/table/nosuch":                "ErrUnknownTable",
	} {
		if status, v := getJSON(t, srv.URL+path, ""); status != 404 || v["code"] != code {
			t.Errorf("GET %s: %d %v, want 404 %s", path, status, v, code)
		}
	}
	resp, err := http.Post(srv.URL+"/v1/tables", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed && resp.StatusCode != http.StatusNotFound {
		t.Errorf("POST /v1/tables: %d", resp.StatusCode)
	}
}

// runBody is a command request's body: the header and what follows it.
func runBody(t *testing.T, h *wire.Header, rest string) io.Reader {
	t.Helper()
	var b bytes.Buffer
	h.Version = wire.Version
	if err := wire.WriteHeader(&b, h); err != nil {
		t.Fatal(err)
	}
	b.WriteString(rest)
	return &b
}

// post sends a command request and returns the status and the answer read
// whole: frames on 200, the JSON error otherwise.
func post(t *testing.T, url, token string, body io.Reader) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+wire.Path, body)
	req.Header.Set("Content-Type", wire.ContentType)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// answer decodes a command's frames into its stdout, stderr and exit status.
func answer(t *testing.T, b []byte) (stdout, stderr string, status int) {
	t.Helper()
	fr := wire.NewReader(bytes.NewReader(b))
	var o, e strings.Builder
	for {
		kind, p, err := fr.Next()
		if err != nil {
			t.Fatalf("answer ends without an exit status: %v (stdout %q, stderr %q)", err, o.String(), e.String())
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

func TestAuthTokens(t *testing.T) {
	const reader, writer = "read-token-0123456789", "write-token-0123456789"
	srv, db := customers(t, Options{Tokens: []Token{{reader, Read}, {writer, Write}}})
	u := srv.URL + "/v1/tables/customers/get?key=c1&valid=2024-03-08"
	for _, tok := range []string{"", "wrong-token-0123456789"} {
		if status, v := getJSON(t, u, tok); status != 401 || v["code"] != "ErrUnauthorized" {
			t.Errorf("token %q: %d %v", tok, status, v)
		}
	}
	for _, tok := range []string{reader, writer} {
		if status, _ := getJSON(t, u, tok); status != 200 {
			t.Errorf("token %q: %d", tok, status)
		}
	}
	put := &wire.Header{Args: []string{"put", "customers", "c3", "--from", "2024-01-01", "--set", "city=Lima"}}
	status, b := post(t, srv.URL, reader, runBody(t, put, ""))
	if status != 200 {
		t.Fatalf("put with the read token: %d %s", status, b)
	}
	if _, stderr, code := answer(t, b); code != 1 || !strings.Contains(stderr, "read-only") {
		t.Fatalf("put with the read token: exit %d, stderr %q", code, stderr)
	}
	if _, err := query.Get(db, "customers", store.Key{"c3"}, query.AsOf{Valid: day("2024-02-01")}, query.GetOptions{}); !errors.Is(err, query.ErrUnknownKey) {
		t.Fatalf("the read token's put wrote: %v", err)
	}
	get := &wire.Header{Args: []string{"get", "customers", "c1", "--valid", "2024-03-08"}}
	if _, stdout, _ := func() (int, string, string) {
		status, b := post(t, srv.URL, reader, runBody(t, get, ""))
		o, e, _ := answer(t, b)
		return status, o, e
	}(); !strings.Contains(stdout, "Oslo") {
		t.Fatalf("get with the read token: %q", stdout)
	}
	status, b = post(t, srv.URL, writer, runBody(t, put, ""))
	if _, stderr, code := answer(t, b); status != 200 || code != 0 {
		t.Fatalf("put with the write token: %d exit %d %q", status, code, stderr)
	}
	if v, err := query.Get(db, "customers", store.Key{"c3"}, query.AsOf{Valid: day("2024-02-01")}, query.GetOptions{}); err != nil || v.Attrs["city"] != "Lima" {
		t.Fatalf("the write token's put: %v %v", v, err)
	}
	if status, _ := post(t, srv.URL, "", runBody(t, get, "")); status != 401 {
		t.Fatalf("command without a token: %d", status)
	}
}

func TestBodyLimitAndMalformedRequests(t *testing.T) {
	srv, db := customers(t, Options{MaxBody: 4 << 10})
	dir := t.TempDir()
	_ = dir
	big := strings.Repeat("c9,Lima,2024-05-01\n", 1000)
	load := &wire.Header{Args: []string{"load", "customers", "big.csv", "--at", "at"},
		Uploads: []wire.Upload{{Arg: 2, Size: int64(len("id,city,at\n") + len(big))}}}
	status, b := post(t, srv.URL, "", runBody(t, load, "id,city,at\n"+big))
	if status != http.StatusRequestEntityTooLarge || !bytes.Contains(b, []byte(`"ErrTooLarge"`)) {
		t.Fatalf("a body over the limit: %d %s", status, b)
	}
	for name, body := range map[string]io.Reader{
		"no header":       strings.NewReader(""),
		"bad JSON":        strings.NewReader("\x00\x00\x00\x05{nope"),
		"huge header":     strings.NewReader("\x7f\x00\x00\x00"),
		"wrong version":   func() io.Reader { var b bytes.Buffer; _ = wire.WriteHeader(&b, &wire.Header{Version: 99}); return &b }(),
		"upload not file": runBody(t, &wire.Header{Args: []string{"get", "customers", "c1"}, Uploads: []wire.Upload{{Arg: 1, Size: 1}}}, "x"),
		"upload escapes":  runBody(t, &wire.Header{Args: []string{"import", "dump"}, Uploads: []wire.Upload{{Arg: 1, Name: "../../x", Size: 1}}}, "x"),
		"short upload":    runBody(t, &wire.Header{Args: []string{"load", "customers", "f.csv", "--at", "at"}, Uploads: []wire.Upload{{Arg: 2, Size: 100}}}, "id"),
	} {
		status, b := post(t, srv.URL, "", body)
		if status != 400 || !bytes.Contains(b, []byte(`"code"`)) {
			t.Errorf("%s: %d %s", name, status, b)
		}
	}
	// The server still serves, and nothing was written.
	status, b = post(t, srv.URL, "", runBody(t, &wire.Header{Args: []string{"get", "customers", "c9"}}, ""))
	if _, stderr, code := answer(t, b); status != 200 || code != 1 || !strings.Contains(stderr, "unknown key") {
		t.Fatalf("after bad requests: %d exit %d %q", status, code, stderr)
	}
	if db.LastTx() == 0 {
		t.Fatal("no transaction")
	}
}

func TestBadFactFileWritesNothing(t *testing.T) {
	srv, db := customers(t, Options{})
	before := db.LastTx()
	file := "id,city,at\nc7,Lima,2024-05-01\nc8,Quito,someday\n"
	load := &wire.Header{Args: []string{"load", "customers", "rows.csv", "--at", "at"}, Uploads: []wire.Upload{{Arg: 2, Size: int64(len(file))}}}
	status, b := post(t, srv.URL, "", runBody(t, load, file))
	_, stderr, code := answer(t, b)
	if status != 200 || code != 1 || !strings.Contains(stderr, "rows.csv line 3") || strings.Contains(stderr, "bitempo-run-") {
		t.Fatalf("bad fact file: %d exit %d %q", status, code, stderr)
	}
	if db.LastTx() != before {
		t.Fatal("a failed load committed")
	}
	for _, k := range []string{"c7", "c8"} {
		if _, err := query.Get(db, "customers", store.Key{k}, query.AsOf{Valid: day("2024-06-01")}, query.GetOptions{}); !errors.Is(err, query.ErrUnknownKey) {
			t.Fatalf("%s: %v", k, err)
		}
	}
	// The server still serves.
	if status, v := getJSON(t, srv.URL+"/v1/tables/customers/get?key=c1&valid=2024-03-08", ""); status != 200 || v["sk"] == nil {
		t.Fatalf("after the bad load: %d %v", status, v)
	}
}

// TestClientDisconnectMidStream cuts a scan's answer off and a load's request
// off and checks that the server keeps serving and wrote nothing.
func TestClientDisconnectMidStream(t *testing.T) {
	srv, db := customers(t, Options{})
	var rows strings.Builder
	rows.WriteString("id,city,at\n")
	for i := range 20000 {
		rows.WriteString("k")
		rows.WriteString(strings.Repeat("x", i%7))
		rows.WriteString(itoa(int64(i)))
		rows.WriteString(",Lima,2024-05-01\n")
	}
	file := rows.String()
	load := &wire.Header{Args: []string{"load", "customers", "rows.csv", "--at", "at"}, Uploads: []wire.Upload{{Arg: 2, Size: int64(len(file))}}}
	if status, b := post(t, srv.URL, "", runBody(t, load, file)); status != 200 {
		t.Fatalf("load: %d %s", status, b)
	}
	before := db.LastTx()

	// A scan whose client reads a little and leaves.
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+wire.Path, runBody(t, &wire.Header{Args: []string{"scan", "customers", "--valid", "2024-06-01"}}, ""))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1024)
	if _, err := io.ReadFull(resp.Body, buf); err != nil {
		t.Fatal(err)
	}
	cancel()
	resp.Body.Close()

	// A load whose client leaves halfway through its upload.
	pr, pw := io.Pipe()
	ctx2, cancel2 := context.WithCancel(context.Background())
	req2, _ := http.NewRequestWithContext(ctx2, http.MethodPost, srv.URL+wire.Path, pr)
	done := make(chan struct{})
	go func() {
		defer close(done)
		resp, err := http.DefaultClient.Do(req2)
		if err == nil {
			resp.Body.Close()
		}
	}()
	other := "id,city,at\nz1,Oslo,2024-07-01\n" + strings.Repeat("z2,Oslo,2024-07-01\n", 1000)
	_ = wire.WriteHeader(pw, &wire.Header{Version: wire.Version, Args: []string{"load", "customers", "z.csv", "--at", "at"}, Uploads: []wire.Upload{{Arg: 2, Size: int64(len(other))}}})
	_, _ = pw.Write([]byte(other[:len(other)/2]))
	cancel2()
	pw.CloseWithError(errors.New("client gone"))
	<-done

	// Still serving, nothing written.
	deadline := time.Now().Add(5 * time.Second)
	for {
		status, v := getJSON(t, srv.URL+"/v1/tables/customers/get?key=z1&valid=2024-08-01", "")
		if status == 404 && v["code"] == "ErrUnknownKey" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the disconnects: %d %v", status, v)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if db.LastTx() != before {
		t.Fatal("a disconnected load committed")
	}
}

// TestCancelledLoadWritesNothing runs a load whose request has ended (its
// client gone): it rolls back, says so, and the server's process lives on.
func TestCancelledLoadWritesNothing(t *testing.T) {
	_, db := customers(t, Options{})
	before := db.LastTx()
	path := filepath.Join(t.TempDir(), "rows.csv")
	var rows strings.Builder
	rows.WriteString("id,city,at\n")
	for i := range 5000 {
		rows.WriteString("n" + itoa(int64(i)) + ",Lima,2024-05-01\n")
	}
	writeFile(t, filepath.Dir(path), "rows.csv", rows.String())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var o, e bytes.Buffer
	code := cli.RunShared([]string{"load", "customers", path, "--at", "at"}, cli.Shared{DB: db, Name: "s.db", Context: ctx, Stdout: &o, Stderr: &e})
	if code != 130 || !strings.Contains(e.String(), "interrupted") {
		t.Fatalf("a load of an ended request: exit %d %q", code, e.String())
	}
	if db.LastTx() != before {
		t.Fatal("the load committed")
	}
	// Stdin too: the copy of stdin ends with the request, not the process.
	code = cli.RunShared([]string{"load", "customers", "-", "--at", "at"}, cli.Shared{DB: db, Name: "s.db", Context: ctx, Stdin: strings.NewReader(rows.String()), Stdout: &o, Stderr: &e})
	if code == 0 || db.LastTx() != before {
		t.Fatalf("a load of stdin of an ended request: exit %d, committed %v", code, db.LastTx() != before)
	}
}

// TestDropAsksThroughTheServer sends drop's answer on stdin, as a client on
// a terminal does.
func TestDropAsksThroughTheServer(t *testing.T) {
	srv, db := customers(t, Options{})
	drop := &wire.Header{Args: []string{"drop", "customers"}, StdinTTY: true, Stdin: true}
	status, b := post(t, srv.URL, "", runBody(t, drop, "customers\n"))
	stdout, stderr, code := answer(t, b)
	if status != 200 || code != 0 || !strings.Contains(stderr, "Type its name to confirm") || !strings.Contains(stdout, "dropped table customers") {
		t.Fatalf("drop: %d exit %d %q %q", status, code, stdout, stderr)
	}
	if _, err := db.Table("customers"); !errors.Is(err, store.ErrUnknownTable) {
		t.Fatalf("after drop: %v", err)
	}
}

// TestPages serves the tables, a table's keys and a key's diagram.
func TestPages(t *testing.T) {
	srv, _ := customers(t, Options{})
	for path, want := range map[string][]string{
		"/":                        {`href="/table/customers"`, "periods"},
		"/table/customers":         {`href="/table/customers/key/c1"`, `href="/table/customers/key/c2"`, "city"},
		"/table/customers/key/c1":  {`<svg xmlns="http://www.w3.org/2000/svg" class="bitemporal"`, `class="record current"`, "city=Bergen", `id="answer"`, `"/v1/tables/customers/get"`},
		"/table/customers/svg/c1":  {`<svg`, "city=Oslo"},
		"/table/customers/key/c9":  {`"ErrUnknownKey"`},
		"/table/customers/key/a/b": {`"ErrBadRequest"`},
	} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for _, w := range want {
			if !strings.Contains(string(b), w) {
				t.Errorf("GET %s (%d) does not hold %q:\n%.600s", path, resp.StatusCode, w, b)
			}
		}
	}
}
