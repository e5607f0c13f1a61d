//go:build unix

package pebble

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/bitempo/bitempo/engine"
)

// dirLock is a flock(2) on a store's directory (see lock.go): exclusive, or
// shared for a read-only open.
type dirLock struct{ f *os.File }

// lockDir takes the directory lock of dir, or fails with engine.ErrLocked.
func lockDir(dir string, shared bool) (*dirLock, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", engine.ErrIO, dir, err)
	}
	for {
		how := syscall.LOCK_EX
		if shared {
			how = syscall.LOCK_SH
		}
		err = syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s (its directory is locked)", engine.ErrLocked, dir)
		}
		return nil, fmt.Errorf("%w: lock %s: %v", engine.ErrIO, dir, err)
	}
	return &dirLock{f}, nil
}

// release drops the lock. It unlocks before it closes: a flock belongs to
// the open file, which a child process forked by any goroutine shares until
// it execs, so a close alone would leave the store locked for that moment;
// an unlock releases it for every descriptor of the file.
func (l *dirLock) release() {
	if l != nil {
		_ = syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
		_ = l.f.Close()
	}
}

// sharedLockFS is the file system of a read-only open as Pebble locks it: its
// LOCK file is opened read-only and locked with a shared (read) record lock,
// which a writer's exclusive lock excludes and other readers share. Pebble's
// own Lock opens the file for writing, creating it if need be, which a
// read-only directory refuses. A store without a LOCK file (a backup: Pebble's
// checkpoints have none) is not given one; the shared directory lock, which
// every writer's exclusive one excludes, is its lock then.
type sharedLockFS struct{ vfs.FS }

func (sharedLockFS) Lock(name string) (io.Closer, error) {
	f, err := os.Open(name)
	if errors.Is(err, os.ErrNotExist) {
		return noLock{}, nil
	}
	if err != nil {
		return nil, err
	}
	lk := syscall.Flock_t{Type: syscall.F_RDLCK, Whence: io.SeekStart}
	if err := syscall.FcntlFlock(f.Fd(), syscall.F_SETLK, &lk); err != nil {
		_ = f.Close()
		return nil, err
	}
	return f, nil
}

// noLock is the record lock of a store that has no LOCK file.
type noLock struct{}

func (noLock) Close() error { return nil }
