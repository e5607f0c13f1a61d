package store

import (
	"fmt"

	"github.com/bitempo/bitempo/engine"
)

// This file is the DB's side of the storage boundary (package engine): its
// commits and the optional capabilities it looks for.

// CommitLimits returns the engine's bounds of one commit (see engine.CommitLimiter);
// ok is false on an engine without bounds (Pebble).
func (db *DB) CommitLimits() (maxWrites, maxBytes int, ok bool) {
	cl, ok := db.engine.(engine.CommitLimiter)
	if !ok {
		return 0, 0, false
	}
	maxWrites, maxBytes = cl.CommitLimits()
	return maxWrites, maxBytes, true
}

// EngineName names the store's engine ("pebble", "etcd").
func (db *DB) EngineName() string { return db.engine.Name() }

// unsupported returns an error wrapping ErrUnsupported for op on the DB's engine.
func (db *DB) unsupported(op string) error {
	return fmt.Errorf("%w: %s on the %s engine", ErrUnsupported, op, db.engine.Name())
}

// commit checks writes and commits them through the engine; on a shared
// engine it records the generation the DB's caches now describe. The caller
// holds the writer lock.
func (db *DB) commit(writes []engine.Write, sync bool) error {
	if err := checkWrites(writes); err != nil {
		return err
	}
	if err := db.engine.Commit(writes, sync); err != nil {
		return err
	}
	if se, ok := db.engine.(engine.SharedEngine); ok {
		db.gen.Store(se.CommitGeneration())
	}
	return nil
}

// stuck returns the error of a commit left waiting inside e, or nil.
func stuck(e engine.Engine) error {
	if s, ok := e.(engine.Stucker); ok {
		return s.Stuck()
	}
	return nil
}
