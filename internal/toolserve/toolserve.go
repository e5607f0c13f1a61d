// Package toolserve is the serve command of the bitempo tool's builds: it
// turns the command's flags (cli.ServeConfig) into a server.Config and serves
// the store, so that the plain build (tools/bitempo) and the etcd build
// (etcd/cmd/bitempo) share one server.
package toolserve

import (
	"context"

	"github.com/bitempo/bitempo/internal/cli"
	"github.com/bitempo/bitempo/server"
	"github.com/bitempo/bitempo/store"
)

// Serve runs `bitempo serve` on db until ctx ends: a cli.ServeFunc.
func Serve(ctx context.Context, db *store.DB, c cli.ServeConfig) error {
	cfg := server.Config{
		Options: server.Options{
			Name: c.Name, MaxBody: c.MaxBody, ReadTimeout: c.ReadTimeout, WriteTimeout: c.WriteTimeout,
		},
		Listen: c.Listen, TLSCert: c.TLSCert, TLSKey: c.TLSKey,
		IdleTimeout: c.IdleTimeout, ShutdownTimeout: c.ShutdownTimeout, Log: c.Log,
	}
	if c.TokenFile != "" {
		tokens, err := server.ReadTokens(c.TokenFile)
		if err != nil {
			return err
		}
		cfg.Tokens = tokens
	}
	return server.Serve(ctx, db, cfg)
}
