package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/bitempo/bitempo/engine"
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

// Backup writes a consistent copy of the open store to destDir, which must not
// exist yet and must be on the store's file system (the engine's: the
// operating system's unless the Pebble engine was given another). Readers and writers keep running while it is
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
	cp, ok := db.engine.(engine.Checkpointer)
	if !ok {
		return db.unsupported("backup (a checkpoint)")
	}
	release, err := db.holdWritable("open the store for writing to back it up")
	if err != nil {
		return err
	}
	defer release()
	start := time.Now()
	if err := cp.Checkpoint(destDir); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%w: %s", ErrBackupExists, destDir)
		}
		return fmt.Errorf("bitempo: backup to %s: %w", destDir, err)
	}
	db.opts.Logger.Info("bitempo: backup written", "dir", db.dir, "dest", destDir, "took", time.Since(start))
	return nil
}
