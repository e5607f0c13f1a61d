package enginetest

import (
	"testing"
	"time"
)

// ProcessCPU returns the CPU time the process has used (user and system), or
// false where it is not measured. On a machine whose cores are shared, it
// measures a benchmark's work where wall time also counts the time spent
// waiting for a core.
func ProcessCPU() (time.Duration, bool) { return processCPU() }

// CPUPerOp reports the process's CPU time per operation as cpu-ns/op beside
// the wall time: run it with -cpu 1 for the work of one goroutine. Call it at
// the start of the benchmark and defer the function it returns.
func CPUPerOp(b *testing.B) func() {
	start, ok := ProcessCPU()
	return func() {
		if end, ok2 := ProcessCPU(); ok && ok2 && b.N > 0 {
			b.ReportMetric(float64(end-start)/float64(b.N), "cpu-ns/op")
		}
	}
}
