package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bitempo/bitempo/engine"
	"github.com/bitempo/bitempo/etcd"
	"github.com/bitempo/bitempo/internal/cli"
	"github.com/bitempo/bitempo/store"
)

// These tests stop streamed loads on etcd midway: a kill, which must leave no
// sorted run behind, and a failed commit of a --batch-size load, which must
// leave exactly the batches committed before it and name their rows.

// failCommitEnv, set to N in the environment of a re-run of this test binary,
// makes it run the tool (failingCommitTool) with the Nth commit of its etcd
// engine failing.
const failCommitEnv = "BITEMPO_TEST_FAIL_COMMIT"

// failingCommitTool runs the tool on os.Args[1:] with the failN-th commit to
// an etcd store refused as by a cluster that lost quorum, before it is sent.
func failingCommitTool(failN int) int {
	open := func(ctx context.Context, url string, opts store.Options) (*store.DB, error) {
		cfg, err := etcd.ParseURL(url)
		if err != nil {
			return nil, err
		}
		e, err := etcd.NewEngine(ctx, cfg)
		if err != nil {
			return nil, err
		}
		return store.OpenEngine(&failingEngine{Engine: e, failN: failN}, url, opts)
	}
	return cli.MainWith(os.Args[1:], cli.Options{Engines: map[string]cli.Opener{"etcd": open}})
}

// failingEngine is an etcd engine whose failN-th commit fails.
type failingEngine struct {
	*etcd.Engine
	commits, failN int
}

func (e *failingEngine) Commit(writes []engine.Write, sync bool) error {
	if e.commits++; e.commits == e.failN {
		return fmt.Errorf("%w: the injected failure of commit %d", store.ErrUnavailable, e.commits)
	}
	return e.Engine.Commit(writes, sync)
}

