package diagram

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"strconv"
	"testing"

	"github.com/bitempo/bitempo/store"
)

// node is an SVG element as encoding/xml reads it.
type node struct {
	XMLName xml.Name
	Attrs   []xml.Attr `xml:",any,attr"`
	Nodes   []node     `xml:",any"`
	Text    string     `xml:",chardata"`
}

func (n node) attr(name string) string {
	for _, a := range n.Attrs {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

func (n node) num(t *testing.T, name string) float64 {
	f, err := strconv.ParseFloat(n.attr(name), 64)
	if err != nil {
		t.Fatalf("%s=%q: %v", name, n.attr(name), err)
	}
	return f
}

func (n node) child(name string) node {
	for _, c := range n.Nodes {
		if c.XMLName.Local == name {
			return c
		}
	}
	return node{}
}

// TestDiagramGeometry draws a key moved from Oslo to Bergen, whose first
// record (Oslo, open-ended) was corrected at t2 into Oslo until d3 and Bergen
// from d3, and checks each rectangle against its record's periods on the
// ordinal axes, the labels, the open ends' arrows and the cells.
func TestDiagramGeometry(t *testing.T) {
	const d1, d3, t1, t2 = 100, 300, 1000, 2000
	records := []store.Version{
		{ValidFrom: d1, ValidTo: store.Infinity, TxFrom: t1, TxTo: t2, SK: 1, Attrs: store.Attrs{"city": "Oslo", "tier": "gold"}},
		{ValidFrom: d1, ValidTo: d3, TxFrom: t2, TxTo: store.Infinity, SK: 1, Attrs: store.Attrs{"city": "Oslo", "tier": "gold"}},
		{ValidFrom: d3, ValidTo: store.Infinity, TxFrom: t2, TxTo: store.Infinity, SK: 2, Attrs: store.Attrs{"city": "Bergen", "tier": "gold"}},
	}
	format := func(v int64) string { return strconv.FormatInt(v, 10) }
	opts := Options{Title: "customers (c1)", Attrs: []string{"city", "tier"}, FormatValid: format, FormatTx: format, ValidUnit: 1}
	var a, b bytes.Buffer
	if err := SVG(&a, records, opts); err != nil {
		t.Fatal(err)
	}
	if err := SVG(&b, records, opts); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("two drawings of the same records differ")
	}
	var svg node
	if err := xml.Unmarshal(a.Bytes(), &svg); err != nil {
		t.Fatalf("not XML: %v\n%s", err, a.String())
	}
	// Ordinal axes: valid ticks d1, d3 at the plot's first and last tick
	// positions, +inf at its right edge; tx ticks t1, t2 likewise, upwards.
	x := map[int64]float64{d1: left + pad, d3: Width - right - pad, store.Infinity: Width - right}
	y := map[int64]float64{t1: Height - bottom - pad, t2: top + pad, store.Infinity: top}
	want := []struct {
		class, label string
		openValid    bool
	}{
		{"record", "city=Oslo tier=gold", true},
		{"record current", "(unchanged)", false},
		{"record current", "city=Bergen", true},
	}
	var groups []node
	for _, n := range svg.Nodes {
		if n.XMLName.Local == "g" {
			groups = append(groups, n)
		}
	}
	if len(groups) != len(records) {
		t.Fatalf("%d record groups, want %d", len(groups), len(records))
	}
	for i, g := range groups {
		r, w := records[i], want[i]
		rect := g.child("rect")
		gotX, gotY, gotW, gotH := rect.num(t, "x"), rect.num(t, "y"), rect.num(t, "width"), rect.num(t, "height")
		if gotX != x[r.ValidFrom] || gotW != x[r.ValidTo]-x[r.ValidFrom] || gotY != y[r.TxTo] || gotH != y[r.TxFrom]-y[r.TxTo] {
			t.Errorf("record %d: rect x=%g y=%g w=%g h=%g, want x=%g y=%g w=%g h=%g", i, gotX, gotY, gotW, gotH,
				x[r.ValidFrom], y[r.TxTo], x[r.ValidTo]-x[r.ValidFrom], y[r.TxFrom]-y[r.TxTo])
		}
		if g.attr("class") != w.class || g.child("text").Text != w.label {
			t.Errorf("record %d: class %q label %q, want %q %q", i, g.attr("class"), g.child("text").Text, w.class, w.label)
		}
		if g.attr("data-valid-from") != format(r.ValidFrom) || g.attr("data-tx-from") != format(r.TxFrom) {
			t.Errorf("record %d: data attributes %v", i, g.Attrs)
		}
		var openValid, openTx bool
		for _, c := range g.Nodes {
			openValid = openValid || c.attr("class") == "open-valid"
			openTx = openTx || c.attr("class") == "open-tx"
		}
		if openValid != w.openValid || openTx != (r.TxTo == store.Infinity) {
			t.Errorf("record %d: open-end arrows valid %v tx %v", i, openValid, openTx)
		}
	}
	var vcuts, tcuts []Cut
	if err := json.Unmarshal([]byte(svg.attr("data-valid-cuts")), &vcuts); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(svg.attr("data-tx-cuts")), &tcuts); err != nil {
		t.Fatal(err)
	}
	wantV := []Cut{{left, x[d1], "99"}, {x[d1], x[d3], "100"}, {x[d3], Width - right, "300"}}
	wantT := []Cut{{Height - bottom, y[t1], "999"}, {y[t1], y[t2], "1000"}, {y[t2], top, "2000"}}
	for i := range wantV {
		if vcuts[i] != wantV[i] || tcuts[i] != wantT[i] {
			t.Errorf("cut %d: valid %v tx %v, want %v %v", i, vcuts[i], tcuts[i], wantV[i], wantT[i])
		}
	}
}
