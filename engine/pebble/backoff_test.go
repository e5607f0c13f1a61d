package pebble

import (
	"errors"
	"log/slog"
	"testing"
	"time"
)

// TestBackgroundErrorPausesTheRetry checks the backoff the engine adds to
// Pebble's compactions: Pebble reschedules a failed compaction at once, and
// reports each failure to EventListener.BackgroundError on the compaction's
// goroutine before it does. Without a pause, a failed store's compactions,
// whose output files the fence refuses, spin until Close: a process with a
// few dozen failed stores left open allocated about 300 MB a second. The
// handler must hold each retry for failedPause.
func TestBackgroundErrorPausesTheRetry(t *testing.T) {
	h := &health{logger: slog.New(slog.DiscardHandler)}
	l := h.listener()
	const n = 3
	start := time.Now()
	for range n {
		l.BackgroundError(errors.New("compaction: output file refused"))
	}
	if took := time.Since(start); took < n*failedPause {
		t.Fatalf("%d background errors returned after %v; want each held for at least %v", n, took, failedPause)
	}
	if f := h.bgFail.Load(); f == nil {
		t.Fatal("the background error was not recorded")
	}
}
