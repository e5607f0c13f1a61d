//go:build !linux

package cli

import "os"

// createRunFile creates a run file in dir (the system's temporary directory
// when empty) and unlinks it at once (createNamedRunFile).
func createRunFile(dir string) (*os.File, string, error) { return createNamedRunFile(dir) }
