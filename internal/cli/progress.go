package cli

import (
	"io"
	"time"

	"github.com/schollz/progressbar/v3"
)

// progress draws a progress bar on stderr while a long command runs, with
// schollz/progressbar (a count, a rate and the time left, redrawn at most ten
// times a second, erased when done). It is off unless stderr is a terminal and
// --quiet is not given, so logs and pipes never see carriage returns.
type progress struct {
	bar *progressbar.ProgressBar // nil when off
}

func (a *app) newProgress(label string, total int) *progress {
	if !a.stderrTTY || a.quiet || total <= 0 {
		return &progress{}
	}
	return &progress{bar: newBar(a.stderr, label, total)}
}

func newBar(w io.Writer, label string, total int) *progressbar.ProgressBar {
	return progressbar.NewOptions(total,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(label),
		progressbar.OptionSetWidth(30),
		progressbar.OptionShowCount(),
		progressbar.OptionSetItsString("rows"),
		progressbar.OptionShowIts(),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionUseANSICodes(true),
	)
}

// add records n more rows done.
func (p *progress) add(n int) {
	if p.bar != nil && n > 0 {
		_ = p.bar.Add(n)
	}
}

// finish erases the bar.
func (p *progress) finish() {
	if p.bar != nil {
		_ = p.bar.Finish()
	}
}
