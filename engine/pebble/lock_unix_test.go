//go:build unix

package pebble

import (
	"os/exec"
	"sync"
	"sync/atomic"
	"testing"
)

// TestDirLockReleasedWhileChildrenStart checks that releasing the directory
// lock frees it at once even while other goroutines start child processes,
// each of which shares the process's open files from its fork to its exec.
func TestDirLockReleasedWhileChildrenStart(t *testing.T) {
	truePath, err := exec.LookPath("true")
	if err != nil {
		t.Skip("no true command on PATH")
	}
	dir := t.TempDir()
	var stop atomic.Bool
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				_ = exec.Command(truePath).Run()
			}
		}()
	}
	defer func() { stop.Store(true); wg.Wait() }()
	for i := range 3000 {
		l, err := lockDir(dir, false)
		if err != nil {
			t.Fatalf("lock %d, right after the previous one was released: %v", i, err)
		}
		l.release()
	}
}
