//go:build unix

package pebble

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"github.com/bitempo/bitempo/engine"
)

// dirLock is an exclusive flock(2) on a store's directory (see lock.go).
type dirLock struct{ f *os.File }

// lockDir takes the directory lock of dir, or fails with engine.ErrLocked.
func lockDir(dir string) (*dirLock, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", engine.ErrIO, dir, err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
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

// release drops the lock.
func (l *dirLock) release() {
	if l != nil {
		_ = l.f.Close() // closing the last descriptor releases the flock
	}
}
