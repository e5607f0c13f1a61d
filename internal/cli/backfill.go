package cli

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
	"github.com/spf13/cobra"
)

// backfillFlags are the flags of backfill.
type backfillFlags struct {
	out        outputFlags
	left       string
	leftFormat string
	groupBy    []string
	keys       []string
	types      []string
	ts, tx     string
	aggs       []string
}

func (a *app) backfillCmd() *cobra.Command {
	var bf backfillFlags
	cmd := &cobra.Command{
		Use:   "backfill NAME --left FILE --ts COL --agg SPEC... [--group-by COL[,COL...] [--key COL[,COL...]]]",
		Short: "Compute point-in-time features of a table's groups for the rows of a file",
		Long: `Compute point-in-time features for the rows of a left file (CSV, JSONL or
Parquet; - is stdin), such as the rows of a training set: for each row, aggregate the versions
of the row's group in effect at the row's time --ts, as known at --tx (default:
the latest commit), and write the row back, in input order, with one column per
feature appended. A later correction does not leak into features computed with a
--tx before it.

Groups: the table must have been created with --group-by. --group-by repeats its
group attributes, in order, and --key names the left columns holding them
(default: the columns named like the attributes). Key cells are typed the way load
types attribute values (integers, decimals, booleans, otherwise strings, inferred
per column; --types COL=TYPE overrides), so 42 matches a group value loaded as 42;
an empty key cell is an error. Leaving out both --group-by and --key aggregates
the whole table at each row's time instead (a series such as the total amount at
each reference date; each key counts with its one version in effect).

A --ts cell is a valid time on the table's axis, or now. A version is in effect at
ts when valid_from <= ts < valid_to: one starting at ts counts, one ending at ts
does not.

Each --agg SPEC is OP[(INPUT)][@WINDOW_COLUMN][:WINDOW,...]:
  OP      count, exists (no input); sum, avg, min, max, count_distinct, latest,
          earliest (an INPUT attribute is required)
  WINDOW  7d, 12h or 30m: only the versions whose valid_from, or WINDOW_COLUMN (an
          attribute holding a time, loaded with --types COL=time, or an integer
          of microseconds since the epoch), lies in (ts - WINDOW, ts]; one
          feature per window
Features are named INPUT_OP[_by_WINDOW_COLUMN][_WINDOW] (amount_sum_7d, count,
status_count_distinct, count_by_birth_ts_10950d); one whose name is already a
left column is prefixed with the table name (contracts_count). Over no version,
count and count_distinct are 0, exists is false and the others are empty (null).

-o FILE writes the rows to FILE instead of stdout, as Parquet when it ends in
.parquet: each column is typed from its values (INT64, DOUBLE, BOOLEAN, else
STRING).`,
		Example: `  bitempo backfill contracts --left training.csv --group-by user_id --ts ts \
    --agg 'sum(amount):7d,30d' --agg 'avg(amount)' --agg count --agg exists --agg 'count_distinct(status)'
  bitempo backfill users --left zips.csv --group-by zipcode --key zip --ts ts --agg 'count@birth_ts:10950d'
  bitempo backfill contracts --left dates.csv --ts ts --agg 'sum(amount)' --tx 2024-06-01 --format json`,
		Args: argsRange(1, 1, "a table NAME"),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			return a.backfill(args[0], &bf)
		}),
	}
	f := cmd.Flags()
	f.StringSliceVar(&bf.groupBy, "group-by", nil, "the table's group attributes, in order (leave out with --key for a table-wide aggregation)")
	f.StringSliceVar(&bf.keys, "key", nil, "the left columns holding the group values, in --group-by order (default: the --group-by names)")
	f.StringSliceVar(&bf.types, "types", nil, "types of --key columns, COL=TYPE,... with TYPE one of "+typeNames+" (default: inferred as load does)")
	f.StringVar(&bf.ts, "ts", "", "the left column holding each row's valid time (required)")
	f.StringVar(&bf.tx, "tx", "latest", "transaction time: compute the features as the store knew them then")
	f.StringArrayVar(&bf.aggs, "agg", nil, "an aggregation OP[(INPUT)][@WINDOW_COLUMN][:WINDOW,...]; repeat for more (required)")
	registerFileQuery(cmd, &bf.out, &bf.left, &bf.leftFormat, "left")
	return cmd
}

