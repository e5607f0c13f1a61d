package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/bitempo/bitempo/etcd"
	"github.com/bitempo/bitempo/internal/cli"
)

// cdcEvents writes events.csv in dir: n CDC rows over keys keys in random
// order, with deletes ("d"), repeated rows and rows of one event (key, at,
// seq) with other values. It returns the file lines of the rows a load keeps,
// the last of each event, in file order.
func cdcEvents(t *testing.T, dir string, n, keys int, seed uint64) []int {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 7))
	var rows []string
	for range n {
		row := fmt.Sprintf("k%03d,%d,%d,%s,%d", r.IntN(keys), r.IntN(60), r.IntN(2), []string{"", "", "", "", "", "d"}[r.IntN(6)], r.IntN(1000))
		rows = append(rows, row)
		if r.IntN(8) == 0 {
			rows = append(rows, row)
		}
	}
	r.Shuffle(len(rows), func(i, j int) { rows[i], rows[j] = rows[j], rows[i] })
	if err := os.WriteFile(filepath.Join(dir, "events.csv"), []byte("id,at,seq,op,v\n"+strings.Join(rows, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	event := func(row string) string { return strings.Join(strings.Split(row, ",")[:3], ",") }
	last := map[string]int{}
	for i, row := range rows {
		last[event(row)] = i
	}
	var kept []int
	for i, row := range rows {
		if last[event(row)] == i {
			kept = append(kept, i+2) // line 1 is the header
		}
	}
	return kept
}

// TestBatchedChangesLoadStreamsAndFinishesAfterAFailure: a --batch-size load
// of a CDC file into a changes table on etcd, more rows than one commit
// holds, streams: loaded in this process, it never holds more rows at once
// than a batch. The same load whose fourth commit fails exits with status 1
// and names the rows committed before it in file order (the first 3 batches
// of the rows kept, the last of each event); the same command again skips
// those batches by their batch ids and finishes, and the store is then the
// same, byte for byte but for transaction times, as after the load in one go.
func TestBatchedChangesLoadStreamsAndFinishesAfterAFailure(t *testing.T) {
	dir := t.TempDir()
	stamp := time.Now().UnixNano() // new stores at each run of the test
	whole := fmt.Sprintf("etcd://%s/tool/cdc-whole-%d", members.Hosts(), stamp)
	midway := fmt.Sprintf("etcd://%s/tool/cdc-midway-%d", members.Hosts(), stamp)
	kept := cdcEvents(t, dir, 400, 40, 1)
	load := []string{"load", "t", filepath.Join(dir, "events.csv"), "--at", "at", "--seq", "seq", "--op-col", "op", "--delete-value", "d",
		"--batch-size", "8", "--spill-bytes", "500"}
	for _, db := range []string{whole, midway} {
		ok(t, dir, "create", "t", "--key", "id", "--axis", "int", "--kind", "changes", "--db", db)
	}

	cli.LoadRowsHeldPeak()
	if code := cli.MainWith(append(append([]string{"--quiet"}, load...), "--db", whole), cli.Options{Engines: map[string]cli.Opener{"etcd": etcd.OpenURL}}); code != 0 {
		t.Fatalf("the load in one go: status %d", code)
	}
	if held := cli.LoadRowsHeldPeak(); held > 8 || held == 0 {
		t.Fatalf("the load held up to %d rows at once; a batch is 8", held)
	}

	code, stderr, err := runFailingCommit(dir, 4, append(load, "--db", midway)...) // one engine commit per batch
	want := regexp.MustCompile(fmt.Sprintf(`(?m)^bitempo: load t: commit: storage engine unavailable: the injected failure of commit 4; `+
		`rows 1-24 of %d \(in file order; the last committed is %s line %d\) `+
		`were committed in 3 transactions, tx \S+ \.\. \S+; the rest is not loaded; `+
		`to continue, run the same command again with the same --batch-size 8: the committed batches are recognised by their batch ids and skipped\n\z`,
		len(kept), regexp.QuoteMeta(filepath.Join(dir, "events.csv")), kept[23]))
	if code != 1 || !want.MatchString(stderr) {
		t.Fatalf("load: %v (status %d), stderr:\n%s\nwant it to end with a line matching %s", err, code, stderr, want)
	}
	r := ok(t, dir, append(load, "--db", midway)...)
	if !strings.Contains(r.stderr, "3 batches already applied") {
		t.Fatalf("the load again did not skip the 3 committed batches: %s", r.stderr)
	}
	ok(t, dir, "verify", "--db", midway)
	a, b := dumpStore(t, dir, whole), dumpStore(t, dir, midway)
	if a != b {
		t.Fatalf("the load finished after a failure left another store than the load in one go:\n%s\n---\n%s", a, b)
	}
	if !strings.Contains(a, "k039") {
		t.Fatalf("the dump lacks keys:\n%s", a)
	}
}

// txTime matches a transaction time in the tool's output.
var txTime = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z`)

// dumpStore is the store's every key and value, its transaction times
// replaced by TX.
func dumpStore(t *testing.T, dir, db string) string {
	t.Helper()
	return txTime.ReplaceAllString(ok(t, dir, "dump", "--format", "csv", "--db", db).stdout, "TX")
}

// runFailingCommit runs the tool on args in dir with the failN-th commit of
// its etcd engine failing (failingCommitTool), and returns its exit status
// (-1 if it did not exit), its stderr and the error of the run.
func runFailingCommit(dir string, failN int, args ...string) (int, string, error) {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d", failCommitEnv, failN))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	code := -1
	if ee, isExit := err.(*exec.ExitError); isExit {
		code = ee.ExitCode()
	}
	return code, stderr.String(), err
}
