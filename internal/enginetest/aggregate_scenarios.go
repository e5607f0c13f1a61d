package enginetest

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// This file is the driver of the aggregation scenarios
// (query/testdata/aggregate): each command runs on the store and returns its
// output. It lives here, not in package query's tests, so that the same
// scenarios run on every engine (Run).

// Aggregate runs one command of the aggregation scenarios
// (query/testdata/aggregate; see TestAggregate there for the commands). Every
// point query is checked against a one-row backfill and every backfill row
// against the point query; a disagreement is an error matching ErrCheck.
func Aggregate(db *store.DB, d *datadriven.TestData) (string, error) {
	switch d.Cmd {
	case "create":
		return "", aggCreate(db, d)
	case "upsert", "put", "delete", "deleteat":
		return aggWrite(db, d)
	case "group":
		return aggGroup(db, d)
	case "agg":
		return aggPoint(db, d)
	case "backfill":
		return aggBackfill(db, d)
	}
	return "", fmt.Errorf("unknown command %q", d.Cmd)
}

func aggArg(d *datadriven.TestData, key string) string {
	for _, a := range d.CmdArgs {
		if a.Key == key && len(a.Vals) > 0 {
			return a.Vals[0]
		}
	}
	return ""
}

func aggCreate(db *store.DB, d *datadriven.TestData) error {
	def := store.TableDef{Name: aggArg(d, "table"), MixedTypes: d.HasArg("mixed")}
	for _, col := range strings.Split(aggArg(d, "key"), ",") {
		name, typ, _ := strings.Cut(col, ":")
		kt, err := store.ParseKeyType(typ)
		if err != nil {
			return err
		}
		def.Key = append(def.Key, store.KeyColumn{Name: name, Type: kt})
	}
	if g := aggArg(d, "group"); g != "" {
		def.GroupBy = strings.Split(g, ",")
	}
	if aggArg(d, "axis") == "int" {
		def.Axis = store.AxisInt
	}
	_, err := db.CreateTable(def)
	return err
}

// aggTime parses a valid time: a date, a date-time, an integer or ±inf.
func aggTime(s string) (int64, error) {
	switch s {
	case "-inf":
		return store.NegInfinity, nil
	case "+inf", "inf":
		return store.Infinity, nil
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, nil
	}
	for _, layout := range []string{"2006-01-02", "2006-01-02T15:04", "2006-01-02T15:04:05"} {
		if tm, err := time.Parse(layout, s); err == nil {
			return tm.UnixMicro(), nil
		}
	}
	return 0, fmt.Errorf("bad time %q", s)
}

func aggFormatTime(t int64, intAxis bool) string {
	switch {
	case t == store.Infinity:
		return "+inf"
	case t == store.NegInfinity:
		return "-inf"
	case intAxis:
		return fmt.Sprint(t)
	}
	tm := time.UnixMicro(t).UTC()
	if tm.Hour() == 0 && tm.Minute() == 0 && tm.Second() == 0 && tm.Nanosecond() == 0 {
		return tm.Format("2006-01-02")
	}
	return tm.Format("2006-01-02T15:04:05.999999")
}

// aggValue parses an attribute value or a group key component.
func aggValue(s string) any {
	switch {
	case s == "null":
		return nil
	case s == "true" || s == "false":
		return s == "true"
	case strings.HasPrefix(s, `"`):
		u, err := strconv.Unquote(s)
		if err == nil {
			return u
		}
	case strings.HasPrefix(s, "t:"):
		if tm, err := time.Parse(time.RFC3339Nano, s[2:]); err == nil {
			return tm
		}
	case strings.HasPrefix(s, "d:"):
		if d, err := encoding.ParseDecimal(s[2:]); err == nil {
			return d
		}
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return f
	}
	return s
}

func aggFormatValue(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64) + "f"
	case string:
		return strconv.Quote(x)
	case []byte:
		return fmt.Sprintf("0x%x", x)
	case time.Time:
		return "t:" + x.Format(time.RFC3339Nano)
	case encoding.Decimal:
		return "d:" + x.String()
	}
	return fmt.Sprint(v)
}

func aggAttrs(line string) store.Attrs {
	attrs := store.Attrs{}
	for _, f := range strings.Fields(line) {
		name, value, _ := strings.Cut(f, "=")
		attrs[name] = aggValue(value)
	}
	return attrs
}

