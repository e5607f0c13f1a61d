//go:build !unix

package pebble

import "github.com/cockroachdb/pebble/v2/vfs"

// dirLock is a no-op where flock(2) does not exist: Pebble's LOCK file is the
// only lock there (see lock.go).
type dirLock struct{}

func lockDir(string, bool) (*dirLock, error) { return nil, nil }

func (*dirLock) release() {}

// sharedLockFS locks like the file system it wraps where record locks are not
// available to bitempo.
type sharedLockFS struct{ vfs.FS }
