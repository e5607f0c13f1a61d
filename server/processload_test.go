package server

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/bitempo/bitempo/internal/cli"
	"github.com/bitempo/bitempo/internal/testlong"
	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
)

// This file runs a shared store as its users do: `bitempo serve` is a process
// of its own (the binary TestMain builds), and each client is a process of its
// own, this test binary run again with loadClientEnv set (TestMain hands it to
// runLoadClient). A client process runs many requests, one after another: point
// reads through the JSON API on one kept-alive connection, as a program does,
// and the tool's commands through the tool's own client code (cli.Main with
// --db http://..., its standard streams pointed at files), as many invocations
// of the tool would, without paying a process start for each.

// loadClientEnv carries a client process's loadClientConfig, as JSON.
const loadClientEnv = "BITEMPO_TEST_LOAD_CLIENT"

// loadSecondsEnv sets how long the clients of TestServeUnderLoadSurvivesKill run.
const loadSecondsEnv = "BITEMPO_SERVER_LOAD_SECONDS"

// The kinds of request a client sends.
const (
	kindGetJSON = "get (JSON API)"
	kindGetTool = "get (tool)"
	kindScan    = "scan"
	kindResolve = "resolve"
	kindLoad    = "load"
)

// seedKeys is how many customers the store holds before the clients start;
// loadKeys how many new keys each load writes (two rows each).
const (
	seedKeys = 2000
	loadKeys = 10
)

// loadClientConfig is what a client process is told.
type loadClientConfig struct {
	ID    int
	URL   string
	Dir   string // the client's own directory: its load files and its records
	Facts string // the fact file resolve uploads
	Tx    string // the transaction time its reads are pinned at until it learns a later one
	// Until ends the run; Count, when not zero, ends it after that many requests.
	Until time.Time
	Count int
	Kinds []string // cycled through, one request each
}

// loadRecord is what a client records of one request.
type loadRecord struct {
	Kind  string
	Start int64 // wall clock, Unix nanoseconds
	Nanos int64
	// Args is the tool's command line without --db, or the JSON API's path and query.
	Args []string
	// Status is the tool's exit status, or the JSON API's HTTP status (0 when
	// no answer came; Err says why).
	Status int
	Err    string
	// Stdout is the SHA-256 of what the tool printed on stdout (the body for the
	// JSON API); Head its beginning, for messages.
	Stdout, Head string
	Stderr       string
	Keys         []string // the keys a load wrote
}

func (r loadRecord) end() int64 { return r.Start + r.Nanos }

func (r loadRecord) failed() bool {
	if r.Kind == kindGetJSON {
		return r.Status != http.StatusOK
	}
	return r.Status != 0
}

// txOfLoad finds the transaction time in a load's summary.
var txOfLoad = regexp.MustCompile(`; tx (\S+)\n`)

