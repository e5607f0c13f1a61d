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
// BITEMPO_LONG=1. Randomized tests are not skipped: they call Size, or
// RapidChecks for rapid properties, to run at a fraction of their full size in
// the quick run, so the quick run still exercises every behaviour.
//
// .ci/run sets BITEMPO_LONG=1 for the README's test command, so CI runs every
// test at full size. Its race step (go test -race -short) does not: -short
// scales further down, as before.
package testlong

import (
	"flag"
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

// RapidChecks divides the number of checks of the rapid properties in t by div
// in the quick run (at least one check), for the rest of t. It does nothing
// when long tests run, or when the number was chosen with -rapid.checks or
// RAPID_CHECKS. rapid's own -short division (by 5) still applies on top. t
// must not run in parallel with other rapid tests.
func RapidChecks(t testing.TB, div int) {
	t.Helper()
	f := flag.Lookup("rapid.checks")
	if Enabled() || f == nil || div <= 1 {
		return
	}
	if _, ok := os.LookupEnv("RAPID_CHECKS"); ok {
		return
	}
	explicit := false
	flag.Visit(func(g *flag.Flag) { explicit = explicit || g.Name == f.Name })
	if explicit {
		return
	}
	old := f.Value.String()
	n, err := strconv.Atoi(old)
	if err != nil {
		t.Fatalf("testlong: -rapid.checks=%q is not a number", old)
	}
	if err := f.Value.Set(strconv.Itoa(max(1, n/div))); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Value.Set(old) })
}
