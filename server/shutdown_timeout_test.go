package server

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bitempo/bitempo/internal/wire"
	"github.com/bitempo/bitempo/store"
)

// TestShutdownTimeoutTellsTheClientItsLoadRolledBack ends Serve's context
// while a load of stdin is still reading its input and lets the shutdown
// timeout pass: the load is cancelled, rolls back, and its client still gets
// the whole answer saying so, exit status included, before Serve returns.
func TestShutdownTimeoutTellsTheClientItsLoadRolledBack(t *testing.T) {
	db, err := store.Open(filepath.Join(t.TempDir(), "s.db"), store.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateTable(store.TableDef{Name: "customers", Key: []store.KeyColumn{{Name: "id", Type: store.String}}, Axis: store.AxisDate}); err != nil {
		t.Fatal(err)
	}
	before := db.LastTx()
	ctx, stop := context.WithCancel(context.Background())
	addr := make(chan net.Addr, 1)
	served := make(chan error, 1)
	go func() {
		served <- Serve(ctx, db, Config{Listen: "127.0.0.1:0", ShutdownTimeout: 200 * time.Millisecond, Ready: func(a net.Addr) { addr <- a }})
	}()
	url := "http://" + (<-addr).String()

	// The load's stdin sends its first rows and then stalls, open.
	pr, pw := io.Pipe()
	defer pw.Close()
	type reply struct {
		body []byte
		err  error
	}
	result := make(chan reply, 1)
	go func() {
		resp, err := http.Post(url+wire.Path, wire.ContentType, pr)
		if err != nil {
			result <- reply{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		result <- reply{b, err}
	}()
	_ = wire.WriteHeader(pw, &wire.Header{Version: wire.Version, Args: []string{"load", "customers", "-", "--at", "at"}, Stdin: true})
	_, _ = io.WriteString(pw, "id,city,at\nk1,Lima,2024-05-01\n")
	time.Sleep(200 * time.Millisecond)
	stop()

	var r reply
	select {
	case r = <-result:
	case <-time.After(30 * time.Second):
		t.Fatal("no answer 30 s after the shutdown timeout")
	}
	if r.err != nil {
		t.Fatalf("the load's answer was cut off: %v", r.err)
	}
	_, stderr, code := answer(t, r.body)
	if code == 0 || !strings.Contains(stderr, "nothing loaded") {
		t.Fatalf("the load cancelled by the shutdown: exit %d %q", code, stderr)
	}
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	if db.LastTx() != before {
		t.Fatal("the cancelled load committed")
	}
	if err := db.Close(); err != nil {
		t.Fatalf("close after the shutdown: %v", err)
	}
}
