package cli

import (
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/bitempo/bitempo/store"
	"github.com/spf13/cobra"
)

func (a *app) dumpCmd() *cobra.Command {
	var (
		out   outputFlags
		table string
		raw   bool
	)
	cmd := &cobra.Command{
		Use:   "dump [--table NAME] [--raw]",
		Short: "Print every Pebble key of the store, decoded",
		Long: `Print every key of the store in key order, decoded with the layout described in
the store package: its keyspace (meta, catalog, current, history, sk-index,
txlog, events, ...), its table, the natural key, the other key parts (valid and
transaction times, surrogate keys, ordinals) and the decoded value. --raw adds
the key and value bytes in hex. A key or value that does not decode is printed
with the reason, so dump also shows what verify complains about.`,
		Example: `  bitempo dump --table customers
  bitempo dump --raw --format json`,
		Args: argsRange(0, 0, "no arguments"),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			return a.withStore(true, func(db *store.DB) error {
				if table != "" {
					if _, err := a.table(db, table); err != nil {
						return err
					}
				}
				w, err := out.writer(a)
				if err != nil {
					return err
				}
				cols := []string{"keyspace", "table", "key", "key_fields", "value"}
				if raw {
					cols = append(cols, "key_hex", "value_hex")
				}
				if err := w.header(cols); err != nil {
					return err
				}
				s, err := db.Snapshot()
				if err != nil {
					return err
				}
				defer s.Close()
				for kv, err := range s.RawScan(nil, nil) {
					if err != nil {
						return err
					}
					e := db.DecodeEntry(kv)
					if table != "" && (e.Table == nil || e.Table.Name != table) {
						continue
					}
					if err := w.row(dumpCells(db, &e, raw)); err != nil {
						return err
					}
				}
				return w.close()
			})
		}),
	}
	out.register(cmd, false)
	cmd.Flags().StringVar(&table, "table", "", "only the keys of this table")
	cmd.Flags().BoolVar(&raw, "raw", false, "add the raw key and value in hex")
	return cmd
}

func dumpCells(db *store.DB, e *store.Entry, raw bool) []cell {
	axis := store.AxisInt
	var attrOrder []string
	tableName := ""
	if e.Table != nil {
		axis, tableName, attrOrder = e.Table.Axis, e.Table.Name, db.AttrNames(e.Table)
	}
	key := ""
	if e.Key != nil {
		key = e.Key.String()
	}
	value := renderFields(e.Value, axis, attrOrder)
	if e.Err != nil {
		value = strings.TrimSpace("CORRUPT: " + clean(e.Err) + "; " + value)
	}
	cells := []cell{valueCell(e.Keyspace), valueCell(tableName), valueCell(key),
		valueCell(renderFields(e.KeyFields, axis, attrOrder)), valueCell(value)}
	if raw {
		cells = append(cells, valueCell(hex.EncodeToString(e.RawKV.Key)), valueCell(hex.EncodeToString(e.RawKV.Value)))
	}
	return cells
}

// renderFields prints decoded fields as name=value pairs; times on their axis.
func renderFields(fields []store.Field, axis store.Axis, attrOrder []string) string {
	parts := make([]string, 0, len(fields))
	for _, f := range fields {
		var v string
		switch f.Kind {
		case store.FieldValidTime:
			v = renderTick(f.Value.(int64), func(t int64) string { return formatAxisValue(axis, t) })
		case store.FieldTxTime:
			v = renderTick(f.Value.(int64), formatInstant)
		case store.FieldKey:
			v = f.Value.(store.Key).String()
		case store.FieldAttrs:
			v = renderAttrs(f.Value.(store.Attrs), attrOrder)
		default:
			v = fmt.Sprint(f.Value)
		}
		parts = append(parts, f.Name+"="+v)
	}
	return strings.Join(parts, " ")
}

// renderTick prints a time, with ±∞ spelled out (dumps show what is stored).
func renderTick(t int64, format func(int64) string) string {
	switch t {
	case store.Infinity:
		return "+inf"
	case store.NegInfinity:
		return "-inf"
	}
	return format(t)
}

// renderAttrs prints attributes as {name: value, ...} in table order.
func renderAttrs(attrs store.Attrs, order []string) string {
	names := slices.Clone(order)
	for _, n := range attrs.Names() {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	var parts []string
	for _, n := range names {
		v, ok := attrs[n]
		if !ok {
			continue
		}
		text := "null"
		if v != nil {
			text = valueCell(v).text
			if _, isString := v.(string); isString {
				text = fmt.Sprintf("%q", text)
			}
		}
		parts = append(parts, n+": "+text)
	}
	return "{" + strings.Join(parts, ", ") + "}"
}
