package cli

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/bitempo/bitempo/store"
)

// timelineWidth is the width a timeline fits in: an 80-column terminal.
const timelineWidth = 80

// timelineOpts says what part of a key's history a timeline shows.
type timelineOpts struct {
	axis     store.Axis
	attrs    []string // attribute order of the labels
	from, to int64    // valid-time window; versions outside it are left out
	tx       int64    // the last transaction shown (store.Infinity: all)
	// table, when set, prints values as the table's declared columns do
	// (attrCell): a decimal with its column's scale, a date column's days.
	table *store.Table
}

// renderTimeline draws the records of one key (its audit trail, in any order) as
// bars on a valid-time axis: one block per transaction that changed the key,
// showing the key's versions as they stood after it, one row per version. A row
// marked '+' was asserted by that transaction; the others carried over. The axis
// is ordinal: every version boundary gets its own column, evenly spaced, so short
// versions stay visible next to long ones.
func renderTimeline(w io.Writer, title string, records []store.Version, o timelineOpts) error {
	txs := timelineTxs(records, o.tx)
	if len(txs) == 0 {
		_, err := fmt.Fprintf(w, "%s: no versions\n", title)
		return err
	}
	var shown []store.Version
	for _, r := range records {
		if r.ValidFrom < o.to && o.from < r.ValidTo && r.TxFrom <= txs[len(txs)-1] {
			shown = append(shown, r)
		}
	}
	points := timelinePoints(shown, o.from, o.to)
	skWidth := 1
	for _, r := range shown {
		skWidth = max(skWidth, len(fmt.Sprint(r.SK)))
	}
	labelWidth := 2 + 3 + skWidth // "+ sk 12"
	attrWidth := 0
	for _, r := range shown {
		attrWidth = max(attrWidth, utf8.RuneCountInString(attrSummary(o.table, r.Attrs, o.attrs)))
	}
	attrWidth = min(attrWidth, 24)
	barWidth := timelineWidth - labelWidth - 2 - attrWidth
	if barWidth < 30 {
		barWidth = 30
		attrWidth = timelineWidth - labelWidth - 2 - barWidth
	}
	cols := pointColumns(len(points), barWidth)

	var b strings.Builder
	fmt.Fprintf(&b, "%s\n", title)
	fmt.Fprintf(&b, "one block per transaction: the versions after it, '+' if it asserted them\n")
	if len(o.attrs) > 0 {
		fmt.Fprintf(&b, "rows: sk, valid period, %s\n", strings.Join(o.attrs, " "))
	}
	writeAxis(&b, labelWidth+1, points, cols, o.axis)
	for _, tx := range txs {
		asserted, retired := 0, 0
		var state []store.Version
		for _, r := range shown {
			if r.TxFrom == tx {
				asserted++
			}
			if r.TxTo == tx {
				retired++
			}
			if r.AliveAt(tx) {
				state = append(state, r)
			}
		}
		slices.SortFunc(state, func(x, y store.Version) int { return cmp.Compare(x.ValidFrom, y.ValidFrom) })
		fmt.Fprintf(&b, "tx %s  +%d -%d\n", formatInstant(tx), asserted, retired)
		if len(state) == 0 {
			fmt.Fprintf(&b, "%*s(no versions)\n", labelWidth+1, "")
		}
		for _, r := range state {
			mark := " "
			if r.TxFrom == tx {
				mark = "+"
			}
			label := fmt.Sprintf("%s sk %-*d", mark, skWidth, r.SK)
			bar := drawBar(r, points, cols, barWidth)
			line := label + " " + bar + " " + truncate(attrSummary(o.table, r.Attrs, o.attrs), attrWidth)
			b.WriteString(strings.TrimRight(line, " ") + "\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// timelineTxs returns the transactions that changed the records, up to tx.
func timelineTxs(records []store.Version, tx int64) []int64 {
	var txs []int64
	for _, r := range records {
		if r.TxFrom <= tx {
			txs = append(txs, r.TxFrom)
		}
		if r.TxTo != store.Infinity && r.TxTo <= tx {
			txs = append(txs, r.TxTo)
		}
	}
	slices.Sort(txs)
	return slices.Compact(txs)
}

// timelinePoints returns the finite version boundaries inside the window, plus
// the window's own finite ends, sorted and distinct.
func timelinePoints(records []store.Version, from, to int64) []int64 {
	var pts []int64
	add := func(t int64) {
		if t != store.Infinity && t != store.NegInfinity && t >= from && t <= to {
			pts = append(pts, t)
		}
	}
	for _, r := range records {
		add(r.ValidFrom)
		add(r.ValidTo)
	}
	add(from)
	add(to)
	slices.Sort(pts)
	return slices.Compact(pts)
}

// pointColumns spreads n points evenly over a bar of the given width, keeping
// two columns free at each edge for open ends.
func pointColumns(n, width int) []int {
	cols := make([]int, n)
	if n == 1 {
		cols[0] = width / 2
		return cols
	}
	span := width - 5
	for i := range cols {
		cols[i] = 2 + i*span/(n-1)
	}
	return cols
}

// column returns the bar column of valid time t: a boundary's own column, or an
// edge for open or clipped ends.
func column(t int64, points []int64, cols []int, width int, start bool) int {
	i, found := slices.BinarySearch(points, t)
	switch {
	case found:
		return cols[i]
	case i == 0:
		return 0
	case i == len(points):
		return width - 1
	}
	if start {
		return cols[i-1]
	}
	return cols[i]
}

// drawBar draws the valid period of r: '[' at its start, ')' at its end, '<' and
// '>' for ends that are open or outside the window.
func drawBar(r store.Version, points []int64, cols []int, width int) string {
	bar := []rune(strings.Repeat(" ", width))
	s := column(r.ValidFrom, points, cols, width, true)
	e := column(r.ValidTo, points, cols, width, false)
	for c := s; c <= e && c < width; c++ {
		bar[c] = '='
	}
	bar[s] = '['
	if s == 0 && (len(points) == 0 || r.ValidFrom < points[0]) {
		bar[s] = '<'
	}
	bar[e] = ')'
	if e == width-1 && (len(points) == 0 || r.ValidTo > points[len(points)-1]) {
		bar[e] = '>'
	}
	return string(bar)
}

// writeAxis prints the boundary labels over their columns, on up to two lines
// (a label that would collide on both is left out), then a line of ticks.
func writeAxis(b *strings.Builder, indent int, points []int64, cols []int, axis store.Axis) {
	lines := [2][]rune{}
	ends := [2]int{-1, -1}
	for i, p := range points {
		label := []rune(formatAxisValue(axis, p))
		start := min(cols[i], timelineWidth-indent-len(label)) // keep the line within the width
		for l := range lines {
			if start > ends[l] {
				for len(lines[l]) < start {
					lines[l] = append(lines[l], ' ')
				}
				lines[l] = append(lines[l], label...)
				ends[l] = start + len(label)
				break
			}
		}
	}
	pad := strings.Repeat(" ", indent)
	for _, l := range lines {
		if len(l) > 0 {
			b.WriteString(pad + string(l) + "\n")
		}
	}
	if len(points) > 0 {
		ticks := []rune(strings.Repeat(" ", cols[len(cols)-1]+1))
		for _, c := range cols {
			ticks[c] = '|'
		}
		b.WriteString(pad + string(ticks) + "\n")
	}
}

// attrSummary renders attribute values in table order, nulls left out; with
// a table t, each as its declared column prints it (attrCell).
func attrSummary(t *store.Table, attrs store.Attrs, order []string) string {
	var parts []string
	for _, name := range order {
		if v, ok := attrs[name]; ok && v != nil {
			c := valueCell(v)
			if t != nil {
				c = attrCell(t, name, v)
			}
			parts = append(parts, c.text)
		}
	}
	return strings.Join(parts, " ")
}

// truncate shortens s to n runes, marking the cut with '…'.
func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	if n <= 1 {
		return string(r[:max(n, 0)])
	}
	return string(r[:n-1]) + "…"
}
