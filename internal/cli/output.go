package cli

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/store"
	"github.com/spf13/cobra"
)

// cell is one output value: its text for csv and table output ("" for null and
// open ends) and its value for JSON (nil for null).
type cell struct {
	text string
	json any
}

// rowWriter writes rows of cells under a header in one of the output formats.
type rowWriter interface {
	header(cols []string) error
	row(cells []cell) error
	close() error
}

// outputFlags are the flags of commands that print rows.
type outputFlags struct {
	format string
	withTx bool
	path   string // -o FILE, for the commands that register it (registerFile)
}

func (o *outputFlags) register(cmd *cobra.Command, withTx bool) {
	cmd.Flags().StringVar(&o.format, "format", "", "output format: table, csv or json (default: table on a terminal, csv otherwise)")
	if withTx {
		cmd.Flags().BoolVar(&o.withTx, "with-tx", false, "add the columns tx_from and tx_to")
	}
}

// writer returns the row writer of the chosen format.
func (o *outputFlags) writer(a *app) (rowWriter, error) {
	if o.path != "" {
		return o.fileWriter()
	}
	format := o.format
	if format == "" {
		format = "csv"
		if a.stdoutTTY {
			format = "table"
		}
	}
	switch format {
	case "csv":
		return &csvWriter{w: csv.NewWriter(a.stdout)}, nil
	case "json":
		return &jsonWriter{w: a.stdout}, nil
	case "table":
		return &tableWriter{w: a.stdout, note: a.stderr}, nil
	}
	return nil, usagef("unknown --format %q (want table, csv or json)", o.format)
}

type csvWriter struct{ w *csv.Writer }

func (c *csvWriter) header(cols []string) error { return c.w.Write(cols) }

func (c *csvWriter) row(cells []cell) error {
	rec := make([]string, len(cells))
	for i, x := range cells {
		rec[i] = x.text
	}
	return c.w.Write(rec)
}

func (c *csvWriter) close() error {
	c.w.Flush()
	return c.w.Error()
}

// jsonWriter writes one JSON object per line, keys in column order.
type jsonWriter struct {
	w    io.Writer
	cols []string
	buf  bytes.Buffer
}

func (j *jsonWriter) header(cols []string) error {
	j.cols = cols
	return nil
}

func (j *jsonWriter) row(cells []cell) error {
	j.buf.Reset()
	j.buf.WriteByte('{')
	for i, x := range cells {
		if i > 0 {
			j.buf.WriteByte(',')
		}
		writeJSON(&j.buf, j.cols[i])
		j.buf.WriteByte(':')
		writeJSON(&j.buf, x.json)
	}
	j.buf.WriteString("}\n")
	_, err := j.w.Write(j.buf.Bytes())
	return err
}

func (j *jsonWriter) close() error { return nil }

// writeJSON appends v as JSON without HTML escaping. Values are the scalars of
// cells, for which encoding cannot fail; NaN and infinities become strings.
func writeJSON(b *bytes.Buffer, v any) {
	if f, ok := v.(float64); ok && (math.IsNaN(f) || math.IsInf(f, 0)) {
		v = strconv.FormatFloat(f, 'g', -1, 64)
	}
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		// Encode writes nothing on failure; a cell's text always encodes.
		_ = enc.Encode(fmt.Sprint(v))
	}
	b.Truncate(b.Len() - 1) // Encode ends with a newline
}

// maxCellWidth is the widest a value prints in table output, in characters:
// one 5 MB value must not fill a terminal (or the buffered table) with
// megabytes per row. Longer values are cut and end with an ellipsis; csv and
// json print every value whole.
const maxCellWidth = 60

// tableWriter buffers rows and prints them as aligned columns, values cut to
// maxCellWidth characters; note (stderr) is told when a value was cut.
type tableWriter struct {
	w    io.Writer
	note io.Writer
	rows [][]string
	cut  int
}

func (t *tableWriter) header(cols []string) error {
	t.rows = append(t.rows, cols)
	return nil
}

func (t *tableWriter) row(cells []cell) error {
	rec := make([]string, len(cells))
	for i, x := range cells {
		text := x.text
		if len(text) > maxCellWidth && utf8.RuneCountInString(text) > maxCellWidth {
			text = string([]rune(text[:min(len(text), 4*maxCellWidth)])[:maxCellWidth-1]) + "…"
			t.cut++
		}
		rec[i] = strings.ReplaceAll(text, "\n", `\n`)
	}
	t.rows = append(t.rows, rec)
	return nil
}

func (t *tableWriter) close() error {
	if err := writeAligned(t.w, t.rows); err != nil {
		return err
	}
	if t.cut > 0 && t.note != nil {
		fmt.Fprintf(t.note, "bitempo: %s cut to %d characters in table output; --format csv or json prints every value whole\n",
			plural(t.cut, "value"), maxCellWidth)
	}
	return nil
}

