// Command bench is the entry point of the peer benchmark harness, which measures
// bitempo against raw Pebble, SQLite and DuckDB on the same data (see
// BENCHMARKS.md at the repository root):
//
//	go run ./tools/bench --scale small|medium|large [--only 1,3,...] [--out FILE.md]
//
// The harness itself lives in the nested module tools/bench/harness, so that the
// library's dependency graph never carries SQLite and DuckDB (cgo); a package of
// another module cannot be named from this one, so this command builds the
// harness with the go command in PATH and executes it with the same
// arguments, standard streams and working directory (relative --out and
// --scaling paths mean what they say), and exits with its status. It needs the
// repository's source tree, as "go run" does.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
)

func main() { os.Exit(run(os.Args[1:], os.Stderr)) }

// run builds the harness and runs it with args; the result is the exit status.
// An interrupt or termination of the launcher stops the build, or is passed on to
// the harness (SIGTERM), and the launcher waits for it before removing its
// temporary directory: it never leaves a harness or its binary behind.
func run(args []string, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	dir, err := harnessDir()
	if err != nil {
		fmt.Fprintf(stderr, "bench: %v\n", err)
		return 2
	}
	tmp, err := os.MkdirTemp("", "bitempo-bench-")
	if err != nil {
		fmt.Fprintf(stderr, "bench: %v\n", err)
		return 2
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "harness")
	if runtime.GOOS == "windows" {
		bin += ".exe"
	}
	build := exec.CommandContext(ctx, goCommand, "build", "-o", bin, ".")
	build.Dir = dir
	build.Stdout, build.Stderr = stderr, stderr
	if err := build.Run(); err != nil {
		fmt.Fprintf(stderr, "bench: building the harness in %s: %v\n", dir, err)
		return 2
	}
	harness := exec.CommandContext(ctx, bin, args...)
	harness.Stdin, harness.Stdout, harness.Stderr = os.Stdin, os.Stdout, stderr
	harness.Cancel = func() error {
		if err := harness.Process.Signal(syscall.SIGTERM); err != nil {
			return harness.Process.Kill() // no SIGTERM on this system
		}
		return nil
	}
	return exitStatus(harness.Run(), stderr)
}

// exitStatus maps the result of running the harness to this command's status:
// the harness's own status when it exited, 2 when it could not be run.
func exitStatus(err error, stderr io.Writer) int {
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit) && exit.ExitCode() >= 0:
		return exit.ExitCode()
	}
	fmt.Fprintf(stderr, "bench: running the harness: %v\n", err)
	return 2
}

// goCommand is the go command that builds the harness: the one in PATH, which
// is the one "go run ./tools/bench" was started with.
const goCommand = "go"

// harnessDir finds the harness module: next to this file's source when the
// binary was built from a checkout (as "go run" does), else under the root of
// the module containing the working directory.
func harnessDir() (string, error) {
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		if dir := filepath.Join(filepath.Dir(file), "harness"); isHarness(dir) {
			return dir, nil
		}
	}
	out, err := exec.Command(goCommand, "env", "GOMOD").Output()
	if err == nil {
		if mod := strings.TrimSpace(string(out)); mod != "" && mod != os.DevNull {
			if dir := filepath.Join(filepath.Dir(mod), "tools", "bench", "harness"); isHarness(dir) {
				return dir, nil
			}
		}
	}
	return "", errors.New("cannot find the harness module (tools/bench/harness): run this from a bitempo checkout")
}

// isHarness reports whether dir holds the harness module.
func isHarness(dir string) bool {
	return fileExists(filepath.Join(dir, "go.mod")) && fileExists(filepath.Join(dir, "main.go"))
}

func fileExists(path string) bool {
	info, err := os.Stat(path)
	return err == nil && info.Mode().IsRegular()
}
