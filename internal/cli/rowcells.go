package cli

import (
	"encoding/hex"
	"encoding/json"
	"strconv"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
)

// This file renders cells from the row views of batch reads (store.Row of a
// snapshot scan, query.ResolvedRow of a batch join) without a Version or an
// attribute map per row. Each cell is the one valueCell or attrCell makes of
// the same value decoded, text and JSON value alike, so every output format
// prints the same bytes either way.

// cellOf renders an attribute or key component read in place: the one place
// that formats a value as a cell (valueCell hands it every value it has as an
// any), so a row view and a decoded map print the same bytes.
func cellOf(v *encoding.Value) cell {
	switch v.Kind {
	case encoding.KindString:
		s := string(v.Bytes)
		return cell{s, s}
	case encoding.KindBytes:
		h := hex.EncodeToString(v.Bytes)
		return cell{h, h}
	case encoding.KindBool:
		return cell{strconv.FormatBool(v.Bool), v.Bool}
	case encoding.KindInt:
		return cell{strconv.FormatInt(v.Int, 10), v.Int}
	case encoding.KindUint:
		return cell{strconv.FormatUint(v.Uint, 10), v.Uint}
	case encoding.KindFloat:
		return cell{formatFloat(v.Float), v.Float}
	case encoding.KindTime:
		s := v.Time.UTC().Format(timeLayout) // RFC 3339, to the microsecond
		return cell{s, s}
	case encoding.KindDecimal:
		s := v.Decimal().String() // with its scale: 232.10
		return cell{s, json.Number(s)}
	}
	return cell{}
}

// attrReader is a row view's attributes as the typed accessors read them:
// store.Row and query.AttrRow.
type attrReader interface {
	Attr(c *store.AttrRef, v *encoding.Value) (bool, error)
}

// attrColumns are the attribute columns of an output read from row views:
// one reference per column, made once per command.
type attrColumns struct {
	t     *store.Table
	names []string
	refs  []*store.AttrRef
	// declared marks the columns of the table's declared schema, whose values
	// print as attrCell conforms them; the others print as they are stored.
	declared []bool
}

func newAttrColumns(t *store.Table, names []string) *attrColumns {
	c := &attrColumns{t: t, names: names, refs: make([]*store.AttrRef, len(names)), declared: make([]bool, len(names))}
	for i, name := range names {
		c.refs[i] = store.NewAttrRef(name)
		_, c.declared[i] = t.Column(name)
	}
	return c
}

// appendCells appends the cell of every column of r to out, as attrCell
// renders the value of the same version's attribute map; v is scratch.
func (c *attrColumns) appendCells(out []cell, r attrReader, v *encoding.Value) ([]cell, error) {
	for i, ref := range c.refs {
		if _, err := r.Attr(ref, v); err != nil {
			return nil, err
		}
		if c.declared[i] {
			out = append(out, attrCell(c.t, c.names[i], v.Any()))
		} else {
			out = append(out, cellOf(v))
		}
	}
	return out, nil
}

// rowCells lays out a snapshot row as cells lays out the version it holds;
// v is scratch.
func (c *versionColumns) rowCells(r *store.Row, attrs *attrColumns, v *encoding.Value) ([]cell, error) {
	out := make([]cell, 0, len(c.t.Key)+5+len(c.attrs))
	for i := range c.t.Key {
		if err := r.KeyValue(i, v); err != nil {
			return nil, err
		}
		out = append(out, cellOf(v))
	}
	out = append(out, validCell(c.t.Axis, r.ValidFrom), validCell(c.t.Axis, r.ValidTo), valueCell(r.SK))
	out, err := attrs.appendCells(out, r, v)
	if err != nil {
		return nil, err
	}
	if c.withTx {
		out = append(out, txCell(r.TxFrom), txCell(r.TxTo))
	}
	return out, nil
}

// resolvedCells returns the cells of one fact's output row: its own cells,
// then the sk and attributes of the version it resolved to, or as many
// empty cells for a miss; v is scratch.
func (c *attrColumns) resolvedCells(own []any, r *query.ResolvedRow, v *encoding.Value) ([]cell, error) {
	out := make([]cell, 0, len(own)+1+len(c.refs))
	for _, x := range own {
		out = append(out, inputCell(x))
	}
	if !r.Found() {
		return append(out, make([]cell, 1+len(c.refs))...), nil
	}
	return c.appendCells(append(out, valueCell(r.SK)), r, v)
}