func aggKey(db *store.DB, table, s string) (store.Key, error) {
	tb, err := db.Table(table)
	if err != nil {
		return nil, err
	}
	parts := strings.Split(s, ",")
	key := make(store.Key, len(parts))
	for i, p := range parts {
		if i < len(tb.Key) && tb.Key[i].Type == store.Int64 {
			n, err := strconv.ParseInt(p, 10, 64)
			if err != nil {
				return nil, err
			}
			key[i] = n
		} else {
			key[i] = p
		}
	}
	return key, nil
}

func aggWrite(db *store.DB, d *datadriven.TestData) (string, error) {
	table := aggArg(d, "table")
	key, err := aggKey(db, table, aggArg(d, "key"))
	if err != nil {
		return "", err
	}
	times := map[string]int64{}
	for _, name := range []string{"at", "from", "to"} {
		if v := aggArg(d, name); v != "" {
			if times[name], err = aggTime(v); err != nil {
				return "", err
			}
		}
	}
	attrs := aggAttrs(d.Input)
	c, err := txn.Update(db, func(tx *txn.Tx) error {
		switch d.Cmd {
		case "upsert":
			_, err := tx.Upsert(table, key, attrs, times["at"])
			return err
		case "put":
			return tx.Put(table, key, attrs, times["from"], times["to"])
		case "delete":
			return tx.Delete(table, key, times["from"], times["to"])
		}
		_, err := tx.DeleteAt(table, key, times["at"])
		return err
	})
	if err != nil {
		return "", err
	}
	if err := VerifyStore(db); err != nil {
		return "", fmt.Errorf("after the write: %w", err)
	}
	if c.Tx == 0 {
		return "no change\n", nil
	}
	return fmt.Sprintf("tx %d\n", c.Tx), nil
}

func aggTx(d *datadriven.TestData) int64 {
	n, _ := strconv.ParseInt(aggArg(d, "tx"), 10, 64)
	return n
}

func aggGroup(db *store.DB, d *datadriven.TestData) (string, error) {
	s, err := db.Snapshot()
	if err != nil {
		return "", err
	}
	defer s.Close()
	tb, err := s.Table(aggArg(d, "table"))
	if err != nil {
		return "", err
	}
	group, err := tb.AppendGroupKey(nil, store.Key{aggValue(aggArg(d, "group"))})
	if err != nil {
		return "", err
	}
	tx := aggTx(d)
	if tx == 0 {
		tx = s.LastTx()
	}
	intAxis := tb.Axis == store.AxisInt
	var b strings.Builder
	for r, err := range s.GroupRecords(tb, group, tx, tx) {
		if err != nil {
			return "", err
		}
		key, err := tb.DecodeKey(r.Tuple)
		if err != nil {
			return "", err
		}
		attrs, err := r.Attrs()
		if err != nil {
			return "", err
		}
		var parts []string
		for _, n := range attrs.Names() {
			parts = append(parts, n+"="+aggFormatValue(attrs[n]))
		}
		fmt.Fprintf(&b, "%s [%s, %s) tx %d %s\n", key, aggFormatTime(r.ValidFrom, intAxis), aggFormatTime(r.ValidTo, intAxis), r.TxFrom, strings.Join(parts, " "))
	}
	if b.Len() == 0 {
		return "empty\n", nil
	}
	return b.String(), nil
}

func aggSpecs(lines []string) ([]query.Agg, error) {
	var aggs []query.Agg
	for _, l := range lines {
		a, err := query.ParseAgg(l)
		if err != nil {
			return nil, err
		}
		aggs = append(aggs, a)
	}
	return aggs, nil
}

func aggFormatFeatures(names []string, values []any) string {
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = n + "=" + aggFormatValue(values[i])
	}
	return strings.Join(parts, " ")
}

