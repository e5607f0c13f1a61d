package pebble

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"

	"github.com/bitempo/bitempo/engine"
)

// This file is the second half of the store's lock. Pebble locks the store with
// a POSIX record lock on its LOCK file, which protects nothing once the file is
// deleted or replaced: a second process then locks the new file and opens the
// store while the first still writes it, and the store is destroyed. An
// operator's mistake, but cheap to guard against, twice over:
//
//   - dirLock: an exclusive flock(2) on the store's directory itself, held from
//     Open to Close. Deleting or replacing files in the directory does not
//     release it, so a second Open fails with engine.ErrLocked whatever happened to
//     LOCK. (Only for stores on the operating system's file system; flock is
//     advisory and, on some network file systems, local to one machine.)
//   - lockFile: the LOCK file's identity (device and inode) at Open, checked on
//     every commit (one stat(2), about a microsecond): if it was removed or
//     replaced, the commit, and every later one, fails with engine.ErrLocked, and the
//     operator learns of it before any other tool does damage.

// lockFile watches the identity of a store's LOCK file.
type lockFile struct {
	path string
	info os.FileInfo
	lost atomic.Pointer[string]
}

// watchLockFile records the identity of dir's LOCK file (on the operating
// system's file system only; nil otherwise).
func watchLockFile(dir string, onDisk bool) (*lockFile, error) {
	if !onDisk {
		return nil, nil
	}
	p := filepath.Join(dir, "LOCK")
	info, err := os.Stat(p)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", engine.ErrIO, p, err)
	}
	return &lockFile{path: p, info: info}, nil
}

// check returns an error wrapping engine.ErrLocked if the LOCK file is no longer the
// one the store locked at Open; from then on it always does.
func (l *lockFile) check() error {
	if l == nil {
		return nil
	}
	if msg := l.lost.Load(); msg != nil {
		return fmt.Errorf("%w: %s", engine.ErrLocked, *msg)
	}
	info, err := os.Stat(l.path)
	var msg string
	switch {
	case errors.Is(err, os.ErrNotExist):
		msg = l.path + " was deleted while the store was open"
	case err != nil:
		return fmt.Errorf("%w: %s: %v", engine.ErrIO, l.path, err)
	case !os.SameFile(info, l.info):
		msg = l.path + " was replaced while the store was open"
	default:
		return nil
	}
	msg += "; another process may be writing the store: writes are refused, close the store and check who else opened it"
	l.lost.CompareAndSwap(nil, &msg)
	return fmt.Errorf("%w: %s", engine.ErrLocked, *l.lost.Load())
}
