package store_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// lockDirEnv names the store TestLockChild opens; set only in the child.
const lockDirEnv = "BITEMPO_LOCK_TEST_DIR"

// TestLockChild is the child process of TestLockAcrossProcesses: it opens the
// store read-write and prints "opened" or "locked".
func TestLockChild(t *testing.T) {
	dir := os.Getenv(lockDirEnv)
	if dir == "" {
		t.Skip("the child process of TestLockAcrossProcesses")
	}
	db, err := store.Open(dir, store.Options{Logger: quiet, MustExist: true})
	switch {
	case errors.Is(err, store.ErrLocked):
		fmt.Println("locked")
	case err != nil:
		fmt.Println("error", err)
	default:
		fmt.Println("opened")
		_ = db.Close()
	}
}

// lockChild runs TestLockChild on dir and returns what it printed.
func lockChild(t *testing.T, dir string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestLockChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), lockDirEnv+"="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if line == "opened" || line == "locked" || strings.HasPrefix(line, "error") {
			return line
		}
	}
	t.Fatalf("child said nothing:\n%s", out)
	return ""
}

// TestLockAcrossProcesses opens a store and has another process try to open
// it: refused while the store is open, also after its LOCK file was deleted or
// replaced (which used to let the second process in, destroying the store);
// the first process's commits fail with ErrLocked once LOCK is gone, and the
// second process gets in after Close.
func TestLockAcrossProcesses(t *testing.T) {
	if os.Getenv(lockDirEnv) != "" {
		t.Skip("in the child process")
	}
	for _, how := range []string{"deleted", "replaced"} {
		t.Run(how, func(t *testing.T) {
			dir := t.TempDir()
			db, err := store.Open(dir, store.Options{Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if _, err := db.CreateTable(store.TableDef{Name: "t", Key: []store.KeyColumn{{Name: "id", Type: store.String}}}); err != nil {
				t.Fatal(err)
			}
			if got := lockChild(t, dir); got != "locked" {
				t.Fatalf("second process while the store is open: %s", got)
			}
			lock := filepath.Join(dir, "LOCK")
			if err := os.Remove(lock); err != nil {
				t.Fatal(err)
			}
			if how == "replaced" {
				if err := os.WriteFile(lock, nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if got := lockChild(t, dir); got != "locked" {
				t.Fatalf("second process after LOCK was %s: %s", how, got)
			}
			for range 2 {
				_, err := txn.Update(db, func(tx *txn.Tx) error { return tx.Put("t", store.Key{"a"}, nil, 0, 1) })
				if !errors.Is(err, store.ErrLocked) {
					t.Fatalf("commit after LOCK was %s: %v, want ErrLocked", how, err)
				}
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			if got := lockChild(t, dir); got != "opened" {
				t.Fatalf("second process after Close: %s", got)
			}
		})
	}
}
