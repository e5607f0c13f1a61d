// Package diagram draws the bitemporal diagram of one key as SVG: valid time
// across, transaction time up, one rectangle per record spanning its valid
// period and the transaction-time period during which the store asserted it.
//
// The diagram keeps three invariants:
//
//  1. Both axes are ordinal: each distinct finite time a record starts or ends
//     at is one evenly spaced tick, so short and long periods stay readable and
//     the picture depends only on the records. An open end (±∞ in valid time,
//     a record still current) reaches the plot's edge and is marked with an
//     arrow.
//  2. A record's rectangle carries its periods as data attributes, in the
//     formats the tool prints, so that a test or a script can read the
//     geometry back; the svg element carries the cells the axes are cut into
//     and, for each, the time to ask a point read at (the cell's start).
//  3. The output is a function of its input: no clock, no map order.
package diagram

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/bitempo/bitempo/store"
)

// Geometry of the picture, in SVG user units.
const (
	Width   = 900
	Height  = 520
	left    = 190 // room for transaction-time labels
	right   = 40
	top     = 50
	bottom  = 90 // room for valid-time labels
	pad     = 30 // between an axis edge and its first or last tick
	arrowSz = 8
)

// Options say how to label the diagram.
type Options struct {
	Title string
	// Attrs orders the attribute names in labels (the table's order).
	Attrs []string
	// FormatValid and FormatTx print a time as the tool prints it.
	FormatValid, FormatTx func(int64) string
	// ValidUnit is the smallest step of the valid-time axis (a day on a date
	// axis): the point read for the cell before the first tick is asked one
	// unit before it.
	ValidUnit int64
}

// Cut is one cell of an axis: [From, To) in picture units along the axis,
// and the time to ask a point read at for any point in it.
type Cut struct {
	From  float64 `json:"from"`
	To    float64 `json:"to"`
	Query string  `json:"q"`
}

// axis maps the finite ticks of one time axis to picture coordinates.
type axis struct {
	ticks    []int64
	lo, hi   float64 // the coordinates of -∞ and +∞ (hi < lo on the vertical axis)
	from, to float64 // the coordinates of the first and the last tick
}

func newAxis(ticks []int64, lo, hi float64) axis {
	slices.Sort(ticks)
	ticks = slices.Compact(ticks)
	dir := 1.0
	if hi < lo {
		dir = -1
	}
	return axis{ticks: ticks, lo: lo, hi: hi, from: lo + dir*pad, to: hi - dir*pad}
}

// at returns the coordinate of t: an end of the axis for ±∞.
func (a axis) at(t int64) float64 {
	switch t {
	case store.NegInfinity:
		return a.lo
	case store.Infinity:
		return a.hi
	}
	i, _ := slices.BinarySearch(a.ticks, t)
	if len(a.ticks) == 1 {
		return (a.from + a.to) / 2
	}
	return a.from + (a.to-a.from)*float64(i)/float64(len(a.ticks)-1)
}

// cuts splits the axis into the cells between its ticks, each with the time
// to ask at: the cell's start, or one unit before the first tick.
func (a axis) cuts(unit int64, format func(int64) string) []Cut {
	if len(a.ticks) == 0 {
		return nil
	}
	cs := []Cut{{From: a.lo, To: a.at(a.ticks[0]), Query: format(a.ticks[0] - unit)}}
	for i, t := range a.ticks {
		end := a.hi
		if i+1 < len(a.ticks) {
			end = a.at(a.ticks[i+1])
		}
		cs = append(cs, Cut{From: a.at(t), To: end, Query: format(t)})
	}
	return cs
}

