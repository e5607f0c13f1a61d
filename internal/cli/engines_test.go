package cli

import (
	"strings"
	"testing"
)

// TestEtcdNeedsItsBuild: the plain tool refuses --db etcd://... with a message
// that names the build to use, for every kind of command, and writes nothing.
func TestEtcdNeedsItsBuild(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, args := range [][]string{
		{"create", "t", "--key", "id"},
		{"tables"},
		{"verify"},
		{"compact"},
	} {
		r := bt(t, dir, "", append(args, "--db", "etcd://127.0.0.1:2379/x")...)
		if r.code != exitFailure || !strings.Contains(r.stderr, "no such storage engine") ||
			!strings.Contains(r.stderr, "cd etcd && go run ./cmd/bitempo") {
			t.Fatalf("%v: status %d, stderr %q", args, r.code, r.stderr)
		}
	}
}

func TestDBScheme(t *testing.T) {
	t.Parallel()
	for db, want := range map[string]string{
		"etcd://h:1/p": "etcd", "./bitempo.db": "", "/tmp/x": "", "dir://": "dir", "a.b://x": "", "://x": "",
	} {
		if got := dbScheme(db); got != want {
			t.Errorf("dbScheme(%q) = %q, want %q", db, got, want)
		}
	}
}
