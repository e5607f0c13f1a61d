package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/bitempo/bitempo/store"
	"github.com/spf13/cobra"
)

// ServeConfig is the serve command's flags, handed to the build's ServeFunc.
type ServeConfig struct {
	Name      string // what messages call the store: --db
	Listen    string // host:port
	TokenFile string
	TLSCert   string
	TLSKey    string
	MaxBody   int64
	// ReadTimeout and WriteTimeout bound how long the server waits for a
	// client to send or take the next piece of a request or answer;
	// IdleTimeout how long a connection may wait for its next request.
	ReadTimeout, WriteTimeout, IdleTimeout time.Duration
	// ShutdownTimeout is how long a signal lets the commands in flight finish
	// before their requests are cancelled (a load then rolls back).
	ShutdownTimeout time.Duration
	// Log receives one line per start, stop and refused connection.
	Log io.Writer
}

// ServeFunc serves db until ctx ends, then drains the requests in flight. It
// does not close db.
type ServeFunc func(ctx context.Context, db *store.DB, cfg ServeConfig) error

func (a *app) serveCmd() *cobra.Command {
	cfg := ServeConfig{}
	cmd := &cobra.Command{
		Use:   "serve [--listen HOST:PORT] [--token-file FILE] [--tls-cert FILE --tls-key FILE]",
		Short: "Own the store and serve every command of the tool, a JSON API and pages over HTTP",
		Long: `Open the store read-write and serve it over HTTP until SIGINT or SIGTERM: every
command of the tool runs against it with --db http://HOST:PORT (https:// with
TLS) and prints exactly what it prints on a local store; programs read it
through a JSON API (/v1/...), and a browser shows its tables, keys and each
key's bitemporal diagram (/).

The server listens on 127.0.0.1:7420 by default. An address that is not a
loopback one requires --token-file: a file of bearer tokens, one per line,
read:TOKEN (may run reads only) or write:TOKEN (may run everything); blank lines
and lines starting with # are ignored. Clients send theirs from the environment
variable BITEMPO_TOKEN. --tls-cert and --tls-key serve https; a client trusts
the system's certificates, or those of the PEM file in BITEMPO_CA_FILE.

Writes through the server take the store's writer lock one at a time; reads run
beside them on snapshots. A signal stops new requests, lets those in flight
finish for up to --shutdown-timeout (then cancels them: a load rolls back), and
closes the store. demo, recover and serve itself run on local stores only.`,
		Example: `  bitempo serve --db customers.db
  bitempo get customers c1 --db http://127.0.0.1:7420
  bitempo serve --db customers.db --listen 0.0.0.0:7420 --token-file tokens.txt --tls-cert cert.pem --tls-key key.pem`,
		Args: argsRange(0, 0, "no arguments"),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			if a.serve == nil {
				return fmt.Errorf("serve: this build of the tool has no server (build tools/bitempo)")
			}
			if a.shared != nil || remoteDB([]string{"--db", a.db}) != "" {
				return usagef("serve: --db must be a store directory")
			}
			db, err := a.openStore(store.Options{})
			if err != nil {
				return err
			}
			removeLoadLeftovers(db)
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			cfg.Name, cfg.Log = a.db, a.stderr
			serr := a.serve(ctx, db, cfg)
			if cerr := db.Close(); serr == nil && cerr != nil {
				serr = fmt.Errorf("serve: close the store: %w", cerr)
			}
			return serr
		}),
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Listen, "listen", "127.0.0.1:7420", "address to listen on, HOST:PORT (a non-loopback host requires --token-file)")
	f.StringVar(&cfg.TokenFile, "token-file", "", "file of bearer tokens, one per line: read:TOKEN or write:TOKEN")
	f.StringVar(&cfg.TLSCert, "tls-cert", "", "PEM certificate (chain) to serve https with, with --tls-key")
	f.StringVar(&cfg.TLSKey, "tls-key", "", "PEM private key of --tls-cert")
	f.Int64Var(&cfg.MaxBody, "max-body", 1<<30, "largest request body in bytes (a command's uploaded files and stdin)")
	f.DurationVar(&cfg.ReadTimeout, "read-timeout", time.Minute, "longest wait for the next piece of a request")
	f.DurationVar(&cfg.WriteTimeout, "write-timeout", time.Minute, "longest wait for a client to take the next piece of an answer")
	f.DurationVar(&cfg.IdleTimeout, "idle-timeout", 2*time.Minute, "longest a kept-alive connection waits for its next request")
	f.DurationVar(&cfg.ShutdownTimeout, "shutdown-timeout", time.Minute, "on SIGINT or SIGTERM, how long commands in flight may finish before they are cancelled")
	return cmd
}
