package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// This file takes online backups. A backup is a Pebble checkpoint: the engine's
// immutable table files are hard-linked (copied across file systems) and its
// manifest and write-ahead log are copied up to one point of the log, so the
// copy holds exactly the commits that reached the log before that point and no
// part of a later one. Commits are serialised and each writes its transaction
// time into meta "last_tx" in the same atomic batch, so a backup is a
// transaction-time prefix of the store: every commit up to some transaction time
// and none after. It opens with Open as it is, with no restore step.
//
// Decided here: a backup goes to a directory that does not exist yet and is
// never merged into an existing one (the rejected alternative, refreshing an old
// backup in place, would leave a mixture of two states if it failed midway).

// ErrBackupExists is returned by Backup when the destination already exists.
var ErrBackupExists = errors.New("bitempo: backup destination already exists")

// checkpointer is the part of the engine that takes consistent on-disk copies;
// pebbleEngine implements it.
type checkpointer interface {
	checkpoint(destDir string) error
}

// checkpoint flushes and syncs the write-ahead log (so commits made with NoSync
// are in the copy too) and writes a checkpoint of the whole store to destDir.
func (e *pebbleEngine) checkpoint(destDir string) error {
	if err := e.h.err(); err != nil {
		return err
	}
	return e.h.guard(func() error { return e.db.Checkpoint(destDir, pebble.WithFlushedWAL()) })
}

// Backup writes a consistent copy of the open store to destDir, which must not
// exist yet and must be on the store's file system (the store's Options.FS, the
// operating system's by default). Readers and writers keep running while it is
// taken: the copy holds every commit that finished before Backup was called,
// possibly some that committed while it ran, and never a part of a commit. Open
// destDir like any store to read it; to restore, stop the service and put the
// copy in the store's place (or open the copy directly). Files are hard-linked
// where the file system allows, so a backup on the same file system is fast and
// initially shares disk space with the store; it is complete and independent of
// the store either way. A store opened ReadOnly cannot be backed up (an error
// wrapping ErrReadOnly). ctx is checked before the copy starts; the copy itself is
// not interruptible. A failed backup removes what it wrote.
func (db *DB) Backup(ctx context.Context, destDir string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	cp, ok := db.engine.(checkpointer)
	if !ok {
		return db.unsupported("backup (a checkpoint)")
	}
	if db.opts.InMemory && db.opts.FS == nil {
		return fmt.Errorf("bitempo: backup of a store opened with InMemory: give Options.FS to back it up within that file system")
	}
	if db.opts.ReadOnly {
		// Pebble checkpoints need the engine's OPTIONS file, which a read-only
		// open does not track, and a log flush, which it cannot write.
		return fmt.Errorf("%w: open the store for writing to back it up", ErrReadOnly)
	}
	fsys := db.opts.FS
	if fsys == nil {
		fsys = vfs.Default
	}
	if _, err := fsys.Stat(destDir); err == nil {
		return fmt.Errorf("%w: %s", ErrBackupExists, destDir)
	} else if !errors.Is(err, fs.ErrNotExist) && !os.IsNotExist(err) {
		return fmt.Errorf("bitempo: backup to %s: %w", destDir, err)
	}
	release, err := db.holdOpen()
	if err != nil {
		return err
	}
	defer release()
	start := time.Now()
	if err := cp.checkpoint(destDir); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%w: %s", ErrBackupExists, destDir)
		}
		_ = fsys.RemoveAll(destDir)
		return fmt.Errorf("bitempo: backup to %s: %w", destDir, err)
	}
	db.opts.Logger.Info("bitempo: backup written", "dir", db.dir, "dest", destDir, "took", time.Since(start))
	return nil
}