// runLoadClient is a client process: it sends the requests its configuration
// asks for and writes one JSON loadRecord per line to Dir/records.jsonl.
func runLoadClient(config string) int {
	var c loadClientConfig
	if err := json.Unmarshal([]byte(config), &c); err != nil {
		fmt.Fprintln(os.Stderr, "load client:", err)
		return 1
	}
	out, err := os.Create(filepath.Join(c.Dir, "records.jsonl"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "load client:", err)
		return 1
	}
	w := bufio.NewWriter(out)
	enc := json.NewEncoder(w)
	run := &toolRunner{dir: c.Dir}
	program := &http.Client{Timeout: 2 * time.Minute}
	tx := c.Tx
	var own []string // a key of each of this client's acknowledged loads
	for n := 0; ; n++ {
		if (c.Count > 0 && n >= c.Count) || (c.Count == 0 && time.Now().After(c.Until)) {
			break
		}
		if n%16 == 15 {
			tx = laterTx(program, c.URL, tx)
		}
		key, valid := fmt.Sprintf("c%d", (c.ID*977+n*31)%seedKeys), "2024-03-20"
		if len(own) > 0 && n%3 == 0 {
			key, valid = own[(n/3)%len(own)], "2024-06-15"
		}
		var r loadRecord
		switch kind := c.Kinds[n%len(c.Kinds)]; kind {
		case kindGetJSON:
			r = readJSON(program, c.URL, "/v1/tables/customers/get?key="+key+"&valid="+valid+"&tx="+tx)
		case kindGetTool:
			r = run.tool(c.URL, "get", "customers", key, "--valid", valid, "--tx", tx)
		case kindScan:
			r = run.tool(c.URL, "scan", "customers", "--valid", "2024-02-10", "--tx", tx, "--format", "json")
		case kindResolve:
			r = run.tool(c.URL, "resolve", "customers", "--facts", c.Facts, "--key", "id", "--at", "on", "--tx", tx, "--miss", "null")
		case kindLoad:
			keys, file, err := writeLoadFile(c.Dir, c.ID, n)
			if err != nil {
				fmt.Fprintln(os.Stderr, "load client:", err)
				return 1
			}
			r = run.tool(c.URL, "load", "customers", file, "--at", "at")
			r.Keys = keys
			if m := txOfLoad.FindStringSubmatch(r.Stderr); r.Status == 0 && m != nil {
				tx, own = m[1], append(own, keys[0])
			}
		}
		r.Kind = c.Kinds[n%len(c.Kinds)]
		if err := enc.Encode(r); err != nil {
			fmt.Fprintln(os.Stderr, "load client:", err)
			return 1
		}
		if r.failed() {
			time.Sleep(20 * time.Millisecond) // as a client retrying a server that is down would
		}
	}
	if err := w.Flush(); err != nil {
		fmt.Fprintln(os.Stderr, "load client:", err)
		return 1
	}
	return 0
}

// laterTx returns the server's last transaction time, or tx when the server
// does not answer.
func laterTx(c *http.Client, url, tx string) string {
	resp, err := c.Get(url + "/v1/stats")
	if err != nil {
		return tx
	}
	defer resp.Body.Close()
	var s struct {
		LastTx string `json:"last_tx"`
	}
	if json.NewDecoder(resp.Body).Decode(&s) != nil || s.LastTx == "" {
		return tx
	}
	return s.LastTx
}

// readJSON reads path from the JSON API.
func readJSON(c *http.Client, url, path string) loadRecord {
	r := loadRecord{Args: []string{path}}
	start := time.Now()
	resp, err := c.Get(url + path)
	var body []byte
	if err == nil {
		body, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		r.Status = resp.StatusCode
	}
	r.Start, r.Nanos = start.UnixNano(), int64(time.Since(start))
	if err != nil {
		r.Status, r.Err = 0, err.Error()
	}
	r.Stdout, r.Head = digest(body)
	return r
}

// toolRunner runs the tool's commands in this process, its stdout and
// stderr pointed at two files of dir.
type toolRunner struct {
	dir string
}

// tool runs the tool on the server at url and records the command.
func (t *toolRunner) tool(url string, args ...string) loadRecord {
	r := loadRecord{Args: args}
	o, oerr := os.Create(filepath.Join(t.dir, "stdout"))
	e, eerr := os.Create(filepath.Join(t.dir, "stderr"))
	if oerr != nil || eerr != nil {
		r.Status, r.Stderr = -1, fmt.Sprint(oerr, eerr)
		return r
	}
	saved, savedErr := os.Stdout, os.Stderr
	os.Stdout, os.Stderr = o, e
	start := time.Now()
	r.Status = cli.Main(append(slices.Clone(args), "--db", url))
	r.Start, r.Nanos = start.UnixNano(), int64(time.Since(start))
	os.Stdout, os.Stderr = saved, savedErr
	o.Close()
	e.Close()
	stdout, _ := os.ReadFile(o.Name())
	stderr, _ := os.ReadFile(e.Name())
	r.Stdout, r.Head = digest(stdout)
	r.Stderr = string(stderr)
	return r
}

// digest returns the SHA-256 of b and its first bytes.
func digest(b []byte) (sum, head string) {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:]), trim(string(b))
}

// writeLoadFile writes the n-th load of client id: loadKeys new keys, two
// versions each.
func writeLoadFile(dir string, id, n int) (keys []string, path string, err error) {
	var b strings.Builder
	b.WriteString("id,city,tier,at\n")
	for i := range loadKeys {
		k := fmt.Sprintf("p%d-%d-%d", id, n, i)
		keys = append(keys, k)
		fmt.Fprintf(&b, "%s,Lima,gold,2024-05-01\n%s,Quito,gold,2024-06-01\n", k, k)
	}
	path = filepath.Join(dir, "load.csv")
	return keys, path, os.WriteFile(path, []byte(b.String()), 0o644)
}

