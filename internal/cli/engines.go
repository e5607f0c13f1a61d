package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/bitempo/bitempo/engine/pebble"
	"github.com/bitempo/bitempo/store"
)

// This file lets a build of the tool open stores on other engines than
// Pebble: --db takes a directory, or a URL whose scheme names an engine the
// build registered (etcd://HOST:PORT[,HOST:PORT...]/PREFIX in the etcd build,
// etcd/cmd/bitempo). The plain build registers none, so that Pebble-only
// users never download etcd and gRPC; its main (tools/bitempo) runs the etcd
// build for such a --db when it can find or build one, and otherwise this
// refuses it with ErrEngineNotBuilt, naming the build to use.

// Opener opens the store a --db URL names (the whole URL, scheme included),
// with opts as the command needs them (ReadOnly, MustExist).
type Opener func(ctx context.Context, url string, opts store.Options) (*store.DB, error)

// Options configure MainWith.
type Options struct {
	// Engines maps a --db URL scheme (such as "etcd") to the function that
	// opens its stores.
	Engines map[string]Opener
	// Serve runs the serve command's server; nil in a build without one.
	Serve ServeFunc
}

// ErrEngineNotBuilt is returned for a --db URL whose engine this build of the
// tool does not have.
var ErrEngineNotBuilt = errors.New("bitempo: this build of the tool has no such storage engine")

// MainWith is Main with engines registered for --db URLs.
func MainWith(args []string, opts Options) int {
	a := newApp()
	a.engines = opts.Engines
	a.serve = opts.Serve
	return a.run(args)
}

// dbScheme returns the scheme of a --db URL, or "" for a directory.
func dbScheme(db string) string {
	scheme, _, ok := strings.Cut(db, "://")
	if !ok || scheme == "" || strings.ContainsAny(scheme, "/\\.") {
		return ""
	}
	return scheme
}

// openStore opens --db with opts: a directory on Pebble, a URL through the
// engine its scheme names.
func (a *app) openStore(opts store.Options) (*store.DB, error) {
	return a.openStoreRecovering(opts, false)
}

// openStoreRecovering is openStore that, with recoverWAL, opens a Pebble store
// whose write-ahead log is damaged by dropping the damage and what follows
// (the Pebble engine's RecoverWAL).
func (a *app) openStoreRecovering(opts store.Options, recoverWAL bool) (*store.DB, error) {
	if a.shared != nil {
		return a.openShared(opts.ReadOnly || recoverWAL)
	}
	opts.Logger = discardLogger()
	opts.ReadOnly = opts.ReadOnly || a.readOnly
	scheme := dbScheme(a.db)
	if scheme == "" {
		e, err := pebble.Open(a.db, pebble.Options{ReadOnly: opts.ReadOnly, MustExist: opts.MustExist,
			LockTimeout: a.wait, Logger: opts.Logger, RecoverWAL: recoverWAL})
		if err != nil {
			return nil, err
		}
		return store.OpenEngine(e, a.db, opts)
	}
	open, ok := a.engines[scheme]
	if !ok {
		hint := ""
		if scheme == "etcd" {
			hint = ": the etcd engine is in its own build of the tool, which this one runs when it is on the PATH as bitempo-etcd " +
				"or when run inside a source checkout of bitempo; from a checkout: cd etcd && go run ./cmd/bitempo ..., " +
				"or go build -o bitempo-etcd ./cmd/bitempo there and put it on the PATH"
		}
		return nil, &failure{fmt.Errorf("%w: --db %s needs the %q engine%s", ErrEngineNotBuilt, a.db, scheme, hint)}
	}
	if recoverWAL {
		return nil, &failure{fmt.Errorf("%w: recover on the %s engine (it has no write-ahead log of its own to repair)", store.ErrUnsupported, scheme)}
	}
	return open(context.Background(), a.db, opts)
}

// onPebble reports whether --db is a Pebble directory.
func (a *app) onPebble() bool { return dbScheme(a.db) == "" }