func aggPoint(db *store.DB, d *datadriven.TestData) (string, error) {
	table := aggArg(d, "table")
	aggs, err := aggSpecs(strings.Split(strings.TrimSpace(d.Input), "\n"))
	if err != nil {
		return "", err
	}
	ts, err := aggTime(aggArg(d, "ts"))
	if err != nil {
		return "", err
	}
	at := query.AsOf{Valid: ts, Tx: aggTx(d)}
	row := query.LeftRow{TS: ts, Tx: at.Tx}
	var f query.Features
	if d.HasArg("all") {
		f, err = query.AggregateTable(db, table, at, aggs)
	} else {
		row.Group = store.Key{aggValue(aggArg(d, "group"))}
		f, err = query.Aggregate(db, table, row.Group, at, aggs)
	}
	got := ""
	if err == nil {
		got = aggFormatFeatures(f.Names, f.Values) + "\n"
	}
	// The same request through Backfill must agree, error included.
	bf, berr := aggRunBackfill(db, table, []query.LeftRow{row}, aggs, query.BackfillOptions{TableWide: d.HasArg("all")})
	if (err == nil) != (berr == nil) || (err == nil && bf[0] != got) {
		return "", fmt.Errorf("%w: point query %q (%v) but backfill %q (%v)", ErrCheck, got, err, bf, berr)
	}
	return got, err
}

// aggRunBackfill returns one formatted line per row.
func aggRunBackfill(db *store.DB, table string, rows []query.LeftRow, aggs []query.Agg, opts query.BackfillOptions) ([]string, error) {
	names, err := query.FeatureNames(aggs)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(rows))
	for r, err := range query.Backfill(db, table, rows, aggs, opts) {
		if err != nil {
			return nil, err
		}
		if r.Index != len(out) {
			return nil, fmt.Errorf("row %d yielded at position %d", r.Index, len(out))
		}
		out = append(out, aggFormatFeatures(names, r.Values)+"\n")
	}
	if len(out) != len(rows) {
		return nil, fmt.Errorf("%d rows yielded for %d", len(out), len(rows))
	}
	return out, nil
}

func aggBackfill(db *store.DB, d *datadriven.TestData) (string, error) {
	table := aggArg(d, "table")
	var err error
	var specs, labels []string
	var rows []query.LeftRow
	for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
		fields := strings.Fields(line)
		switch {
		case len(fields) == 2 && fields[0] == "agg":
			specs = append(specs, fields[1])
		case len(fields) >= 3 && fields[0] == "row":
			var row query.LeftRow
			if !d.HasArg("all") {
				row.Group = store.Key{aggValue(fields[1])}
			}
			if row.TS, err = aggTime(fields[2]); err != nil {
				return "", err
			}
			if len(fields) > 3 {
				if row.Tx, err = strconv.ParseInt(strings.TrimPrefix(fields[3], "tx="), 10, 64); err != nil {
					return "", err
				}
			}
			rows = append(rows, row)
			labels = append(labels, strings.Join(fields[1:], " "))
		default:
			return "", fmt.Errorf("bad line %q", line)
		}
	}
	aggs, err := aggSpecs(specs)
	if err != nil {
		return "", err
	}
	opts := query.BackfillOptions{Tx: aggTx(d), TableWide: d.HasArg("all")}
	var progress []query.BackfillProgress
	opts.Progress = func(p query.BackfillProgress) { progress = append(progress, p) }
	out, err := aggRunBackfill(db, table, rows, aggs, opts)
	if err != nil {
		return "", err
	}
	if n := len(progress); n == 0 || progress[n-1].Rows != len(rows) || progress[n-1].TotalRows != len(rows) {
		return "", fmt.Errorf("%w: progress %+v does not end at %d rows", ErrCheck, progress, len(rows))
	}
	var b strings.Builder
	for i, line := range out {
		// Each row must equal its point query.
		row := rows[i]
		tx := cmp.Or(row.Tx, opts.Tx)
		var f query.Features
		if opts.TableWide {
			f, err = query.AggregateTable(db, table, query.AsOf{Valid: row.TS, Tx: tx}, aggs)
		} else {
			f, err = query.Aggregate(db, table, row.Group, query.AsOf{Valid: row.TS, Tx: tx}, aggs)
		}
		if err != nil || aggFormatFeatures(f.Names, f.Values)+"\n" != line {
			return "", fmt.Errorf("%w: row %d: backfill %q, point query %v (%v)", ErrCheck, i, line, f, err)
		}
		fmt.Fprintf(&b, "%s: %s", labels[i], line)
	}
	return b.String(), nil
}
