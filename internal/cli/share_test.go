package cli

import (
	"bufio"
	"crypto/sha256"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bitempo/bitempo/internal/testutil"
	"github.com/bitempo/bitempo/store"
)

// holdEnv names the store a re-run of this test binary holds open until its
// stdin closes (holdUntilStdinCloses), as a service that embeds the store does.
const holdEnv = "BITEMPO_TEST_HOLD_STORE"

// holdUntilStdinCloses opens the store db read-write, says "held" on stdout,
// and closes it when stdin ends.
func holdUntilStdinCloses(db string) int {
	s, err := store.Open(db, store.Options{MustExist: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("held")
	_, _ = io.Copy(io.Discard, os.Stdin)
	if err := s.Close(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// holdStore starts another process that holds the store dir/db open;
// release makes it close the store and waits for it to exit.
func holdStore(t *testing.T, dir string) (release func()) {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), holdEnv+"="+filepath.Join(dir, "db"))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "held\n" {
		t.Fatalf("the holding process: %q, %v", line, err)
	}
	return func() {
		_ = stdin.Close()
		if err := cmd.Wait(); err != nil {
			t.Fatalf("the holding process: %v", err)
		}
	}
}

// --wait retries the lock for as long as it says and names whom it waited
// for; a command waiting longer than the holder runs once it lets go.
func TestWaitForLockedStore(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write(t, dir, "a.csv", "id,at,tier\na,1,gold\n")
	ok(t, dir, "create", "t", "--key", "id", "--axis", "int", "--db", "db")
	ok(t, dir, "load", "t", "a.csv", "--at", "at", "--db", "db")
	release := holdStore(t, dir)
	fails(t, dir, exitFailure, "is locked by another process (pid ", "get", "t", "a", "--db", "db")
	r := fails(t, dir, exitFailure, "waited 200ms for it", "get", "t", "a", "--wait", "200ms", "--db", "db")
	if !strings.Contains(r.stderr, "(pid ") {
		t.Errorf("the error does not name the holder: %s", r.stderr)
	}
	waiting := exec.Command(binary, "get", "t", "a", "--wait", "30s", "--db", "db")
	waiting.Dir = dir
	done := make(chan testutil.Result, 1)
	go func() { done <- testutil.Run(t, waiting) }()
	time.Sleep(300 * time.Millisecond)
	release()
	if r := <-done; r.Code != 0 || !strings.Contains(r.Stdout, "a,") {
		t.Fatalf("the waiting get: exit %d, stdout %q, stderr %q", r.Code, r.Stdout, r.Stderr)
	}
}

// --read-only opens beside other read-only opens, changes nothing in the
// store's directory, and refuses writes.
func TestReadOnlyFlag(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write(t, dir, "a.csv", "id,at,tier\na,1,gold\n")
	ok(t, dir, "create", "t", "--key", "id", "--axis", "int", "--db", "db")
	ok(t, dir, "load", "t", "a.csv", "--at", "at", "--db", "db")
	before := fingerprint(t, filepath.Join(dir, "db"))
	for _, args := range [][]string{{"scan", "t"}, {"get", "t", "a"}, {"history", "t", "a"}, {"tables"}, {"verify"}} {
		ok(t, dir, append(args, "--read-only", "--db", "db")...)
	}
	fails(t, dir, exitFailure, "read-only", "load", "t", "a.csv", "--at", "at", "--read-only", "--db", "db")
	if after := fingerprint(t, filepath.Join(dir, "db")); after != before {
		t.Fatalf("read-only commands changed the store's files:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// fingerprint lists every file of dir with its size, modification time and
// contents' hash.
func fingerprint(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s %d %d %x\n", p, info.Size(), info.ModTime().UnixNano(), sha256.Sum256(data))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}
