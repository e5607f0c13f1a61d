package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/bitempo/bitempo/store"
)

// A load of stdin first copies it to a file (the spool), then loads that file
// as it would any other: stdin cannot be read twice, and the bounded load
// reads its input twice (load_stream.go). The spool goes next to the store,
// in the store directory's parent, so that it lands on the store's disk rather
// than on a /tmp that may be memory (tmpfs); if that directory cannot be
// written, os.TempDir() takes it. It is named .bitempo-stdin-<hash of the
// store's path>-*, removed when the load ends, fails or is interrupted, and
// after a kill by the next load of the same store (which holds the store's
// lock, so no other load is using it). It is never in the store directory,
// which a backup or copy would carry along (docs/design/load-stdin-spool.md).

// spoolPlace returns the directory of a store's stdin spools and their name
// prefix; dir is empty for a store without a directory.
func spoolPlace(db *store.DB) (dir, prefix string) {
	abs, err := filepath.Abs(db.Dir())
	if err != nil || db.Dir() == "" {
		return "", ""
	}
	h := sha256.Sum256([]byte(abs))
	return filepath.Dir(abs), ".bitempo-stdin-" + hex.EncodeToString(h[:6]) + "-"
}

// removeLeftoverSpools removes the stdin spools a killed load of this store
// left behind, in both places a spool may be.
func removeLeftoverSpools(db *store.DB) {
	dir, prefix := spoolPlace(db)
	if dir == "" {
		return
	}
	for _, d := range []string{dir, os.TempDir()} {
		left, _ := filepath.Glob(filepath.Join(d, prefix+"*"))
		for _, f := range left {
			_ = os.Remove(f)
		}
	}
}

// spoolStdin copies stdin to a new spool file and returns its path; the
// caller removes it. A signal during the copy removes the spool and ends the
// process (exitDuringRead).
func (a *app) spoolStdin(ctx context.Context, db *store.DB, table string) (string, error) {
	dir, prefix := spoolPlace(db)
	if dir == "" {
		dir, prefix = os.TempDir(), ".bitempo-stdin-"
	}
	f, err := os.CreateTemp(dir, prefix)
	if err != nil {
		if f, err = os.CreateTemp(os.TempDir(), prefix); err != nil {
			return "", fmt.Errorf("load %s: cannot make a file to copy stdin to (in %s or %s): %w", table, dir, os.TempDir(), err)
		}
	}
	name := f.Name()
	err = a.exitDuringRead(ctx, table, "stdin", func() { _ = os.Remove(name) }, func() error {
		_, err := io.Copy(f, a.stdin)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return err
	})
	if err != nil {
		_ = os.Remove(name)
		return "", fmt.Errorf("load %s: copying stdin to %s: %w; nothing loaded", table, name, err)
	}
	return name, nil
}
