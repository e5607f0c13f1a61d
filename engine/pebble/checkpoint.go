package pebble

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/cockroachdb/pebble/v2"

	"github.com/bitempo/bitempo/engine"
)

// Checkpoint (engine.Checkpointer) flushes and syncs the write-ahead log (so
// commits made without sync are in the copy too) and writes a checkpoint of
// the whole store to destDir, on the engine's file system. A store opened
// read-only cannot be checkpointed: Pebble needs the OPTIONS file, which a
// read-only open does not track, and a log flush, which it cannot write.
func (e *Engine) Checkpoint(destDir string) error {
	if err := e.h.err(); err != nil {
		return err
	}
	if e.ownFS {
		return fmt.Errorf("%w: a checkpoint of a store opened with InMemory: give Options.FS to take one within that file system", engine.ErrUnsupported)
	}
	if e.readOnly {
		return fmt.Errorf("%w: open the store for writing to take a checkpoint", engine.ErrReadOnly)
	}
	if _, err := e.fs.Stat(destDir); err == nil {
		return fmt.Errorf("checkpoint to %s: %w", destDir, fs.ErrExist)
	} else if !errors.Is(err, fs.ErrNotExist) && !os.IsNotExist(err) {
		return err
	}
	err := e.h.guard(func() error { return e.db.Checkpoint(destDir, pebble.WithFlushedWAL()) })
	if err != nil && !errors.Is(err, fs.ErrExist) {
		_ = e.fs.RemoveAll(destDir)
	}
	return err
}
