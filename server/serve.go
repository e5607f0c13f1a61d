package server

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/bitempo/bitempo/store"
)

// Config is what Serve listens with.
type Config struct {
	Options
	// Listen is HOST:PORT. A host that is not a loopback address requires
	// Tokens: the store is then reachable from other machines.
	Listen string
	// TLSCert and TLSKey, PEM files, serve https when both are set.
	TLSCert, TLSKey string
	// IdleTimeout bounds how long a kept-alive connection waits for its next
	// request (two minutes when zero).
	IdleTimeout time.Duration
	// ShutdownTimeout is how long the requests in flight may finish once ctx
	// ends before they are cancelled (a minute when zero).
	ShutdownTimeout time.Duration
	// Log receives a line when the server starts and stops (nil: none).
	Log io.Writer
	// Ready, when not nil, is called with the address listened on once
	// requests are accepted.
	Ready func(addr net.Addr)
}

// cancelGrace is how long the commands cancelled at the end of a shutdown
// may take to answer their clients before their connections are closed.
const cancelGrace = 10 * time.Second

// ErrInsecure is returned for a listener other machines can reach without tokens.
var ErrInsecure = errors.New("bitempo: a server other machines can reach needs tokens")

// Serve serves db on cfg.Listen until ctx ends, then stops accepting requests,
// lets those in flight finish for up to cfg.ShutdownTimeout, cancels the rest
// (a load in flight rolls back) and returns once every request has ended. It
// does not close db.
func Serve(ctx context.Context, db *store.DB, cfg Config) error {
	if err := checkListen(cfg.Listen, len(cfg.Tokens) > 0); err != nil {
		return err
	}
	if (cfg.TLSCert == "") != (cfg.TLSKey == "") {
		return fmt.Errorf("bitempo: serve: give both --tls-cert and --tls-key, or neither")
	}
	var tlsConfig *tls.Config
	if cfg.TLSCert != "" {
		cert, err := tls.LoadX509KeyPair(cfg.TLSCert, cfg.TLSKey)
		if err != nil {
			return fmt.Errorf("bitempo: serve: %w", err)
		}
		tlsConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("bitempo: serve: %w", err)
	}
	if tlsConfig != nil {
		ln = tls.NewListener(ln, tlsConfig)
	}
	idle, grace := cfg.IdleTimeout, cfg.ShutdownTimeout
	if idle <= 0 {
		idle = 2 * time.Minute
	}
	if grace <= 0 {
		grace = time.Minute
	}
	base, cancel := context.WithCancel(context.Background())
	defer cancel()
	var inflight sync.WaitGroup
	h := Handler(db, cfg.Options)
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			inflight.Add(1)
			defer inflight.Done()
			h.ServeHTTP(w, r)
		}),
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       idle,
		BaseContext:       func(net.Listener) context.Context { return base },
		ErrorLog:          nil,
	}
	scheme := "http"
	if tlsConfig != nil {
		scheme = "https"
	}
	logf(cfg.Log, "bitempo: serving %s at %s://%s (%s)\n", cfg.Name, scheme, ln.Addr(), describeTokens(cfg.Tokens, db.ReadOnly()))
	if cfg.Ready != nil {
		cfg.Ready(ln.Addr())
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return fmt.Errorf("bitempo: serve: %w", err)
	case <-ctx.Done():
	}
	logf(cfg.Log, "bitempo: stopping: waiting up to %s for the requests in flight\n", grace)
	sctx, scancel := context.WithTimeout(context.Background(), grace)
	defer scancel()
	if err := srv.Shutdown(sctx); err != nil {
		logf(cfg.Log, "bitempo: stopping: cancelling the requests still in flight\n")
		cancel()
		// A cancelled command still answers its client (a load says that it
		// rolled back); the connections close once it has, or after
		// cancelGrace.
		cctx, ccancel := context.WithTimeout(context.Background(), cancelGrace)
		defer ccancel()
		if srv.Shutdown(cctx) != nil {
			_ = srv.Close()
		}
	}
	inflight.Wait()
	<-done
	logf(cfg.Log, "bitempo: stopped\n")
	return nil
}

func logf(w io.Writer, format string, args ...any) {
	if w != nil {
		fmt.Fprintf(w, format, args...)
	}
}

func describeTokens(tokens []Token, readOnly bool) string {
	if readOnly {
		return "a read-only store: no client may write"
	}
	if len(tokens) == 0 {
		return "no tokens: every client may write"
	}
	var r, w int
	for _, t := range tokens {
		if t.Access == Write {
			w++
		} else {
			r++
		}
	}
	return fmt.Sprintf("%d read and %d write tokens", r, w)
}

// checkListen refuses a listener other machines can reach without tokens.
func checkListen(addr string, tokens bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("bitempo: serve: --listen %s: %w", addr, err)
	}
	if tokens || isLoopback(host) {
		return nil
	}
	return fmt.Errorf("%w: --listen %s is not a loopback address; give --token-file (lines read:TOKEN or write:TOKEN)", ErrInsecure, addr)
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// ReadTokens reads a token file: one token per line, read:TOKEN (reads only)
// or write:TOKEN (everything); blank lines and lines starting with # are
// skipped. A token is at least 16 characters of printable ASCII without spaces.
func ReadTokens(path string) ([]Token, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("bitempo: token file: %w", err)
	}
	defer f.Close()
	var tokens []Token
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		kind, value, ok := strings.Cut(line, ":")
		var access Access
		switch kind {
		case "read":
			access = Read
		case "write":
			access = Write
		default:
			ok = false
		}
		if !ok || len(value) < 16 || strings.IndexFunc(value, func(r rune) bool { return r <= ' ' || r > '~' }) >= 0 {
			return nil, fmt.Errorf("bitempo: token file %s line %d: want read:TOKEN or write:TOKEN, a token of at least 16 printable characters without spaces", path, n)
		}
		tokens = append(tokens, Token{Value: value, Access: access})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("bitempo: token file %s: %w", path, err)
	}
	if len(tokens) == 0 {
		return nil, fmt.Errorf("bitempo: token file %s holds no token", path)
	}
	return tokens, nil
}
