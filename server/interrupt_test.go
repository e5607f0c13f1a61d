package server

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestToolInterruptedWhileSendingStdinStopsAtOnce interrupts the tool while
// it sends a load's stdin that is still open: it must stop at once, exit
// 130 and leave nothing loaded, as a local load does, rather than wait for
// its stdin to end.
func TestToolInterruptedWhileSendingStdinStopsAtOnce(t *testing.T) {
	needBinary(t)
	srv, db := customers(t, Options{})
	before := db.LastTx()
	cmd := exec.Command(binary, "load", "customers", "-", "--at", "at", "--db", srv.URL)
	cmd.Dir = t.TempDir()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	if _, err := stdin.Write([]byte("id,city,at\nc9,Lima,2024-05-01\n")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	_ = cmd.Process.Signal(os.Interrupt)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("the interrupted tool still waits for its stdin 10 s later")
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 130 || !strings.Contains(stderr.String(), "interrupted") {
		t.Fatalf("the interrupted tool: %v %q", err, stderr.String())
	}
	time.Sleep(200 * time.Millisecond) // the server ends the cancelled command
	if db.LastTx() != before {
		t.Fatal("the interrupted load committed")
	}
}
