//go:build unix

package typed_test

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time the process has used (user and system). On a
// machine whose cores are shared, it measures a benchmark's work where wall
// time also counts the time spent waiting for a core.
func processCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