// TestToolClientClosesItsConnection runs the tool's commands through its own
// client code one after another in one process, as the clients of
// TestServeUnderLoadSurvivesKill do, and requires the server to see each
// command's connection closed once the command has ended: an answer read to
// its end must not leave a kept-alive connection behind.
func TestToolClientClosesItsConnection(t *testing.T) {
	db, err := store.Open(filepath.Join(t.TempDir(), "s.db"), store.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, code := mustRun(db, "create", "customers", "--key", "id", "--axis", "date"); code != 0 {
		t.Fatal("create")
	}
	var open atomic.Int64
	srv := httptest.NewUnstartedServer(Handler(db, Options{Name: "s.db"}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		switch s {
		case http.StateNew:
			open.Add(1)
		case http.StateClosed, http.StateHijacked:
			open.Add(-1)
		}
	}
	srv.Start()
	defer srv.Close()
	dir := t.TempDir()
	writeFile(t, dir, "x.csv", "id,city,at\nc1,Oslo,2024-01-01\n")
	run := &toolRunner{dir: dir}
	for range 10 {
		if r := run.tool(srv.URL, "load", "customers", filepath.Join(dir, "x.csv"), "--at", "at"); r.Status != 0 {
			t.Fatalf("load: exit %d %s", r.Status, r.Stderr)
		}
		if r := run.tool(srv.URL, "get", "customers", "c1", "--valid", "2024-03-20"); r.Status != 0 {
			t.Fatalf("get: exit %d %s", r.Status, r.Stderr)
		}
	}
	// The server notices a closed connection when its read of the next request ends.
	for deadline := time.Now().Add(10 * time.Second); open.Load() > 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if n := open.Load(); n != 0 {
		t.Fatalf("%d connections of 20 finished commands still open on the server", n)
	}
}

// TestServeUnderLoadSurvivesKill runs `bitempo serve` and 8 client processes
// mixing point reads (the JSON API and the tool's get), scans, resolves of an
// uploaded fact file and loads of new keys (each one transaction) for
// BITEMPO_SERVER_LOAD_SECONDS (10 by default). Part way through, the server
// is killed with SIGKILL and started again on the same store. Then:
//
//   - every request that failed was in flight or sent while the server was
//     down, and failed with one clean line from the tool (connection refused
//     or reset, or the answer cut off, after a load's or a resolve's summary
//     when the server died between it and the end of the answer) or a
//     transport error of the program's HTTP client; no client hung or
//     panicked;
//   - every acknowledged load (exit status 0) is present whole, and no load
//     is present in part;
//   - the store verifies clean (bitempo verify);
//   - every read that succeeded, all pinned at a transaction time, gives the
//     same bytes on the store opened locally (the tool's command in process,
//     the JSON API's handler without a network, and a sample through the
//     binary on the directory).
//
// It logs p50 and p99 per kind of request, and a point get's cost in process
// and through the server on a quiet server (JSON API, the tool's protocol, and
// the tool's client) so that the server's overhead is known. Nothing about time
// is asserted.
func TestServeUnderLoadSurvivesKill(t *testing.T) {
	testlong.Skip(t, "8 client processes for 10 seconds or "+loadSecondsEnv)
	if testing.Short() {
		t.Skip("8 client processes for 10 seconds: not with -short")
	}
	needBinary(t)
	duration := 10 * time.Second
	if s := os.Getenv(loadSecondsEnv); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 2 {
			t.Fatalf("%s=%q: want a whole number of seconds, 2 or more", loadSecondsEnv, s)
		}
		duration = time.Duration(n) * time.Second
	}
	dir := t.TempDir()
	seedTx, facts := seedLoadStore(t, dir)
	url := "http://" + freeAddr(t)
	srv := startServe(t, dir, url, "serve1.log")

	clients := startLoadClients(t, dir, 8, func(id int) loadClientConfig {
		return loadClientConfig{ID: id, URL: url, Facts: facts, Tx: seedTx, Until: time.Now().Add(duration),
			Kinds: []string{kindGetJSON, kindGetTool, kindLoad, kindScan, kindGetJSON, kindGetTool, kindResolve, kindLoad}}
	})
	time.Sleep(duration * 45 / 100)
	killAt := time.Now().UnixNano()
	if err := srv.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = srv.Wait()
	time.Sleep(time.Second)
	srv = startServe(t, dir, url, "serve2.log")
	readyAt := time.Now().UnixNano()
	records := waitLoadClients(t, clients, duration+2*time.Minute)
	t.Logf("server killed %.1f s into the run, answering again %.2f s later",
		float64(duration*45/100)/1e9, float64(readyAt-killAt)/1e9)

	quiet := startLoadClients(t, filepath.Join(dir, "quiet"), 1, func(int) loadClientConfig {
		return loadClientConfig{ID: 0, URL: url, Tx: seedTx, Count: 500, Kinds: []string{kindGetTool}}
	})
	quietTool := waitLoadClients(t, quiet, 5*time.Minute)
	quietJSON, quietWire := pointGetsThroughServer(t, url, seedTx)

	if err := srv.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := srv.Wait(); err != nil {
		t.Fatalf("serve after SIGTERM: %v", err)
	}
	if r := tool(t, dir, "", nil, "verify", "--db", "s.db"); r.Code != 0 {
		t.Fatalf("verify after the kill and the restart: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}

	db, err := store.Open(filepath.Join(dir, "s.db"), store.Options{ReadOnly: true, MustExist: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	checkFailuresClean(t, records, url, killAt, readyAt)
	checkLoadsWhole(t, db, records)
	checkReadsLocally(t, db, dir, records)
	logLatencies(t, records, quietTool, quietJSON, quietWire, pointGetsInProcess(t, db, seedTx))
}

// seedLoadStore creates the store s.db in dir with seedKeys customers, two
// versions each, and the fact file resolve uploads; it returns the seed's
// transaction time and the fact file's path.
func seedLoadStore(t *testing.T, dir string) (tx, facts string) {
	t.Helper()
	if r := tool(t, dir, "", nil, "create", "customers", "--key", "id", "--axis", "date", "--kind", "periods", "--db", "s.db"); r.Code != 0 {
		t.Fatal(r.Stderr)
	}
	var seed strings.Builder
	seed.WriteString("id,city,tier,at\n")
	for i := range seedKeys {
		fmt.Fprintf(&seed, "c%d,city%d,tier%d,2024-01-%02d\n", i, i%50, i%3, 1+i%28)
		fmt.Fprintf(&seed, "c%d,moved%d,tier%d,2024-03-%02d\n", i, i%40, i%3, 1+i%28)
	}
	writeFile(t, dir, "seed.csv", seed.String())
	r := tool(t, dir, "", nil, "load", "customers", "seed.csv", "--at", "at", "--db", "s.db")
	m := txOfLoad.FindStringSubmatch(r.Stderr)
	if r.Code != 0 || m == nil {
		t.Fatalf("seed load: exit %d %s", r.Code, r.Stderr)
	}
	var f strings.Builder
	f.WriteString("order,id,on\n")
	for i := range 500 {
		fmt.Fprintf(&f, "o%d,c%d,2024-0%d-15\n", i, (i*7)%seedKeys, 1+i%4)
	}
	writeFile(t, dir, "facts.csv", f.String())
	return m[1], filepath.Join(dir, "facts.csv")
}

// freeAddr returns a loopback address no one listens on, for a server that
// must come back on the same one.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// startServe runs bitempo serve on dir/s.db at url, its stderr in dir/logName,
// and waits until it answers; a server still running when the test ends is
// killed.
func startServe(t *testing.T, dir, url, logName string) *exec.Cmd {
	t.Helper()
	log, err := os.Create(filepath.Join(dir, logName))
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	cmd := exec.Command(binary, "serve", "--db", "s.db", "--listen", strings.TrimPrefix(url, "http://"))
	cmd.Dir, cmd.Stderr = dir, log
	startChild(t, cmd)
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if resp, err := http.Get(url + "/v1/stats"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return cmd
			}
		}
	}
	b, _ := os.ReadFile(log.Name())
	t.Fatalf("bitempo serve does not answer at %s within a minute:\n%s", url, b)
	return nil
}

// startChild starts cmd; one still running when the test ends is killed.
func startChild(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
}

// loadClient is a running client process and its directory.
type loadClient struct {
	cmd    *exec.Cmd
	dir    string
	stderr *strings.Builder
}

// startLoadClients starts n client processes, each in a directory of its own
// under dir, configured by config(id).
func startLoadClients(t *testing.T, dir string, n int, config func(id int) loadClientConfig) []loadClient {
	t.Helper()
	var clients []loadClient
	for id := range n {
		c := config(id)
		c.Dir = filepath.Join(dir, fmt.Sprintf("client%d", id))
		if err := os.MkdirAll(c.Dir, 0o755); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(c)
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), loadClientEnv+"="+string(b))
		var stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stderr, &stderr
		startChild(t, cmd)
		clients = append(clients, loadClient{cmd: cmd, dir: c.Dir, stderr: &stderr})
	}
	return clients
}

// waitLoadClients waits for the clients to exit, each with status 0 and
// nothing on stderr, for up to limit (a client still running then hangs),
// and returns what they recorded.
func waitLoadClients(t *testing.T, clients []loadClient, limit time.Duration) []loadRecord {
	t.Helper()
	deadline := time.Now().Add(limit)
	var records []loadRecord
	for _, c := range clients {
		done := make(chan error, 1)
		go func() { done <- c.cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil || c.stderr.Len() > 0 {
				t.Fatalf("client process in %s: %v\n%s", c.dir, err, c.stderr.String())
			}
		case <-time.After(time.Until(deadline)):
			_ = c.cmd.Process.Kill()
			<-done
			t.Fatalf("client process in %s still running after %v: a request hangs", c.dir, limit)
		}
		b, err := os.ReadFile(filepath.Join(c.dir, "records.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		dec := json.NewDecoder(strings.NewReader(string(b)))
		for {
			var r loadRecord
			if err := dec.Decode(&r); err == io.EOF {
				break
			} else if err != nil {
				t.Fatalf("records of %s: %v", c.dir, err)
			}
			records = append(records, r)
		}
	}
	return records
}

// cleanFailure matches the one line the tool prints when the server is gone
// or goes away during a command.
var cleanFailure = regexp.MustCompile(`^bitempo: (server \S+: .*(connection refused|connection reset by peer|EOF)|the answer of the server \S+ was cut off: .*)\n$`)

// summaries match, per kind of request, the summary line the command prints
// on standard error once its work is done (a load: after its commit). The
// server streams it as the command prints it, so a server killed after it but
// before the end of its answer leaves the summary followed by the cut-off
// line: the tool, which never got the exit status, still fails.
var summaries = map[string]*regexp.Regexp{
	kindLoad:    regexp.MustCompile(`^bitempo: loaded customers from \S+: .*\n`),
	kindResolve: regexp.MustCompile(`^bitempo: resolved \d+ facts against customers: .*\n`),
}

// cleanStderr reports whether a failed command's standard error is one
// clean failure line, after the command's summary when the answer was cut
// off after it.
func cleanStderr(kind, stderr string) bool {
	if re := summaries[kind]; re != nil {
		if m := re.FindString(stderr); m != "" && strings.Contains(stderr[len(m):], "was cut off") {
			stderr = stderr[len(m):]
		}
	}
	return cleanFailure.MatchString(stderr)
}

// checkFailuresClean requires every failed request to have been in flight
// between killAt and readyAt, and its failure to be a clean one.
func checkFailuresClean(t *testing.T, records []loadRecord, url string, killAt, readyAt int64) {
	t.Helper()
	failed := map[string]int{}
	for _, r := range records {
		if !r.failed() {
			continue
		}
		failed[r.Kind]++
		down := r.Start <= readyAt && r.end() >= killAt
		clean := r.Status == 1 && cleanStderr(r.Kind, r.Stderr) && strings.Contains(r.Stderr, url)
		if r.Kind == kindGetJSON {
			clean = r.Status == 0 && r.Err != ""
		}
		if !down || !clean {
			t.Errorf("%s %v failed (server down: %v): status %d %s%s", r.Kind, r.Args, down, r.Status, r.Err, r.Stderr)
		}
	}
	t.Logf("requests failed while the server was down: %v", failed)
}

// checkLoadsWhole requires every acknowledged load's keys to be present and
// every other load's to be present all or none.
func checkLoadsWhole(t *testing.T, db *store.DB, records []loadRecord) {
	t.Helper()
	acked, lost, committedUnacked := 0, 0, 0
	for _, r := range records {
		if r.Kind != kindLoad {
			continue
		}
		present := 0
		for _, k := range r.Keys {
			v, err := query.Get(db, "customers", store.Key{k}, query.AsOf{Valid: day("2024-06-15")}, query.GetOptions{})
			switch {
			case err == nil && v.Attrs["city"] == "Quito":
				present++
			case err != nil && !errors.Is(err, query.ErrUnknownKey):
				t.Errorf("load of %s: %v", k, err)
			}
		}
		switch {
		case present != 0 && present != len(r.Keys):
			t.Errorf("load %v (status %d) is present in part: %d of %d keys", r.Keys, r.Status, present, len(r.Keys))
		case r.Status == 0 && present == 0:
			t.Errorf("acknowledged load %v is missing: %s", r.Keys, r.Stderr)
			lost++
		case present == 0 && summaries[kindLoad].MatchString(r.Stderr):
			t.Errorf("load %v printed its summary, then failed, and is missing: %s", r.Keys, r.Stderr)
			lost++
		case r.Status == 0:
			acked++
		case present != 0:
			committedUnacked++
		}
	}
	t.Logf("loads: %d acknowledged and present, %d acknowledged and missing, %d unacknowledged that committed", acked, lost, committedUnacked)
}

// checkReadsLocally runs every read that succeeded again on db, the store
// opened locally, and requires the same bytes: the tool's commands in process,
// the JSON API's reads through its handler without a network, and a sample of
// the tool's commands through the binary on the directory.
func checkReadsLocally(t *testing.T, db *store.DB, dir string, records []loadRecord) {
	t.Helper()
	h := Handler(db, Options{Name: "s.db"})
	compared, throughBinary := 0, 0
	for _, r := range records {
		if r.failed() || r.Kind == kindLoad {
			continue
		}
		compared++
		if r.Kind == kindGetJSON {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, r.Args[0], nil))
			if sum, head := digest(w.Body.Bytes()); w.Code != r.Status || sum != r.Stdout {
				t.Errorf("%s differs locally: status %d %q; through the server %d %q", r.Args[0], w.Code, head, r.Status, r.Head)
			}
			continue
		}
		o, e, code := runLocal(db, r.Args)
		if sum, head := digest([]byte(o)); sum != r.Stdout || e != r.Stderr || code != r.Status {
			t.Errorf("%v differs locally: exit %d %q / %q; through the server exit %d %q / %q", r.Args, code, head, e, r.Status, r.Head, r.Stderr)
		}
		if compared%25 == 1 && throughBinary < 40 {
			throughBinary++
			b := tool(t, dir, "", nil, append(slices.Clone(r.Args), "--db", "s.db")...)
			if sum, head := digest([]byte(b.Stdout)); sum != r.Stdout || b.Stderr != r.Stderr || b.Code != r.Status {
				t.Errorf("bitempo %v --db s.db differs: exit %d %q / %q; through the server exit %d %q / %q", r.Args, b.Code, head, b.Stderr, r.Status, r.Head, r.Stderr)
			}
		}
	}
	t.Logf("reads compared with the local store: %d (%d of them through the binary too)", compared, throughBinary)
}

// latencies are the times of one kind of request.
type latencies struct {
	kind string
	ds   []time.Duration
}

// p returns the q-th quantile (0 < q < 1).
func (l latencies) p(q float64) time.Duration {
	ds := slices.Sorted(slices.Values(l.ds))
	return ds[int(float64(len(ds)-1)*q)]
}

// pointGetsThroughServer times point gets on a quiet server, one at a time:
// through the JSON API and through the tool's protocol, each on one
// kept-alive connection.
func pointGetsThroughServer(t *testing.T, url, tx string) (jsonAPI, toolProtocol latencies) {
	t.Helper()
	jsonAPI.kind, toolProtocol.kind = "get (JSON API), quiet", "get (tool protocol), quiet"
	c := &http.Client{}
	for i := range 1000 {
		start := time.Now()
		resp, err := c.Get(fmt.Sprintf("%s/v1/tables/customers/get?key=c%d&valid=2024-03-20&tx=%s", url, i%seedKeys, tx))
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		jsonAPI.ds = append(jsonAPI.ds, time.Since(start))
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("quiet get c%d: %s", i, resp.Status)
		}
	}
	for i := range 500 {
		start := time.Now()
		_, e, code := runRemote(t, url, []string{"get", "customers", fmt.Sprintf("c%d", i), "--valid", "2024-03-20", "--tx", tx}, 0, "")
		toolProtocol.ds = append(toolProtocol.ds, time.Since(start))
		if code != 0 {
			t.Fatalf("quiet get c%d: exit %d %s", i, code, e)
		}
	}
	return jsonAPI, toolProtocol
}

