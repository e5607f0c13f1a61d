//go:build !unix

package pebble

// dirLock is a no-op where flock(2) does not exist: Pebble's LOCK file is the
// only lock there (see lock.go).
type dirLock struct{}

func lockDir(string) (*dirLock, error) { return nil, nil }

func (*dirLock) release() {}
