package server

import (
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bitempo/bitempo/internal/testutil"
	"github.com/bitempo/bitempo/store"
)

// binary is the bitempo tool, built once for the tests that run it as a user
// would; "" when there is no go command to build it with (needBinary).
var binary string

func TestMain(m *testing.M) {
	if config := os.Getenv(loadClientEnv); config != "" {
		os.Exit(runLoadClient(config)) // a client process of TestServeUnderLoadSurvivesKill
	}
	if _, err := exec.LookPath("go"); err != nil {
		os.Exit(m.Run()) // the tests that run the binary skip
	}
	dir, err := os.MkdirTemp("", "bitempo-server-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "bitempo")
	build := exec.Command("go", "build", "-o", binary, "github.com/bitempo/bitempo/tools/bitempo")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build bitempo:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// needBinary skips t when the bitempo binary could not be built.
func needBinary(t testing.TB) {
	t.Helper()
	if binary == "" {
		t.Skip("needs the bitempo binary, which TestMain builds with the go command: there is none on PATH")
	}
}

// tool runs the binary in dir with args and stdin.
func tool(t testing.TB, dir, stdin string, env []string, args ...string) testutil.Result {
	t.Helper()
	needBinary(t)
	cmd := exec.Command(binary, args...)
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Env = append(os.Environ(), env...)
	return testutil.Run(t, cmd)
}

// serveStore opens (creating) the store at path and serves it in process;
// the server and the store close when the test ends.
func serveStore(t testing.TB, path string, opts Options) (*httptest.Server, *store.DB) {
	t.Helper()
	db, err := store.Open(path, store.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(Handler(db, opts))
	t.Cleanup(func() {
		srv.Close()
		if err := db.Close(); err != nil {
			t.Errorf("close the served store: %v", err)
		}
	})
	return srv, db
}

// writeFile creates a file in dir.
func writeFile(t testing.TB, dir, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
