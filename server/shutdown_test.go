package server

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bitempo/bitempo/internal/wire"
	"github.com/bitempo/bitempo/store"
)

// TestGracefulShutdown ends Serve's context while a load is in flight: the
// load finishes and commits whole, Serve returns only after it, later
// connections are refused, and the store then closes cleanly.
func TestGracefulShutdown(t *testing.T) {
	db, err := store.Open(filepath.Join(t.TempDir(), "s.db"), store.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateTable(store.TableDef{Name: "customers", Key: []store.KeyColumn{{Name: "id", Type: store.String}}, Axis: store.AxisDate}); err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	addr := make(chan net.Addr, 1)
	served := make(chan error, 1)
	go func() {
		served <- Serve(ctx, db, Config{Listen: "127.0.0.1:0", Ready: func(a net.Addr) { addr <- a }})
	}()
	url := "http://" + (<-addr).String()

	var rows strings.Builder
	rows.WriteString("id,city,at\n")
	for i := range 30000 {
		rows.WriteString("k" + itoa(int64(i)) + ",Lima,2024-05-01\n")
	}
	file := rows.String()
	// The upload is held back until the shutdown has begun.
	pr, pw := io.Pipe()
	result := make(chan []byte, 1)
	go func() {
		_, b := post(t, url, "", pr)
		result <- b
	}()
	_ = wire.WriteHeader(pw, &wire.Header{Version: wire.Version, Args: []string{"load", "customers", "rows.csv", "--at", "at"}, Uploads: []wire.Upload{{Arg: 2, Size: int64(len(file))}}})
	time.Sleep(100 * time.Millisecond)
	stop()
	time.Sleep(100 * time.Millisecond)
	select {
	case err := <-served:
		t.Fatalf("Serve returned with a request in flight: %v", err)
	default:
	}
	_, _ = io.WriteString(pw, file)
	_ = pw.Close()
	_, stderr, code := answer(t, <-result)
	if code != 0 || !strings.Contains(stderr, "30000 rows") {
		t.Fatalf("the load in flight: exit %d %q", code, stderr)
	}
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	if c, err := net.DialTimeout("tcp", strings.TrimPrefix(url, "http://"), time.Second); err == nil {
		c.Close()
		t.Fatal("the server still accepts connections")
	}
	if err := db.Close(); err != nil {
		t.Fatalf("close after the drain: %v", err)
	}
}

// TestServeCommandStopsOnSIGTERM runs bitempo serve, writes through it,
// stops it with SIGTERM and checks that it exits 0 having closed the store,
// which a local command then opens and verifies.
func TestServeCommandStopsOnSIGTERM(t *testing.T) {
	dir := t.TempDir()
	if r := tool(t, dir, "", nil, "create", "customers", "--key", "id", "--db", "s.db"); r.Code != 0 {
		t.Fatal(r.Stderr)
	}
	cmd := exec.Command(binary, "serve", "--db", "s.db", "--listen", "127.0.0.1:0")
	cmd.Dir = dir
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stderr)
	if !sc.Scan() {
		t.Fatal("serve printed nothing")
	}
	m := regexp.MustCompile(`at (http://\S+) `).FindStringSubmatch(sc.Text())
	if m == nil {
		t.Fatalf("serve's first line names no address: %q", sc.Text())
	}
	if r := tool(t, dir, "", nil, "put", "customers", "c1", "--from", "2024-01-01T00:00:00Z", "--set", "city=Oslo", "--db", m[1]); r.Code != 0 {
		t.Fatalf("put through serve: %+v", r)
	}
	if r := tool(t, dir, "", nil, "verify", "--db", "s.db"); r.Code != 1 || !strings.Contains(r.Stderr, "locked") {
		t.Fatalf("a local open beside serve: %+v", r)
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	var rest strings.Builder
	for sc.Scan() {
		rest.WriteString(sc.Text() + "\n")
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("serve after SIGTERM: %v\n%s", err, rest.String())
	}
	if !strings.Contains(rest.String(), "stopped") {
		t.Fatalf("serve's last lines: %q", rest.String())
	}
	if r := tool(t, dir, "", nil, "get", "customers", "c1", "--valid", "2024-02-01T00:00:00Z", "--db", "s.db"); r.Code != 0 || !strings.Contains(r.Stdout, "Oslo") {
		t.Fatalf("after serve: %+v", r)
	}
}
