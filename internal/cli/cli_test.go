package cli

import (
	"strings"
	"testing"
)

// TestCommandLineMessages checks the tool's small user-facing messages: --version,
// shell completion, invalid table names, a suggestion for a mistyped command,
// a --since later than --until, JSON on stdin without --format, and create
// stating the table's kind only when it is the default.
func TestCommandLineMessages(t *testing.T) {
	t.Parallel()
	dir := customersStore(t)
	if r := ok(t, dir, "--version"); !strings.HasPrefix(r.stdout, "bitempo ") {
		t.Fatalf("--version: %q", r.stdout)
	}
	for _, shell := range []string{"bash", "zsh", "fish", "powershell"} {
		if r := ok(t, dir, "completion", shell); !strings.Contains(r.stdout, "bitempo") {
			t.Fatalf("completion %s: %q", shell, r.stdout[:min(len(r.stdout), 200)])
		}
	}
	fails(t, dir, 2, `table name "my table" has a space or control character`, "create", "my table", "--key", "id", "--db", "db")
	fails(t, dir, 2, `table name "tab\tle"`, "create", "tab\tle", "--key", "id", "--db", "db")
	r := fails(t, dir, 2, `unknown command "dupm" for "bitempo"; did you mean dump?`, "dupm")
	if strings.Contains(r.stderr, "; ;") || strings.Contains(r.stderr, "\t") {
		t.Fatalf("unknown command message: %q", r.stderr)
	}
	first := firstTx(t, dir)
	fails(t, dir, 2, "is later than --until", "changes", "customers", "--since", "2999-01-01T00:00:00Z", "--until", first, "--db", "db")
	r = bt(t, dir, `{"customer_id":"c9","valid_from":"2024-01-01","valid_to":""}`+"\n", "load", "customers", "-", "--from", "valid_from", "--to", "valid_to", "--db", "db")
	if r.code != 2 || !strings.Contains(r.stderr, "it looks like JSON lines, not CSV; give --format jsonl") {
		t.Fatalf("JSON on stdin: exit %d, %q", r.code, r.stderr)
	}
	r = ok(t, dir, "create", "events", "--key", "id", "--db", "db")
	if !strings.Contains(r.stdout, "the default kind, periods") || !strings.Contains(r.stdout, "--kind changes") {
		t.Fatalf("create does not state the kind: %q", r.stdout)
	}
	if r = ok(t, dir, "create", "events2", "--key", "id", "--kind", "periods", "--db", "db"); strings.Contains(r.stdout, "default kind") {
		t.Fatalf("an explicit kind is explained as a default: %q", r.stdout)
	}
}
