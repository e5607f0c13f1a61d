package cli

import (
	"bytes"
	"strings"
	"testing"
)

// TestProgressOnlyOnTerminal checks that the bar draws on a terminal, counting
// rows, and that off a terminal, or with --quiet, nothing is written.
func TestProgressOnlyOnTerminal(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	a := &app{stderr: &buf, stderrTTY: true}
	p := a.newProgress("backfill users", 200)
	p.add(50)
	out := buf.String()
	if !strings.Contains(out, "backfill users") || !strings.Contains(out, "50/200") {
		t.Fatalf("bar on a terminal: %q", out)
	}
	p.add(150)
	p.finish()

	for _, a := range []*app{{stderr: &buf}, {stderr: &buf, stderrTTY: true, quiet: true}} {
		buf.Reset()
		p := a.newProgress("backfill users", 200)
		p.add(200)
		p.finish()
		if buf.Len() != 0 {
			t.Fatalf("progress written off a terminal or with --quiet: %q", buf.String())
		}
	}
}
