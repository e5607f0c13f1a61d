package cli

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/bitempo/bitempo/internal/testutil"
)

// These tests build the bitempo binary once and run it as a user would, checking
// stdout, stderr and the exit status.
//
// Every test calls t.Parallel but those that cannot share the process: a test
// works in its own t.TempDir and changes no package state, environment or
// working directory. The exceptions read a package-wide counter
// (LoadRowsHeldPeak) or signal the binary at moments measured on an idle
// machine. Tests that open a store in this process run in parallel too: a
// store's directory lock is released for every descriptor of it, including
// the copy a child forked by another test holds until it execs. Since a test
// mostly waits for the binary it runs, and the binary for its disk syncs,
// TestMain runs up to parallelPerCPU tests per CPU at once unless
// -test.parallel says otherwise.

var binary string

// parallelPerCPU is how many parallel tests run at once per CPU by default.
const parallelPerCPU = 4

func TestMain(m *testing.M) {
	if db := os.Getenv(holdEnv); db != "" {
		os.Exit(holdUntilStdinCloses(db))
	}
	flag.Parse()
	parallelSet := false
	flag.Visit(func(f *flag.Flag) { parallelSet = parallelSet || f.Name == "test.parallel" })
	if !parallelSet {
		if err := flag.Set("test.parallel", strconv.Itoa(parallelPerCPU*runtime.GOMAXPROCS(0))); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	bin, cleanup, err := buildBinary()
	if err != nil {
		fmt.Fprintln(os.Stderr, "build bitempo:", err)
		os.Exit(1)
	}
	binary = bin
	code := m.Run()
	cleanup()
	os.Exit(code)
}

// buildBinary builds the bitempo tool and returns its path and what removes
// it. It builds into the user's cache directory, one binary per checkout (as
// the tool builds its etcd build), where go build leaves an up-to-date binary
// alone, so that a run after the first skips the link; when there is no cache
// directory or that build fails, into a temporary directory removed after the
// run.
func buildBinary() (string, func(), error) {
	build := func(bin string) error {
		cmd := exec.Command("go", "build", "-o", bin, "github.com/bitempo/bitempo/tools/bitempo")
		cmd.Stderr = os.Stderr
		return cmd.Run()
	}
	cache, err := os.UserCacheDir()
	wd, werr := os.Getwd()
	if err == nil && werr == nil {
		sum := sha256.Sum256([]byte(wd))
		bin := filepath.Join(cache, "bitempo", "bitempo-test-"+hex.EncodeToString(sum[:6]))
		if err := build(bin); err == nil {
			return bin, func() {}, nil
		}
	}
	dir, err := os.MkdirTemp("", "bitempo-bin-")
	if err != nil {
		return "", nil, err
	}
	bin := filepath.Join(dir, "bitempo")
	if err := build(bin); err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	return bin, func() { os.RemoveAll(dir) }, nil
}

// result is what one run of the binary printed.
type result struct {
	stdout, stderr string
	code           int
}

// bt runs the binary in dir with args and optional stdin.
func bt(t *testing.T, dir, stdin string, args ...string) result {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(stdin)
	r := testutil.Run(t, cmd)
	return result{r.Stdout, r.Stderr, r.Code}
}

// ok runs the binary and fails the test unless it exits 0.
func ok(t *testing.T, dir string, args ...string) result {
	t.Helper()
	r := bt(t, dir, "", args...)
	if r.code != 0 {
		t.Fatalf("bitempo %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return r
}

// fails runs the binary and checks its exit status and that stderr holds want.
func fails(t *testing.T, dir string, code int, want string, args ...string) result {
	t.Helper()
	r := bt(t, dir, "", args...)
	if r.code != code {
		t.Fatalf("bitempo %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.code, code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, want) {
		t.Fatalf("bitempo %s: stderr does not say %q:\n%s", strings.Join(args, " "), want, r.stderr)
	}
	checkOneErrorLine(t, r.stderr)
	return r
}

// checkOneErrorLine checks that an error is reported on one line, without a Go
// stack trace.
func checkOneErrorLine(t *testing.T, stderr string) {
	t.Helper()
	if strings.Contains(stderr, "goroutine ") || strings.Contains(stderr, "panic") {
		t.Fatalf("stack trace on stderr:\n%s", stderr)
	}
	lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
	last := lines[len(lines)-1]
	if !strings.HasPrefix(last, "bitempo: ") {
		t.Fatalf("last stderr line is not an error line: %q", last)
	}
}

// write creates a file in dir.
func write(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// jsonRows parses JSON lines output.
func jsonRows(t *testing.T, out string) []map[string]any {
	t.Helper()
	var rows []map[string]any
	dec := json.NewDecoder(strings.NewReader(out))
	dec.UseNumber()
	for dec.More() {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			t.Fatalf("bad JSON output: %v\n%s", err, out)
		}
		rows = append(rows, m)
	}
	return rows
}

// csvLines splits CSV output into lines.
func csvLines(out string) []string {
	return strings.Split(strings.TrimRight(out, "\n"), "\n")
}

func wantLines(t *testing.T, got string, want ...string) {
	t.Helper()
	g := csvLines(got)
	if strings.Join(g, "\n") != strings.Join(want, "\n") {
		t.Fatalf("output:\n%s\nwant:\n%s", strings.Join(g, "\n"), strings.Join(want, "\n"))
	}
}