// SVG writes the diagram of records, the audit trail of one key (every record
// with its valid and transaction periods), to w.
func SVG(w io.Writer, records []store.Version, o Options) error {
	var vt, tt []int64
	for _, r := range records {
		for _, t := range []int64{r.ValidFrom, r.ValidTo} {
			if t != store.NegInfinity && t != store.Infinity {
				vt = append(vt, t)
			}
		}
		tt = append(tt, r.TxFrom)
		if r.TxTo != store.Infinity {
			tt = append(tt, r.TxTo)
		}
	}
	vx := newAxis(vt, left, Width-right)
	ty := newAxis(tt, Height-bottom, top)
	if o.ValidUnit <= 0 {
		o.ValidUnit = 1
	}
	vcuts, _ := json.Marshal(vx.cuts(o.ValidUnit, o.FormatValid))
	tcuts, _ := json.Marshal(ty.cuts(1, o.FormatTx))

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="bitemporal" width="%d" height="%d" viewBox="0 0 %d %d" data-valid-cuts="%s" data-tx-cuts="%s">`+"\n",
		Width, Height, Width, Height, esc(string(vcuts)), esc(string(tcuts)))
	b.WriteString(`<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="8" markerHeight="8" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#444"/></marker>` +
		`<linearGradient id="fade-up" x1="0" y1="1" x2="0" y2="0"><stop offset="0.7" stop-color="#7aa6d8" stop-opacity="0.55"/><stop offset="1" stop-color="#7aa6d8" stop-opacity="0.08"/></linearGradient></defs>` + "\n")
	fmt.Fprintf(&b, `<text class="title" x="%d" y="24" font-family="sans-serif" font-size="15">%s</text>`+"\n", left, esc(o.Title))
	writeAxes(&b, vx, ty, o)
	for i, r := range records {
		writeRecord(&b, vx, ty, r, label(records, i, o.Attrs), o)
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// writeAxes draws both axes, their ticks and labels.
func writeAxes(b *strings.Builder, vx, ty axis, o Options) {
	y0 := float64(Height - bottom)
	fmt.Fprintf(b, `<line class="axis valid" x1="%d" y1="%g" x2="%d" y2="%g" stroke="#444" marker-end="url(#arrow)"/>`+"\n", left, y0, Width-right+arrowSz, y0)
	fmt.Fprintf(b, `<line class="axis tx" x1="%d" y1="%g" x2="%d" y2="%d" stroke="#444" marker-end="url(#arrow)"/>`+"\n", left, y0, left, top-arrowSz)
	fmt.Fprintf(b, `<text x="%d" y="%d" font-family="sans-serif" font-size="12" text-anchor="end">valid time →</text>`+"\n", Width-right, Height-8)
	fmt.Fprintf(b, `<text x="12" y="%d" font-family="sans-serif" font-size="12">↑ transaction time</text>`+"\n", top-20)
	for _, t := range vx.ticks {
		x := vx.at(t)
		fmt.Fprintf(b, `<line class="tick" x1="%g" y1="%g" x2="%g" y2="%g" stroke="#444"/>`+"\n", x, y0, x, y0+5)
		fmt.Fprintf(b, `<text class="valid-label" x="%g" y="%g" font-family="sans-serif" font-size="10" text-anchor="end" transform="rotate(-35 %g %g)">%s</text>`+"\n",
			x, y0+16, x, y0+16, esc(o.FormatValid(t)))
	}
	for _, t := range ty.ticks {
		y := ty.at(t)
		fmt.Fprintf(b, `<line class="tick" x1="%d" y1="%g" x2="%d" y2="%g" stroke="#444"/>`+"\n", left-5, y, left, y)
		fmt.Fprintf(b, `<text class="tx-label" x="%d" y="%g" font-family="sans-serif" font-size="10" text-anchor="end">%s</text>`+"\n", left-8, y+3, esc(o.FormatTx(t)))
	}
}

// writeRecord draws one record and its label.
func writeRecord(b *strings.Builder, vx, ty axis, r store.Version, text string, o Options) {
	x0, x1 := vx.at(r.ValidFrom), vx.at(r.ValidTo)
	y1, y0 := ty.at(r.TxFrom), ty.at(r.TxTo)
	class, fill := "record", `fill="#c9d7e8" fill-opacity="0.55" stroke="#57606a"`
	if r.TxTo == store.Infinity {
		class, fill = "record current", `fill="url(#fade-up)" stroke="#1f4e8c"`
	}
	fmt.Fprintf(b, `<g class="%s" data-sk="%d" data-valid-from="%s" data-valid-to="%s" data-tx-from="%s" data-tx-to="%s">`,
		class, r.SK, esc(o.FormatValid(r.ValidFrom)), esc(o.FormatValid(r.ValidTo)), esc(o.FormatTx(r.TxFrom)), esc(o.FormatTx(r.TxTo)))
	fmt.Fprintf(b, `<title>sk %d: %s</title>`, r.SK, esc(label(nil, 0, o.Attrs, r)))
	fmt.Fprintf(b, `<rect x="%g" y="%g" width="%g" height="%g" %s/>`, x0, y0, x1-x0, y1-y0, fill)
	if r.ValidTo == store.Infinity {
		ym := (y0 + y1) / 2
		fmt.Fprintf(b, `<line class="open-valid" x1="%g" y1="%g" x2="%g" y2="%g" stroke="#1f4e8c" marker-end="url(#arrow)"/>`, x1-22, ym, x1-2, ym)
	}
	if r.TxTo == store.Infinity {
		xm := (x0 + x1) / 2
		fmt.Fprintf(b, `<line class="open-tx" x1="%g" y1="%g" x2="%g" y2="%g" stroke="#1f4e8c" marker-end="url(#arrow)"/>`, xm, y0+22, xm, y0+2)
	}
	fmt.Fprintf(b, `<text class="label" x="%g" y="%g" font-family="sans-serif" font-size="11">%s</text>`, x0+4, y1-6, esc(text))
	b.WriteString("</g>\n")
}

// label names the attributes of records[i] that changed from the version it
// follows: the record before it in valid time asserted at the same
// transaction, else the one it corrected (the record of the same valid start
// it replaced), else nothing (every attribute is new). Called with nil
// records, it labels extra[0] with all its attributes.
func label(records []store.Version, i int, order []string, extra ...store.Version) string {
	var r store.Version
	var prev *store.Version
	if records == nil {
		r = extra[0]
	} else {
		r = records[i]
		prev = previous(records, i)
	}
	var parts []string
	for _, name := range attrOrder(order, r.Attrs) {
		v, ok := r.Attrs[name]
		if prev != nil {
			pv, had := prev.Attrs[name]
			if had == ok && fmt.Sprint(pv) == fmt.Sprint(v) {
				continue
			}
		}
		if ok {
			parts = append(parts, fmt.Sprintf("%s=%v", name, v))
		}
	}
	if len(parts) == 0 && prev != nil {
		return "(unchanged)"
	}
	return strings.Join(parts, " ")
}

// previous finds the version records[i] is compared with in its label.
func previous(records []store.Version, i int) *store.Version {
	r := records[i]
	for j := range records {
		p := &records[j]
		if j != i && p.ValidTo == r.ValidFrom && p.TxFrom <= r.TxFrom && r.TxFrom < p.TxTo {
			return p
		}
	}
	for j := range records {
		p := &records[j]
		if j != i && p.ValidFrom <= r.ValidFrom && r.ValidFrom < p.ValidTo && p.TxTo == r.TxFrom {
			return p
		}
	}
	return nil
}

// attrOrder returns the names of attrs in the table's order, then any others sorted.
func attrOrder(order []string, attrs store.Attrs) []string {
	var names []string
	for _, n := range order {
		if _, ok := attrs[n]; ok {
			names = append(names, n)
		}
	}
	var rest []string
	for n := range attrs {
		if !slices.Contains(order, n) {
			rest = append(rest, n)
		}
	}
	slices.Sort(rest)
	return append(names, rest...)
}

var escaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&#39;")

func esc(s string) string { return escaper.Replace(s) }