// writeAligned prints rows as columns separated by two spaces.
func writeAligned(w io.Writer, rows [][]string) error {
	var widths []int
	for _, r := range rows {
		for i, s := range r {
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], utf8.RuneCountInString(s))
		}
	}
	var b strings.Builder
	for _, r := range rows {
		b.Reset()
		for i, s := range r {
			if i == len(r)-1 {
				b.WriteString(s)
				break
			}
			b.WriteString(s)
			b.WriteString(strings.Repeat(" ", widths[i]-utf8.RuneCountInString(s)+2))
		}
		if _, err := io.WriteString(w, strings.TrimRight(b.String(), " ")+"\n"); err != nil {
			return err
		}
	}
	return nil
}

// valueCell renders an attribute or key component, or a count, as cellOf
// renders it as an encoding.Value; a value of no attribute type prints as
// fmt.Sprint prints it.
func valueCell(x any) cell {
	var v encoding.Value
	switch y := x.(type) {
	case string: // its own cell: ValueOf would copy it, and cellOf copy it back
		return cell{y, y}
	case int:
		v = encoding.Value{Kind: encoding.KindInt, Int: int64(y)}
	case uint32:
		v = encoding.Value{Kind: encoding.KindUint, Uint: uint64(y)}
	default:
		if v = encoding.ValueOf(x); v.Kind == encoding.KindNull && x != nil {
			s := fmt.Sprint(x)
			return cell{s, s}
		}
	}
	return cellOf(&v)
}

// attrCell is the cell of attribute name's value v: as valueCell, but a value
// of a declared column reads as the column's type of now (Table.ConformValue:
// an int64 stored before the column was widened to a decimal prints as the
// decimal), and a date column's values print as YYYY-MM-DD.
func attrCell(t *store.Table, name string, v any) cell {
	v = t.ConformValue(name, v)
	if d, ok := v.(time.Time); ok {
		if col, declared := t.Column(name); declared && col.Type.Kind == store.TypeDate {
			s := d.UTC().Format(time.DateOnly)
			return cell{s, s}
		}
	}
	return valueCell(v)
}

// formatFloat prints a float without an exponent for everyday magnitudes.
func formatFloat(f float64) string {
	if a := math.Abs(f); a != 0 && (a < 1e-6 || a >= 1e21) {
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}

// validCell renders a valid time on the table's axis; open ends are empty/null.
func validCell(axis store.Axis, t int64) cell {
	s := formatAxisValue(axis, t)
	switch {
	case s == "":
		return cell{}
	case axis == store.AxisInt:
		return cell{s, t}
	}
	return cell{s, s}
}

// txCell renders a transaction time; +∞ (still current) is empty/null.
func txCell(t int64) cell {
	s := formatInstant(t)
	if s == "" {
		return cell{}
	}
	return cell{s, s}
}

// versionColumns lays out versions: key columns, valid_from, valid_to, sk, the
// attributes in the order the table first saw them, and with withTx tx_from and
// tx_to.
type versionColumns struct {
	t      *store.Table
	attrs  []string
	withTx bool
}

func newVersionColumns(db *store.DB, t *store.Table, withTx bool) *versionColumns {
	return &versionColumns{t: t, attrs: db.AttrNames(t), withTx: withTx}
}

// project lays out only the attributes in names, in that order (--attrs); no
// names keeps every attribute.
func (c *versionColumns) project(names []string) *versionColumns {
	if len(names) > 0 {
		c.attrs = names
	}
	return c
}

func (c *versionColumns) header() []string {
	var cols []string
	for _, k := range c.t.Key {
		cols = append(cols, k.Name)
	}
	cols = append(cols, "valid_from", "valid_to", "sk")
	cols = append(cols, c.attrs...)
	if c.withTx {
		cols = append(cols, "tx_from", "tx_to")
	}
	return cols
}

func (c *versionColumns) cells(v *store.Version) []cell {
	out := make([]cell, 0, len(c.t.Key)+5+len(c.attrs))
	for _, k := range v.Key {
		out = append(out, valueCell(k))
	}
	out = append(out, validCell(c.t.Axis, v.ValidFrom), validCell(c.t.Axis, v.ValidTo), valueCell(v.SK))
	for _, name := range c.attrs {
		out = append(out, attrCell(c.t, name, v.Attrs[name]))
	}
	if c.withTx {
		out = append(out, txCell(v.TxFrom), txCell(v.TxTo))
	}
	return out
}

// writeVersions prints versions with the layout of c.
func writeVersions(w rowWriter, c *versionColumns, versions []store.Version) error {
	if err := w.header(c.header()); err != nil {
		return err
	}
	for i := range versions {
		if err := w.row(c.cells(&versions[i])); err != nil {
			return err
		}
	}
	return w.close()
}
