//go:build unix

package main

import (
	"fmt"
	"os"
	"syscall"
)

// run replaces this process with bin, so that the etcd build gets this
// process's id, streams, signals and working directory, and its exit status is
// the command's. It returns only when the exec fails.
func run(bin string, args []string) int {
	err := syscall.Exec(bin, append([]string{bin}, args...), os.Environ())
	fmt.Fprintf(os.Stderr, "bitempo: run the etcd build of the tool %s: %v\n", bin, err)
	return 1
}
