package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestHarnessDirIsTheNestedModule(t *testing.T) {
	dir, err := harnessDir()
	if err != nil {
		t.Fatal(err)
	}
	mod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(mod, []byte("module github.com/bitempo/bitempo/tools/bench/harness\n")) {
		t.Fatalf("%s/go.mod is not the harness module:\n%s", dir, mod)
	}
}

func TestExitStatusIsTheHarnessStatus(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("uses sh")
	}
	var stderr strings.Builder
	if got := exitStatus(exec.Command("sh", "-c", "exit 3").Run(), &stderr); got != 3 {
		t.Fatalf("harness exited 3: status %d", got)
	}
	if got := exitStatus(exec.Command("sh", "-c", "exit 0").Run(), &stderr); got != 0 {
		t.Fatalf("harness exited 0: status %d", got)
	}
	if stderr.Len() != 0 {
		t.Fatalf("an exit of the harness printed %q", stderr.String())
	}
	if got := exitStatus(exec.Command(filepath.Join(t.TempDir(), "absent")).Run(), &stderr); got != 2 {
		t.Fatalf("a harness that could not start: status %d, want 2", got)
	}
	if !strings.Contains(stderr.String(), "running the harness") {
		t.Fatalf("a harness that could not start printed %q", stderr.String())
	}
}