// pointGetsInProcess times point gets on db in process: the library's
// query.Get (what the JSON API runs) and the tool's get command (what the
// tool's protocol runs).
func pointGetsInProcess(t *testing.T, db *store.DB, tx string) []latencies {
	t.Helper()
	txv, err := cli.ParseTx(tx)
	if err != nil {
		t.Fatal(err)
	}
	lib, cmd := latencies{kind: "query.Get, in process"}, latencies{kind: "tool's get, in process"}
	for i := range 2000 {
		start := time.Now()
		if _, err := query.Get(db, "customers", store.Key{fmt.Sprintf("c%d", i%seedKeys)}, query.AsOf{Valid: day("2024-03-20"), Tx: txv}, query.GetOptions{}); err != nil {
			t.Fatal(err)
		}
		lib.ds = append(lib.ds, time.Since(start))
	}
	for i := range 500 {
		start := time.Now()
		_, e, code := runLocal(db, []string{"get", "customers", fmt.Sprintf("c%d", i), "--valid", "2024-03-20", "--tx", tx})
		cmd.ds = append(cmd.ds, time.Since(start))
		if code != 0 {
			t.Fatalf("get c%d in process: exit %d %s", i, code, e)
		}
	}
	return []latencies{lib, cmd}
}

// logLatencies logs p50 and p99 of each kind of request under load (those
// that succeeded), then of the point gets on a quiet server and in process,
// and the server's overhead over the in-process call at p50.
func logLatencies(t *testing.T, records []loadRecord, quietTool []loadRecord, quietJSON, quietWire latencies, inProcess []latencies) {
	t.Helper()
	byKind := map[string]*latencies{}
	var kinds []string
	for _, r := range records {
		if r.failed() {
			continue
		}
		l := byKind[r.Kind]
		if l == nil {
			l = &latencies{kind: r.Kind + ", under load"}
			byKind[r.Kind] = l
			kinds = append(kinds, r.Kind)
		}
		l.ds = append(l.ds, time.Duration(r.Nanos))
	}
	slices.Sort(kinds)
	var all []latencies
	for _, k := range kinds {
		all = append(all, *byKind[k])
	}
	tool := latencies{kind: "get (tool's client), quiet"}
	for _, r := range quietTool {
		tool.ds = append(tool.ds, time.Duration(r.Nanos))
	}
	all = append(all, quietJSON, quietWire, tool)
	all = append(all, inProcess...)
	for _, l := range all {
		t.Logf("%-30s n=%6d p50=%10v p99=%10v", l.kind, len(l.ds), l.p(0.5).Round(time.Microsecond), l.p(0.99).Round(time.Microsecond))
	}
	lib, cmd := inProcess[0].p(0.5), inProcess[1].p(0.5)
	t.Logf("server overhead at p50: JSON API %v over query.Get; tool protocol %v and tool's client %v over the tool's get in process",
		(quietJSON.p(0.5) - lib).Round(time.Microsecond), (quietWire.p(0.5) - cmd).Round(time.Microsecond), (tool.p(0.5) - cmd).Round(time.Microsecond))
}
