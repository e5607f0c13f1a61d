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
		return "", createTable(db, d)
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

// aggWrite runs one write command and prints its commit's tx.
func aggWrite(db *store.DB, d *datadriven.TestData) (string, error) {
	c, _, err := commitOps(db, []*datadriven.TestData{d}, false)
	if err != nil {
		return "", err
	}
	if c.Tx == 0 {
		return "no change\n", nil
	}
	return fmt.Sprintf("tx %d\n", c.Tx), nil
}

// groupArg reads the group key of a command: one component, written as a
// value (parseValue).
func groupArg(d *datadriven.TestData) (store.Key, error) {
	v, err := parseValue(arg(d, "group"))
	return store.Key{v}, err
}

func aggGroup(db *store.DB, d *datadriven.TestData) (string, error) {
	s, err := db.Snapshot()
	if err != nil {
		return "", err
	}
	defer s.Close()
	tb, err := s.Table(arg(d, "table"))
	if err != nil {
		return "", err
	}
	g, err := groupArg(d)
	if err != nil {
		return "", err
	}
	group, err := tb.AppendGroupKey(nil, g)
	if err != nil {
		return "", err
	}
	tx, err := timeArg(d, "tx", query.Latest)
	if err != nil {
		return "", err
	}
	if tx == query.Latest {
		tx = s.LastTx()
	}
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
		fmt.Fprintf(&b, "%s [%s, %s) tx %d %s\n", key, formatAxisTime(r.ValidFrom, tb.Axis, microClock), formatAxisTime(r.ValidTo, tb.Axis, microClock), r.TxFrom, joinAttrs(attrs, aggFormatValue))
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
	table := arg(d, "table")
	aggs, err := aggSpecs(strings.Split(strings.TrimSpace(d.Input), "\n"))
	if err != nil {
		return "", err
	}
	ts, err := requiredTime(d, "ts")
	if err != nil {
		return "", err
	}
	tx, err := timeArg(d, "tx", query.Latest)
	if err != nil {
		return "", err
	}
	at := query.AsOf{Valid: ts, Tx: tx}
	row := query.LeftRow{TS: ts, Tx: tx}
	var f query.Features
	if d.HasArg("all") {
		f, err = query.AggregateTable(db, table, at, aggs)
	} else {
		if row.Group, err = groupArg(d); err != nil {
			return "", err
		}
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
	table := arg(d, "table")
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
				g, err := parseValue(fields[1])
				if err != nil {
					return "", err
				}
				row.Group = store.Key{g}
			}
			if row.TS, err = parseTime(fields[2]); err != nil {
				return "", err
			}
			if len(fields) > 3 {
				if row.Tx, err = parseTime(strings.TrimPrefix(fields[3], "tx=")); err != nil {
					return "", err
				}
			}
			rows = append(rows, row)
			labels = append(labels, strings.Join(fields[1:], " "))
		default:
			return "", notationErrorf("bad backfill line %q", line)
		}
	}
	aggs, err := aggSpecs(specs)
	if err != nil {
		return "", err
	}
	opts := query.BackfillOptions{TableWide: d.HasArg("all")}
	if opts.Tx, err = timeArg(d, "tx", query.Latest); err != nil {
		return "", err
	}
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