func (a *app) backfill(table string, bf *backfillFlags) error {
	switch {
	case bf.left == "":
		return usagef("backfill: --left FILE is required")
	case bf.ts == "":
		return usagef("backfill: --ts COL is required")
	case len(bf.aggs) == 0:
		return usagef("backfill: --agg SPEC is required, e.g. --agg count --agg 'sum(amount):7d'")
	case len(bf.keys) > 0 && len(bf.groupBy) == 0:
		return usagef("backfill: --key needs --group-by, the table's group attributes (leave out both for a table-wide aggregation)")
	}
	groupBy := trimAll(bf.groupBy)
	keys := trimAll(bf.keys)
	if len(keys) == 0 {
		keys = groupBy
	}
	if len(keys) != len(groupBy) {
		return usagef("backfill: --group-by names %d attributes, --key %d columns", len(groupBy), len(keys))
	}
	aggs, names, err := parseAggs(bf.aggs)
	if err != nil {
		return err
	}
	types, err := parseTypes(bf.types)
	if err != nil {
		return err
	}
	for name := range types {
		if !slices.Contains(keys, name) {
			return usagef("backfill: --types names %q, which is not a --key column", name)
		}
	}
	q, err := a.openFileQuery("backfill", table, bf.left, bf.leftFormat, bf.tx, &bf.out,
		func(t *store.Table) error { return checkGroupBy(t, groupBy) })
	if err != nil {
		return err
	}
	defer q.db.Close()
	t, in := q.t, q.in
	rows, err := leftRows(in, t, keys, types, bf.ts)
	if err != nil {
		return fmt.Errorf("backfill %s: %w", t.Name, err)
	}
	job := backfillJob{t: t, in: in, rows: rows, aggs: aggs, names: names,
		opts: query.BackfillOptions{Tx: q.tx, TableWide: len(groupBy) == 0}}
	groups, err := a.runBackfill(q.db, q.w, &job)
	if err != nil {
		return err
	}
	if !a.quiet {
		scope := "table-wide"
		if !job.opts.TableWide {
			scope = fmt.Sprintf("by %s (%s)", strings.Join(groupBy, ", "), plural(groups, "group"))
		}
		fmt.Fprintf(a.stderr, "bitempo: backfilled %s of %s from %s %s: %s, %s\n",
			plural(len(rows), "row"), in.name, t.Name, scope, plural(len(names), "feature"), describeTx(q.tx))
	}
	return nil
}

// trimAll trims the white space around each element of a flag's list.
func trimAll(list []string) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = strings.TrimSpace(s)
	}
	return out
}

// parseAggs parses the --agg specs and names their features; a spec that does
// not parse, or two features with one name, is a usage error naming the spec.
func parseAggs(specs []string) ([]query.Agg, []string, error) {
	aggs := make([]query.Agg, len(specs))
	for i, spec := range specs {
		agg, err := query.ParseAgg(spec)
		if err != nil {
			return nil, nil, usagef("backfill: --agg: %s", clean(err))
		}
		aggs[i] = agg
	}
	names, err := query.FeatureNames(aggs)
	if err != nil {
		return nil, nil, usagef("backfill: --agg: %s", clean(err))
	}
	return aggs, names, nil
}

// checkGroupBy checks --group-by against the table's group index: it must name
// the table's GroupBy attributes in their order. No --group-by (table-wide)
// fits any table.
func checkGroupBy(t *store.Table, groupBy []string) error {
	switch {
	case len(groupBy) == 0 || slices.Equal(groupBy, t.GroupBy):
		return nil
	case len(t.GroupBy) == 0:
		return usagef("backfill: table %s has no group index (it was created without --group-by); leave out --group-by and --key for a table-wide aggregation", t.Name)
	}
	return usagef("backfill: --group-by %s does not match table %s, which is grouped by %s",
		strings.Join(groupBy, ","), t.Name, strings.Join(t.GroupBy, ","))
}

// leftRows reads the group key and time of every left row. A row that does not
// fit (a missing or impossible group value, a bad time) fails the command with
// its file, line and column.
func leftRows(in *input, t *store.Table, keys []string, types map[string]attrType, tsName string) ([]query.LeftRow, error) {
	keyCols := make([]int, len(keys))
	convs := make([]func(any) (any, error), len(keys))
	for i, name := range keys {
		c, err := in.column(name, "--key")
		if err != nil {
			return nil, err
		}
		keyCols[i] = c
		typ, declared := types[name]
		convs[i] = groupValueReader(in, c, typ, declared)
	}
	tsCol, err := in.column(tsName, "--ts")
	if err != nil {
		return nil, err
	}
	now, err := parseAxisValue(t.Axis, "now") // one instant for every row that says now
	if err != nil {
		return nil, err
	}
	rows := make([]query.LeftRow, len(in.rows))
	var buf []byte
	for i := range in.rows {
		r := &in.rows[i]
		if len(keys) > 0 {
			group := make(store.Key, len(keys))
			for k, c := range keyCols {
				v, err := convs[k](r.vals[c])
				if err == nil && v == nil {
					err = fmt.Errorf("missing key")
				}
				if err != nil {
					return nil, in.cellErr(r, c, err)
				}
				group[k] = v
			}
			if buf, err = t.AppendGroupKey(buf[:0], group); err != nil {
				var gv *store.GroupValueError
				if errors.As(err, &gv) && gv.Attr != "" {
					return nil, in.cellErr(r, keyCols[slices.Index(t.GroupBy, gv.Attr)], err)
				}
				return nil, &rowError{file: in.name, line: r.line, err: err}
			}
			rows[i].Group = group
		}
		switch s := strings.TrimSpace(in.text(r.vals[tsCol])); s {
		case "":
			return nil, in.cellErr(r, tsCol, fmt.Errorf("missing time"))
		case "now":
			rows[i].TS = now
		default:
			if rows[i].TS, err = parseAxisValue(t.Axis, s); err != nil {
				return nil, in.cellErr(r, tsCol, err)
			}
		}
	}
	return rows, nil
}