// batchedChanges writes changes.csv in dir: keys k000..k(n-1), 3 changes each
// at times 1, 2, 3, in file order by time (so a key's rows are far apart), the
// change of key k at time a setting v to k*10+a.
func batchedChanges(t *testing.T, dir string, keys int) {
	t.Helper()
	var b strings.Builder
	b.WriteString("id,at,v\n")
	for at := 1; at <= 3; at++ {
		for k := range keys {
			fmt.Fprintf(&b, "k%03d,%d,%d\n", k, at, k*10+at)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "changes.csv"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestBatchedLoadFailsMidway: a streamed --batch-size load whose fourth
// transaction fails to commit exits with status 1 and names the rows
// committed before it, in key order: its batches of 3 keys (9 rows) commit
// k000..k008, whose last row in key order, k008 at 3, is line 410 of the file.
// The store then holds those keys' versions and nothing of k009 (the failed
// batch) or later; the same command again finishes the load.
func TestBatchedLoadFailsMidway(t *testing.T) {
	dir := t.TempDir()
	db := fmt.Sprintf("etcd://%s/tool/midway-%d", members.Hosts(), time.Now().UnixNano()) // a new store at each run of the test
	batchedChanges(t, dir, 200)
	ok(t, dir, "create", "t", "--key", "id", "--axis", "int", "--db", db)
	// The load's engine commits are its batches' transactions, one each.
	code, stderr, err := runFailingCommit(dir, 4, "load", "t", "changes.csv", "--at", "at", "--batch-size", "1000", "--db", db)
	want := regexp.MustCompile(`(?m)^bitempo: load t: commit: storage engine unavailable: the injected failure of commit 4; ` +
		`rows 1-27 of 600 \(in key order, each key's rows in --at order; the last committed is changes\.csv line 410\) ` +
		`were committed in 3 transactions, tx \S+ \.\. \S+; the rest is not loaded; ` +
		`to continue, run the same command again: rows already loaded change nothing\n\z`)
	if code != 1 || !want.MatchString(stderr) {
		t.Fatalf("load: %v (status %d), stderr:\n%s\nwant it to end with a line matching %s", err, code, stderr, want)
	}
	for k := range 9 {
		r := ok(t, dir, "history", "t", fmt.Sprintf("k%03d", k), "--format", "csv", "--db", db)
		if lines := csvLines(r.stdout); len(lines) != 4 || !strings.Contains(lines[3], ","+strconv.Itoa(k*10+3)) {
			t.Fatalf("k%03d after the failed load: %s", k, r.stdout)
		}
	}
	for _, k := range []int{9, 10, 11, 199} {
		if r := ok(t, dir, "history", "t", fmt.Sprintf("k%03d", k), "--format", "csv", "--db", db); len(csvLines(r.stdout)) != 1 {
			t.Fatalf("k%03d, of the failed batch or after it, was written: %s", k, r.stdout)
		}
	}
	r := ok(t, dir, "load", "t", "changes.csv", "--at", "at", "--batch-size", "1000", "--db", db)
	if !strings.Contains(r.stderr, "600 rows") {
		t.Fatalf("the load again: %q", r.stderr)
	}
	for _, k := range []int{9, 199} {
		if g := ok(t, dir, "get", "t", fmt.Sprintf("k%03d", k), "--valid", "3", "--db", db); !strings.Contains(g.stdout, strconv.Itoa(k*10+3)) {
			t.Fatalf("k%03d after the load again: %s", k, g.stdout)
		}
	}
	ok(t, dir, "verify", "--db", db)
}

// csvLines splits CSV output into lines.
func csvLines(out string) []string {
	return strings.Split(strings.TrimRight(out, "\n"), "\n")
}

// TestKilledLoadLeavesNoRuns: a streamed load killed with SIGKILL while it
// holds its sorted runs (writing them, or committing batches from them)
// leaves nothing in the temporary directory its runs went to (TMPDIR: an etcd
// store has no directory): they have no name (O_TMPFILE on Linux).
func TestKilledLoadLeavesNoRuns(t *testing.T) {
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		t.Skip("needs /proc/PID/fd to see the load's open runs")
	}
	dir, tmp := t.TempDir(), t.TempDir()
	db := fmt.Sprintf("etcd://%s/tool/killed-%d", members.Hosts(), time.Now().UnixNano())
	batchedChanges(t, dir, 1000)
	ok(t, dir, "create", "t", "--key", "id", "--axis", "int", "--db", db)
	cmd := exec.Command(binary, "load", "t", "changes.csv", "--at", "at", "--batch-size", "1000", "--spill-bytes", "20000", "--db", db)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	// Kill once the load holds runs, all seen without a name (or, if some
	// keep one, 200ms after it first held one).
	var since time.Time
	for {
		select {
		case err := <-exited:
			left, _ := os.ReadDir(tmp)
			t.Fatalf("the load ended (%v) before it was seen holding runs in %s; left there: %v", err, tmp, left)
		case <-time.After(5 * time.Millisecond):
		}
		held, unlinked := openRuns(cmd.Process.Pid, tmp)
		if held > 0 && since.IsZero() {
			since = time.Now()
		}
		if held > 0 && (unlinked == held || time.Since(since) > 200*time.Millisecond) {
			break
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := <-exited; err == nil {
		t.Fatal("the load finished before the kill")
	}
	if left, err := os.ReadDir(tmp); err != nil || len(left) > 0 {
		t.Fatalf("the killed load left in its temporary directory: %v (%v)", left, err)
	}
}

// openRuns counts the files under dir that process pid holds open, and of
// them those unlinked.
func openRuns(pid int, dir string) (held, unlinked int) {
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return 0, 0
	}
	for _, fd := range fds {
		target, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if err != nil || !strings.HasPrefix(target, dir+string(filepath.Separator)) {
			continue
		}
		held++
		if strings.HasSuffix(target, " (deleted)") {
			unlinked++
		}
	}
	return held, unlinked
}
