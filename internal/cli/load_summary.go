package cli

import (
	"fmt"
	"strings"
)

// loadSummary counts what a load did, for its summary line.
type loadSummary struct {
	table, file            string
	rows, skipped          int
	inserted, closed       int
	unchanged, overwritten int
	merged, conflicts      int
	asserted, retired      int
	txs                    []int64
	committedRows          int
	mode                   loadMode
	// Periods tables loaded with --at: rows that landed before or between
	// versions already stored (late), and rows equal to the version in effect
	// (no-ops, dropped: a periods table keeps versions, not events).
	late, noops int
	// Changes tables only (events is set): what Apply reported.
	events                        bool
	duplicates, split, tombstones int
	collapsed, replayed           int
}

func (s *loadSummary) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "bitempo: loaded %s from %s: %s", s.table, s.file, plural(s.rows, "row"))
	if s.skipped > 0 {
		fmt.Fprintf(&b, " (%d skipped)", s.skipped)
	}
	fmt.Fprintf(&b, "; versions inserted %d / closed %d / unchanged %d", s.inserted, s.closed, s.unchanged)
	for _, x := range []struct {
		n    int
		what string
	}{{s.overwritten, "updated in place"}, {s.merged, "merged into a neighbour"}, {s.split, "split"}} {
		if x.n > 0 {
			fmt.Fprintf(&b, " / %s %d", x.what, x.n)
		}
	}
	fmt.Fprintf(&b, "; conflicts %d", s.conflicts)
	if s.mode == modeUpserts {
		fmt.Fprintf(&b, "; late rows %d (dated before or between stored versions), no-op rows dropped %d", s.late, s.noops)
	}
	if s.events {
		fmt.Fprintf(&b, "; events: duplicates %d, tombstones %d, collapsed %d", s.duplicates, s.tombstones, s.collapsed)
		if s.replayed > 0 {
			fmt.Fprintf(&b, ", %d batches already applied (nothing written)", s.replayed)
		}
	} else {
		fmt.Fprintf(&b, "; records asserted %d, retired %d", s.asserted, s.retired)
	}
	b.WriteString("; ")
	b.WriteString(describeTxs(s.txs))
	return b.String()
}

// plural writes a count with its noun.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// describeTxs names the transactions of a load.
func describeTxs(txs []int64) string {
	switch len(txs) {
	case 0:
		return "no transaction (nothing changed)"
	case 1:
		return "tx " + formatInstant(txs[0])
	}
	return fmt.Sprintf("%d transactions, tx %s .. %s", len(txs), formatInstant(txs[0]), formatInstant(txs[len(txs)-1]))
}
