package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// These tests check that data comes back as it went in, and that a store the
// user may not open says so.

// TestLoadDecimalsKeptExact: a decimal a float64 cannot hold is not
// rounded silently; its column is kept as text, with a warning.
func TestLoadDecimalsKeptExact(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ok(t, dir, "create", "t", "--key", "id", "--axis", "int", "--db", "db")
	write(t, dir, "d.csv", "id,at,amount,price\na,1,12345678901234567890.5,1.50\nb,1,2.25,0.1\n")
	r := ok(t, dir, "load", "t", "d.csv", "--at", "at", "--db", "db")
	if !strings.Contains(r.stderr, `warning: d.csv line 2, column "amount": 12345678901234567890.5 cannot be held exactly by a float64, so the column is kept as text`) {
		t.Fatalf("no warning: %s", r.stderr)
	}
	if strings.Contains(r.stderr, `"price"`) {
		t.Fatalf("a warning for exact decimals: %s", r.stderr)
	}
	r = ok(t, dir, "scan", "t", "--valid", "1", "--format", "json", "--db", "db")
	wantLines(t, r.stdout,
		`{"id":"a","valid_from":1,"valid_to":null,"sk":1,"amount":"12345678901234567890.5","price":1.5}`,
		`{"id":"b","valid_from":1,"valid_to":null,"sk":2,"amount":"2.25","price":0.1}`)
	// JSON numbers likewise; a declared float64 rounds as asked, silently.
	write(t, dir, "d.jsonl", `{"id":"c","at":1,"big":12345678901234567890.5}`+"\n")
	r = ok(t, dir, "load", "t", "d.jsonl", "--at", "at", "--db", "db")
	if !strings.Contains(r.stderr, `column "big": 12345678901234567890.5 cannot be held exactly`) {
		t.Fatalf("no warning for JSON: %s", r.stderr)
	}
	r = ok(t, dir, "get", "t", "c", "--valid", "1", "--format", "csv", "--db", "db")
	if !strings.Contains(r.stdout, "12345678901234567890.5") {
		t.Fatalf("JSON decimal rounded: %s", r.stdout)
	}
	write(t, dir, "e.csv", "id,at,rounded\nd,1,12345678901234567890.5\n")
	r = ok(t, dir, "load", "t", "e.csv", "--at", "at", "--types", "rounded=float64", "--db", "db")
	if strings.Contains(r.stderr, "warning") {
		t.Fatalf("declared float64 warned: %s", r.stderr)
	}
}

// TestLoadInvalidUTF8: bytes that are not UTF-8 are rejected with
// their line and column, and nothing is loaded.
func TestLoadInvalidUTF8(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ok(t, dir, "create", "t", "--key", "id", "--axis", "int", "--db", "db")
	write(t, dir, "bad.csv", "id,at,city\na,1,Oslo\nb,1,Troms\xf8\n")
	fails(t, dir, 1, `bad.csv line 3, column 3 (city): invalid UTF-8 (byte 0xf8 at byte 6 of the cell)`, "load", "t", "bad.csv", "--at", "at", "--db", "db")
	write(t, dir, "bad.jsonl", "{\"id\":\"a\",\"at\":1,\"city\":\"Troms\xf8\"}\n")
	fails(t, dir, 1, `bad.jsonl line 1: invalid UTF-8 (byte 0xf8 at byte 31 of the line)`, "load", "t", "bad.jsonl", "--at", "at", "--db", "db")
	r := ok(t, dir, "stats", "--format", "csv", "--db", "db")
	if !strings.Contains(r.stdout, "t,periods,0,0,0,0,0") {
		t.Fatalf("something was loaded: %s", r.stdout)
	}
	// --skip-bad loads the good rows and reports the bad one.
	r = ok(t, dir, "load", "t", "bad.csv", "--at", "at", "--skip-bad", "--db", "db")
	if !strings.Contains(r.stderr, "skipped bad.csv line 3, column 3 (city): invalid UTF-8") {
		t.Fatalf("skip: %s", r.stderr)
	}
}

// TestTableOutputCapsWidth: a huge value does not flood a terminal
// table; csv and json print it whole.
func TestTableOutputCapsWidth(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ok(t, dir, "create", "t", "--key", "id", "--axis", "int", "--db", "db")
	big := strings.Repeat("x", 100_000)
	write(t, dir, "big.csv", "id,at,note\na,1,"+big+"\nb,1,short\n")
	ok(t, dir, "load", "t", "big.csv", "--at", "at", "--db", "db")
	r := ok(t, dir, "scan", "t", "--valid", "1", "--format", "table", "--db", "db")
	for _, line := range strings.Split(r.stdout, "\n") {
		if len(line) > 200 {
			t.Fatalf("a table line of %d bytes", len(line))
		}
	}
	if !strings.Contains(r.stdout, strings.Repeat("x", maxCellWidth-1)+"…") || !strings.Contains(r.stderr, "1 value cut to 60 characters in table output; --format csv or json prints every value whole") {
		t.Fatalf("cut value not marked:\n%s\n%s", r.stdout, r.stderr)
	}
	r = ok(t, dir, "scan", "t", "--valid", "1", "--format", "csv", "--db", "db")
	if !strings.Contains(r.stdout, big) {
		t.Fatal("csv output cut a value")
	}
}

// TestPermissionDenied: a store its user may read but not write is read, and a
// write to it is reported as denied permission, not as locked by another process.
func TestPermissionDenied(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ok(t, dir, "create", "t", "--key", "id", "--db", "db")
	store := filepath.Join(dir, "db")
	run := func(args ...string) result {
		var cmd *exec.Cmd
		if os.Getuid() == 0 {
			setpriv, err := exec.LookPath("setpriv")
			if err != nil {
				t.Skip("running as root without setpriv: cannot run as another user")
			}
			cmd = exec.Command(setpriv, append([]string{"--reuid=65534", "--regid=65534", "--clear-groups", binary}, args...)...)
		} else {
			cmd = exec.Command(binary, args...)
		}
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		return result{out.String(), errb.String(), code}
	}
	// Readable by everyone, writable by its owner only (root's store read by
	// another user; or, as a normal user, a store made read-only).
	for _, p := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	err := filepath.Walk(store, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if info.IsDir() {
			return os.Chmod(p, 0o555)
		}
		return os.Chmod(p, 0o444)
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = filepath.Walk(store, func(p string, _ os.FileInfo, _ error) error { return os.Chmod(p, 0o755) })
	})
	// Reading needs read access only: read commands open the store read-only.
	if r := run("tables", "--db", store); r.code != 0 || !strings.Contains(r.stdout, "t") {
		t.Fatalf("reading a store its user cannot write: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	// Writing needs write access, and says so.
	r := run("create", "u", "--key", "id", "--db", store)
	if r.code != 1 || !strings.Contains(r.stderr, "bitempo: permission denied: cannot open store") || strings.Contains(r.stderr, "locked") {
		t.Fatalf("writing a store its user cannot write: exit %d, stderr %q", r.code, r.stderr)
	}
}
