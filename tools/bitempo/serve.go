package main

import (
	"context"

	"github.com/bitempo/bitempo/internal/cli"
	"github.com/bitempo/bitempo/server"
	"github.com/bitempo/bitempo/store"
)

// serve runs `bitempo serve`: the tool's flags become a server.Config.
func serve(ctx context.Context, db *store.DB, c cli.ServeConfig) error {
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
