// Package testlong gates bitempo's long tests behind one environment variable,
// BITEMPO_LONG.
//
// The README's test command, go test ./..., is the quick run: it must finish in
// a few minutes on a 2-core machine. A test is long when its running time comes
// from its size rather than from what it checks: crash cycles (a child process
// killed and the store reopened, again and again), large loads (100,000 rows,
// 64 MiB values), interrupt matrices (a signal at every stage of a command),
// and randomized runs with large iteration counts (rapid checks, random
// operation logs, random facts).
//
// Tests that are inherently long call Skip, which skips them unless
// BITEMPO_LONG=1; a matrix of slow cases keeps one or a few cases in the quick
// run and skips the others. Randomized tests are not skipped: they call Size
// to run at a fraction of their full size in the quick run (fewer seeds,
// iterations or transactions). Assertions are the same in both runs.
//
// .ci/run sets BITEMPO_LONG=1 for the README's test command, so CI runs every
// test at full size. Its race step (go test -race -short) does not: -short
// scales further down, as before.
package testlong

import (
	"os"
	"strconv"
	"testing"
)

// Env is the environment variable that turns long tests on: BITEMPO_LONG=1.
const Env = "BITEMPO_LONG"

// Enabled reports whether long tests run: BITEMPO_LONG is 1 (or another true
// value of strconv.ParseBool).
func Enabled() bool {
	on, _ := strconv.ParseBool(os.Getenv(Env))
	return on
}

// Skip skips t unless long tests run; why says what makes it long, as in
// "loads 100,000 rows".
func Skip(t testing.TB, why string) {
	t.Helper()
	if !Enabled() {
		t.Skipf("long test (%s): set %s=1 to run it", why, Env)
	}
}

// Size returns long when long tests run and quick otherwise: the size of a
// randomized test (iterations, rows, the list of its seeds) in the two runs.
func Size[T any](long, quick T) T {
	if Enabled() {
		return long
	}
	return quick
}
