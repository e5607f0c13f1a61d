package cli

import (
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// createRunFile creates a run file in dir (the system's temporary directory
// when empty) with no name at all (O_TMPFILE), so that no moment exists at
// which a killed load leaves it behind. A file system without O_TMPFILE gets
// a named file unlinked at once (createNamedRunFile).
func createRunFile(dir string) (*os.File, string, error) {
	if dir == "" {
		dir = os.TempDir()
	}
	fd, err := unix.Open(dir, unix.O_TMPFILE|unix.O_RDWR|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return createNamedRunFile(dir)
	}
	return os.NewFile(uintptr(fd), filepath.Join(dir, runFilePrefix+"(unnamed)")), "", nil
}
