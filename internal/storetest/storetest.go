// Package storetest opens stores on a tuned Pebble engine (a file system of
// the test's, small memtables, a Tune hook) for the tests and benchmarks of
// the packages above store. A program does the same in two calls:
// pebble.Open, then store.OpenEngine.
package storetest

import (
	"github.com/bitempo/bitempo/engine/pebble"
	"github.com/bitempo/bitempo/store"
)

// Open opens the store in dir on a Pebble engine opened with popts; the
// engine opens read-only, or only an existing store, when opts says so, and
// logs to opts.Logger unless popts names a logger.
func Open(dir string, popts pebble.Options, opts store.Options) (*store.DB, error) {
	popts.ReadOnly = popts.ReadOnly || opts.ReadOnly
	popts.MustExist = popts.MustExist || opts.MustExist
	popts.InMemory = popts.InMemory || opts.InMemory
	if popts.Logger == nil {
		popts.Logger = opts.Logger
	}
	e, err := pebble.Open(dir, popts)
	if err != nil {
		return nil, err
	}
	return store.OpenEngine(e, dir, opts)
}
