package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/bitempo/bitempo/etcd/etcdtest"
	"github.com/bitempo/bitempo/internal/testutil"
)

// These tests build the etcd build of the tool and run it against a 3-member
// cluster with etcd's default limits (128 operations, 1.5 MiB per
// transaction), as a user would.

var (
	binary  string
	members *etcdtest.Cluster
)

func TestMain(m *testing.M) {
	if n, err := strconv.Atoi(os.Getenv(failCommitEnv)); err == nil {
		os.Exit(failingCommitTool(n))
	}
	dir, err := os.MkdirTemp("", "bitempo-etcd-tool-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "bitempo")
	build := exec.Command("go", "build", "-o", binary, ".")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build:", err)
		os.Exit(1)
	}
	members, err = etcdtest.Start(filepath.Join(dir, "cluster"), 3, etcdtest.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	members.Close()
	os.RemoveAll(dir)
	os.Exit(code)
}

type result struct {
	stdout, stderr string
	code           int
}

func run(t *testing.T, dir string, args ...string) result {
	t.Helper()
	return runBinary(t, binary, dir, nil, args...)
}

// runBinary runs bin in dir with args and env (nil: this process's).
func runBinary(t *testing.T, bin, dir string, env []string, args ...string) result {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir, cmd.Env = dir, env
	r := testutil.Run(t, cmd)
	return result{r.Stdout, r.Stderr, r.Code}
}

func ok(t *testing.T, dir string, args ...string) result {
	t.Helper()
	r := run(t, dir, args...)
	if r.code != 0 {
		t.Fatalf("%v: status %d\nstdout %s\nstderr %s", args, r.code, r.stdout, r.stderr)
	}
	return r
}

const customersCSV = `customer_id,valid_from,valid_to,name,city,score
c1,2024-01-01,2024-03-11,Ada,Oslo,10
c1,2024-03-11,2024-06-01,Ada,Bergen,11
c1,2024-06-01,9999-12-31,Ada,Oslo,12
c2,2024-01-15,,Bo,Trondheim,
c3,2024-02-01,2024-05-01,Cy,Tromsø,3
`

// TestCommands: every command that takes --db works on an etcd:// store
// (create, load, get, history, scan, resolve, audit, changes, backfill, tables,
// dump, stats, verify; compact says what it does; backup is refused).
func TestCommands(t *testing.T) {
	dir := t.TempDir()
	db := "etcd://" + members.Hosts() + "/tool/commands"
	if err := os.WriteFile(filepath.Join(dir, "c.csv"), []byte(customersCSV), 0o644); err != nil {
		t.Fatal(err)
	}
	ok(t, dir, "create", "customers", "--key", "customer_id", "--axis", "date", "--db", db)
	ok(t, dir, "load", "customers", "c.csv", "--from", "valid_from", "--to", "valid_to", "--open-sentinel", "9999-12-31", "--db", db)
	if r := ok(t, dir, "get", "customers", "c1", "--valid", "2024-04-01", "--db", db); !strings.Contains(r.stdout, "Bergen") {
		t.Fatalf("get: %s", r.stdout)
	}
	if r := ok(t, dir, "history", "customers", "c1", "--db", db); strings.Count(r.stdout, "Ada") != 3 {
		t.Fatalf("history: %s", r.stdout)
	}
	if r := ok(t, dir, "scan", "customers", "--valid", "2024-04-01", "--db", db); !strings.Contains(r.stdout, "Trondheim") || !strings.Contains(r.stdout, "Tromsø") {
		t.Fatalf("scan: %s", r.stdout)
	}
	if err := os.WriteFile(filepath.Join(dir, "orders.csv"), []byte("order_id,customer_id,ordered_on\no1,c1,2024-04-01\no2,c1,2024-07-01\no3,c3,2024-02-10\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := ok(t, dir, "resolve", "customers", "--facts", "orders.csv", "--key", "customer_id", "--at", "ordered_on", "--format", "csv", "--db", db); !strings.Contains(r.stdout, "o1,c1,2024-04-01") || !strings.Contains(r.stdout, "Bergen") || strings.Count(r.stdout, "Oslo") != 1 || !strings.Contains(r.stdout, "Tromsø") {
		t.Fatalf("resolve: %s", r.stdout)
	}
	if r := ok(t, dir, "audit", "customers", "c2", "--db", db); !strings.Contains(r.stdout, "Trondheim") {
		t.Fatalf("audit: %s", r.stdout)
	}
	if r := ok(t, dir, "changes", "customers", "--since", "0", "--db", db); strings.Count(r.stdout, "Ada") < 3 {
		t.Fatalf("changes: %s", r.stdout)
	}
	ok(t, dir, "create", "contracts", "--key", "contract_id", "--axis", "date", "--group-by", "customer_id", "--db", db)
	if err := os.WriteFile(filepath.Join(dir, "contracts.csv"), []byte("contract_id,customer_id,valid_from,valid_to,amount\nk1,c1,2024-01-01,2024-06-01,10\nk2,c1,2024-03-01,,5\nk3,c2,2024-01-01,,7\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ok(t, dir, "load", "contracts", "contracts.csv", "--from", "valid_from", "--to", "valid_to", "--db", db)
	if err := os.WriteFile(filepath.Join(dir, "training.csv"), []byte("customer_id,ts\nc1,2024-04-01\nc1,2024-07-01\nc2,2024-02-01\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := ok(t, dir, "backfill", "contracts", "--left", "training.csv", "--group-by", "customer_id", "--ts", "ts", "--agg", "sum(amount)", "--agg", "count", "--format", "csv", "--db", db); !strings.Contains(r.stdout, "c1,2024-04-01,15,2") || !strings.Contains(r.stdout, "c1,2024-07-01,5,1") || !strings.Contains(r.stdout, "c2,2024-02-01,7,1") {
		t.Fatalf("backfill: %s", r.stdout)
	}
	ok(t, dir, "tables", "--db", db)
	ok(t, dir, "dump", "--db", db)
	ok(t, dir, "stats", "--db", db)
	if r := ok(t, dir, "verify", "--db", db); !strings.Contains(r.stdout+r.stderr, "ok") && !strings.Contains(r.stdout+r.stderr, "OK") {
		t.Fatalf("verify: %q %q", r.stdout, r.stderr)
	}
	if r := ok(t, dir, "compact", "--db", db); !strings.Contains(r.stderr, "nothing to do on the etcd engine") {
		t.Fatalf("compact: %q", r.stderr)
	}
	if r := run(t, dir, "backup", filepath.Join(dir, "copy"), "--db", db); r.code == 0 || !strings.Contains(r.stderr, "not supported") {
		t.Fatalf("backup: status %d %q", r.code, r.stderr)
	}
}

// refusedLoad creates table t in db and loads into it, in one transaction, a
// CSV file big.csv of n changes id,at,v (row i changes key
// fmt.Sprintf(keyFormat, i) at i modulo ats to v = i) too large for one etcd
// transaction; it checks that the load is refused naming the cluster's
// limits and --batch-size, with nothing written, and returns the refusal.
func refusedLoad(t *testing.T, dir, db string, n int, keyFormat string, ats int) result {
	t.Helper()
	var b strings.Builder
	b.WriteString("id,at,v\n")
	for i := range n {
		fmt.Fprintf(&b, keyFormat+",%d,%d\n", i, i%ats, i)
	}
	if err := os.WriteFile(filepath.Join(dir, "big.csv"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	ok(t, dir, "create", "t", "--key", "id", "--axis", "int", "--db", db)
	r := run(t, dir, "load", "t", "big.csv", "--at", "at", "--db", db)
	if r.code == 0 || !strings.Contains(r.stderr, "--max-txn-ops 128") || !strings.Contains(r.stderr, "--max-request-bytes 1572864") ||
		!strings.Contains(r.stderr, "--batch-size") || !strings.Contains(r.stderr, "nothing loaded") {
		t.Fatalf("one-transaction load: status %d %q", r.code, r.stderr)
	}
	if g := run(t, dir, "get", "t", fmt.Sprintf(keyFormat, 0), "--valid", "5", "--db", db); g.code == 0 {
		t.Fatalf("the refused load wrote: %s", g.stdout)
	}
	return r
}

// TestLoadTooLarge: a file that does not fit one etcd transaction is refused
// with nothing written, saying both limits and --batch-size; with --batch-size
// it loads in transactions sized to the cluster, reporting them.
func TestLoadTooLarge(t *testing.T) {
	dir := t.TempDir()
	db := "etcd://" + members.Hosts() + "/tool/large"
	refusedLoad(t, dir, db, 300, "k%03d", 300)
	r := ok(t, dir, "load", "t", "big.csv", "--at", "at", "--batch-size", "1000", "--db", db)
	if !strings.Contains(r.stderr, "committing 10 rows per transaction") {
		t.Fatalf("batched load: %q", r.stderr)
	}
	for _, k := range []string{"k000", "k150", "k299"} {
		ok(t, dir, "get", "t", k, "--valid", "1000", "--db", db)
	}
	ok(t, dir, "verify", "--db", db)
}

// TestLoadStopsAtTheLimit: a one-transaction load of a file many times larger
// than one etcd transaction streams (runs on disk, applied key by key) and
// stops as soon as its writes pass the cluster's limit, not after building
// the whole file's transaction: the refusal counts writes within a flush of
// the limit, and nothing is written.
func TestLoadStopsAtTheLimit(t *testing.T) {
	dir := t.TempDir()
	db := "etcd://" + members.Hosts() + "/tool/stops"
	r := refusedLoad(t, dir, db, 3000, "k%04d", 7)
	var writes int
	if i := strings.Index(r.stderr, "has passed "); i < 0 {
		t.Fatalf("the refusal does not count the writes: %q", r.stderr)
	} else if _, err := fmt.Sscanf(r.stderr[i:], "has passed %d writes", &writes); err != nil {
		t.Fatalf("%v: %q", err, r.stderr)
	}
	// A commit holds 127 writes; the load flushes every 127/6 = 21 rows of
	// at most 6 writes each. The whole file is 3,000 rows of 3 writes.
	if writes <= 127 || writes > 127+21*6 {
		t.Fatalf("the load stopped at %d writes, want just past 127", writes)
	}
}

// TestBatchedLoadStreams: a --batch-size load of a file larger than a batch
// streams through sorted runs and commits batches of whole keys, each within
// the cluster's commit: 200 keys of 3 changes each, 10 rows a batch, are 67
// transactions of 3 keys (the last of 2). Loading it again changes nothing.
func TestBatchedLoadStreams(t *testing.T) {
	dir := t.TempDir()
	db := "etcd://" + members.Hosts() + "/tool/batches"
	var b strings.Builder
	b.WriteString("id,at,v\n")
	for at := 1; at <= 3; at++ { // file order: by time, so a key's rows are far apart
		for k := range 200 {
			fmt.Fprintf(&b, "k%03d,%d,%d\n", k, at, k*10+at)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "changes.csv"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	ok(t, dir, "create", "t", "--key", "id", "--axis", "int", "--db", db)
	r := ok(t, dir, "load", "t", "changes.csv", "--at", "at", "--batch-size", "1000", "--db", db)
	if !strings.Contains(r.stderr, "committing 10 rows per transaction") || !strings.Contains(r.stderr, "600 rows") ||
		!strings.Contains(r.stderr, "67 transactions") {
		t.Fatalf("batched load: %q", r.stderr)
	}
	for _, k := range []int{0, 101, 199} {
		if g := ok(t, dir, "get", "t", fmt.Sprintf("k%03d", k), "--valid", "2", "--db", db); !strings.Contains(g.stdout, fmt.Sprint(k*10+2)) {
			t.Fatalf("k%03d at 2: %s", k, g.stdout)
		}
	}
	r = ok(t, dir, "load", "t", "changes.csv", "--at", "at", "--batch-size", "1000", "--db", db)
	if !strings.Contains(r.stderr, "records asserted 0") {
		t.Fatalf("the load again: %q", r.stderr)
	}
	ok(t, dir, "verify", "--db", db)
}

// TestPlainToolRunsEtcdBuild: the plain tool (tools/bitempo, which cannot link
// the etcd engine), run inside a source checkout with an etcd:// --db, builds
// and runs this build with the same arguments, working directory and exit
// status; outside a checkout it refuses, naming the build.
func TestPlainToolRunsEtcdBuild(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "bitempo-plain")
	build := exec.Command("go", "build", "-o", plain, "github.com/bitempo/bitempo/tools/bitempo")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		t.Fatal(err)
	}
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	gocache, err := exec.Command("go", "env", "GOCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(),
		"XDG_CACHE_HOME="+filepath.Join(dir, "cache"), // where the etcd build goes
		"GOCACHE="+strings.TrimSpace(string(gocache))) // Go's build cache stays the usual one
	if p, err := exec.LookPath("bitempo-etcd"); err == nil {
		t.Skipf("an installed etcd build (%s) would run instead of the checkout's", p)
	}
	runPlain := func(wd string, args ...string) result {
		t.Helper()
		return runBinary(t, plain, wd, env, args...)
	}
	db := "etcd://" + members.Hosts() + "/tool/plain"
	if r := runPlain(root, "create", "customers", "--key", "customer_id", "--axis", "date", "--db="+db); r.code != 0 || !strings.Contains(r.stderr, "building the etcd build") {
		t.Fatalf("create through the plain tool: status %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
	csv := filepath.Join(dir, "c.csv")
	if err := os.WriteFile(csv, []byte(customersCSV), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := runPlain(filepath.Join(root, "store"), "load", "customers", csv, "--from", "valid_from", "--to", "valid_to", "--open-sentinel", "9999-12-31", "--db", db); r.code != 0 || strings.Contains(r.stderr, "building") {
		t.Fatalf("load through the plain tool (built once already): status %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
	if r := ok(t, dir, "get", "customers", "c1", "--valid", "2024-04-01", "--db", db); !strings.Contains(r.stdout, "Bergen") {
		t.Fatalf("the etcd build does not see what the plain tool wrote: %s", r.stdout)
	}
	if r := runPlain(root, "get", "customers", "nobody", "--db", db); r.code == 0 || r.code != run(t, dir, "get", "customers", "nobody", "--db", db).code {
		t.Fatalf("the plain tool's status %d for a missing key differs from the etcd build's (stderr %s)", r.code, r.stderr)
	}
	if r := runPlain(dir, "tables", "--db", db); r.code == 0 || !strings.Contains(r.stderr, "no such storage engine") {
		t.Fatalf("outside a checkout: status %d, stderr %s", r.code, r.stderr)
	}
}
