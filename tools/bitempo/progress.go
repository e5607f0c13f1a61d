package main

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// progress draws a progress bar on stderr while a long command runs. It is off
// unless stderr is a terminal and --quiet is not given, so logs and pipes never
// see carriage returns.
type progress struct {
	w     io.Writer
	on    bool
	label string
	total int
	done  int
	last  time.Time
}

func (a *app) newProgress(label string, total int) *progress {
	return &progress{w: a.stderr, on: a.stderrTTY && !a.quiet && total > 0, label: label, total: total}
}

// add records n more units done and redraws at most ten times a second.
func (p *progress) add(n int) {
	p.done += n
	if !p.on || (time.Since(p.last) < 100*time.Millisecond && p.done < p.total) {
		return
	}
	p.last = time.Now()
	const width = 30
	filled := width * p.done / p.total
	bar := strings.Repeat("=", filled) + strings.Repeat(" ", width-filled)
	fmt.Fprintf(p.w, "\r%s [%s] %3d%% %d/%d", p.label, bar, 100*p.done/p.total, p.done, p.total)
}

// finish erases the bar.
func (p *progress) finish() {
	if p.on {
		fmt.Fprint(p.w, "\r\033[K")
	}
}
