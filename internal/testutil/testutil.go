// Package testutil holds the helpers that the tests of several packages
// share: checking a store with store.Verify, opening an in-memory store with
// a ticking clock, the records of a key alive at a transaction time, and
// running a command-line binary. Only tests import it.
//
// It imports no package of this module but store, so that the internal tests
// of txn and query can use it without an import cycle.
package testutil

import (
	"bytes"
	"cmp"
	"os/exec"
	"slices"
	"testing"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/store"
)

// TB is what the helpers that take it need of a test: a *testing.T or B, or a
// property test's *rapid.T.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
}

// Verify fails t unless store.Verify checks db without an error and finds no
// problem.
func Verify(t TB, db *store.DB) {
	t.Helper()
	rep, err := store.Verify(db)
	if err != nil || !rep.OK() {
		t.Fatalf("verify: %v %v", rep, err)
	}
}

// OpenTicking opens a fresh in-memory store whose clock starts at 1000 and
// moves step forward each time it is read, so that every commit has its own
// transaction time; the test's cleanup closes it.
func OpenTicking(t testing.TB, step int64) *store.DB {
	t.Helper()
	clock := int64(1000)
	db, err := store.Open("db", store.Options{InMemory: true, Clock: func() int64 { clock += step; return clock }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// AliveAt returns the records of recs (a key's records, current and retired)
// alive at transaction time tx, in valid order.
func AliveAt(recs []store.Version, tx int64) []store.Version {
	var out []store.Version
	for _, r := range recs {
		if r.AliveAt(tx) {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b store.Version) int { return cmp.Compare(a.ValidFrom, b.ValidFrom) })
	return out
}

// Result is what one run of a command printed, and its exit status.
type Result struct {
	Stdout, Stderr string
	Code           int
}

// Run runs cmd, which must not have its Stdout or Stderr set, and returns
// what it printed and its exit status. A command that cannot be started, or
// fails other than by exiting, fails t.
func Run(t testing.TB, cmd *exec.Cmd) Result {
	t.Helper()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run %v: %v", cmd.Args[1:], err)
	}
	return Result{Stdout: out.String(), Stderr: errb.String(), Code: code}
}

// Decimal parses s as an encoding.Decimal, failing the test if it is not one.
func Decimal(t testing.TB, s string) encoding.Decimal {
	t.Helper()
	d, err := encoding.ParseDecimal(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