// groupValueReader returns the conversion of a left key column's cells to group
// values, the one load applies to an attribute column: the declared type, else
// the type inferred from the whole column (CSV), else JSON's own types with
// numbers as int64 when the column's numbers are all integers. Empty, null and
// absent cells convert to nil.
func groupValueReader(in *input, col int, typ attrType, declared bool) func(any) (any, error) {
	absentIsNil := func(conv func(any) (any, error)) func(any) (any, error) {
		return func(v any) (any, error) {
			if v == absent {
				return nil, nil
			}
			return conv(v)
		}
	}
	switch {
	case !in.isJSON:
		if !declared {
			texts := make([]string, len(in.rows))
			for r := range in.rows {
				texts[r] = in.rows[r].vals[col].(string)
			}
			typ = inferType(texts)
		}
		return func(v any) (any, error) { return convertText(typ, v.(string)) }
	case declared:
		return absentIsNil(func(v any) (any, error) { return convertJSON(typ, v) })
	}
	values := make([]any, len(in.rows))
	for r := range in.rows {
		values[r] = in.rows[r].vals[col]
	}
	if inferred, ok := inferJSONType(values); ok {
		return absentIsNil(func(v any) (any, error) { return convertJSON(inferred, v) })
	}
	return absentIsNil(func(v any) (any, error) { return jsonNative(v, typeFloat64) })
}

// backfillJob is one checked backfill: the left file, its rows and the features.
type backfillJob struct {
	t     *store.Table
	in    *input
	rows  []query.LeftRow
	aggs  []query.Agg
	names []string
	opts  query.BackfillOptions
}

// runBackfill computes the features and writes every left row with them, in
// input order, as they stream out of the backfill; it returns the number of
// groups swept. Nothing is written to stdout when the backfill fails before its
// first row.
func (a *app) runBackfill(db *store.DB, w rowWriter, job *backfillJob) (groups int, err error) {
	bar := a.newProgress("backfill "+job.t.Name, len(job.rows))
	defer bar.finish()
	done := 0
	job.opts.Progress = func(p query.BackfillProgress) {
		bar.add(p.Rows - done)
		done, groups = p.Rows, p.TotalGroups
	}
	cols := featureColumns(job.t.Name, job.in.cols, job.names)
	started := false
	for r, err := range query.BackfillRows(db, job.t.Name, job.rows, job.aggs, job.opts) {
		if err != nil {
			return 0, backfillError(job, err)
		}
		if !started {
			if err := w.header(cols); err != nil {
				return 0, err
			}
			started = true
		}
		cells := make([]cell, 0, len(cols))
		for _, v := range job.in.rows[r.Index].vals {
			cells = append(cells, inputCell(v))
		}
		for k := range r.Len() {
			cells = append(cells, valueCell(r.Value(k)))
		}
		if err := w.row(cells); err != nil {
			return 0, err
		}
	}
	if !started {
		if err := w.header(cols); err != nil {
			return 0, err
		}
	}
	return groups, w.close()
}

// featureColumns returns the output columns: the left file's, then the
// features', a feature named like a left column prefixed with the table name.
func featureColumns(table string, left, features []string) []string {
	cols := slices.Clone(left)
	for _, name := range features {
		if slices.Contains(left, name) {
			name = table + "_" + name
		}
		cols = append(cols, name)
	}
	return cols
}

// backfillError words a failure of the backfill itself: an aggregation the
// table cannot compute is a usage error; a stored value an aggregation cannot
// take names the version, with a hint when a window column holds times as text.
func backfillError(job *backfillJob, err error) error {
	if errors.Is(err, query.ErrInvalidAgg) {
		return usagef("backfill %s: --agg: %s", job.t.Name, clean(err))
	}
	var bad *query.AggValueError
	if !errors.As(err, &bad) {
		return fmt.Errorf("backfill %s: %w", job.t.Name, err)
	}
	err = fmt.Errorf("backfill %s: %w", job.t.Name, bad)
	if _, text := bad.Value.(string); !text {
		return err
	}
	for _, agg := range job.aggs {
		if agg.WindowColumn != "" && slices.Contains(agg.Names(), bad.Feature) && strings.Contains(bad.Reason, "window column") {
			return fmt.Errorf("%w (a window column holds times: load it with --types %s=time)",
				err, agg.WindowColumn)
		}
	}
	return err
}
