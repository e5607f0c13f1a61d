package server

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bitempo/bitempo/store"
)

// TestServeReadOnlyStoreSaysNoClientMayWrite serves a store opened
// read-only without tokens: the line Serve starts with says that no client
// may write, not that every client may.
func TestServeReadOnlyStoreSaysNoClientMayWrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	db, err := store.Open(path, store.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if db, err = store.Open(path, store.Options{ReadOnly: true, Logger: slog.New(slog.DiscardHandler)}); err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx, stop := context.WithCancel(context.Background())
	var log bytes.Buffer
	if err := Serve(ctx, db, Config{Listen: "127.0.0.1:0", Log: &log, Ready: func(net.Addr) { stop() }}); err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(log.String(), "\n")
	if !strings.Contains(first, "read-only store: no client may write") {
		t.Fatalf("Serve's first line: %q", first)
	}
}
