package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"time"

	"github.com/bitempo/bitempo/store"
	"github.com/spf13/cobra"
)

// loadFlags are the flags of load.
type loadFlags struct {
	format                        string
	from, to, openSentinel        string
	at, seq                       string
	deleteCol, opCol, deleteValue string
	batchID                       string
	types, ignore                 []string
	skipBad, noCompact            bool
	batchSize                     int
}

// compactAfterRows is the size of load after which load compacts the store: a
// bulk load writes faster than Pebble's background compaction keeps up with,
// and reads of the level 0 it leaves are about 2.5x slower (store.DB.Compact).
// Smaller loads leave compaction to the background, which is cheaper than
// rewriting a large store for them.
const compactAfterRows = 100_000

// loadMode is how the rows of a file become writes.
type loadMode uint8

const (
	modeVersions loadMode = iota // periods table, one version per row (Put)
	modeUpserts                  // periods table, one SCD2 change per row (Upsert / DeleteAt)
	modeEvents                   // changes table, one CDC event per row (Apply)
)

func (a *app) loadCmd() *cobra.Command {
	var lf loadFlags
	cmd := &cobra.Command{
		Use:   "load NAME FILE",
		Short: "Load a CSV, JSONL or Parquet file into a table",
		Long: `Load a CSV (header line first), JSONL (one object per line) or Parquet file into a
table; FILE - reads stdin. The format comes from the extension (.csv, .jsonl,
.parquet) unless --format is given.

Periods tables take either
  versions: --from COL --to COL (an empty to, or the --open-sentinel value, is
            open-ended; an empty from is open at the start). Rows of one key that
            overlap are rejected, naming the rows, and nothing is loaded.
  changes:  --at COL, SCD2 upserts effective at that time (rows are applied in
            --at order; a later row for the same key and time wins), with
            --delete-col COL --delete-value V marking rows that close the key.
Changes tables take CDC events: --at COL [--seq COL] [--op-col COL --delete-value V]
[--batch-id ID]. The default batch id is the file's content hash, so loading the
same file twice changes nothing the second time.

The key columns are the table's; every other column is an attribute. Types come
from --types col=int64|float64|bool|string|time, else are inferred per column
(integers, decimals, booleans, otherwise strings); an empty cell is null.
Parquet columns are typed and need no --types: integers load as int64, FLOAT,
DOUBLE and DECIMAL as float64, BOOLEAN as bool, STRING as string, TIMESTAMP and
DATE are times (RFC 3339 / YYYY-MM-DD, as --types time gives), other byte
arrays as hex text; a null is null. Key columns must be integers, strings or
bytes; nested columns are refused.

Every row is read and checked before anything is written: a row that does not fit
(bad time, wrong type, missing key) fails the load with its file, line and column,
and nothing is committed, unless --skip-bad (each skipped row is reported). The
checked rows are then committed in transactions of --batch-size rows. If a commit
fails midway (disk full, say), the batches before it stay committed and the error
says how far the load got; loading the file again is safe, since rows already
loaded change nothing. --batch-size 0 loads everything in one transaction.

A load of 100,000 rows or more that commits anything ends by compacting the
store (store.DB.Compact, a few seconds per million versions), so reads right after
it are as fast as reads of a store that has settled; --no-compact skips that.`,
		Example: `  bitempo load customers customers.csv --from valid_from --to valid_to --open-sentinel 9999-12-31
  bitempo load customers changes.jsonl --at changed_at --types zip=string
  bitempo load accounts feed.csv --at ts --seq lsn --op-col op --delete-value d`,
		Args: argsRange(2, 2, "a table NAME and a FILE"),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			return a.load(args[0], args[1], &lf)
		}),
	}
	f := cmd.Flags()
	f.StringVar(&lf.format, "format", "", "input format: csv, jsonl or parquet (default: from the file's extension)")
	f.StringVar(&lf.format, "input-format", "", "the same as --format")
	f.StringVar(&lf.from, "from", "", "periods tables, rows are versions: the column holding valid_from")
	f.StringVar(&lf.to, "to", "", "periods tables, rows are versions: the column holding valid_to (empty: open-ended)")
	f.StringVar(&lf.openSentinel, "open-sentinel", "", "a --to value that means open-ended, e.g. 9999-12-31")
	f.StringVar(&lf.at, "at", "", "rows are changes: the column holding the time each takes effect")
	f.StringVar(&lf.seq, "seq", "", "changes tables: the column ordering events with equal --at (default 0)")
	f.StringVar(&lf.deleteCol, "delete-col", "", "rows are changes: the column that marks deletions (with --delete-value)")
	f.StringVar(&lf.opCol, "op-col", "", "changes tables: the column holding the operation (with --delete-value)")
	f.StringVar(&lf.deleteValue, "delete-value", "delete", "the value of --delete-col / --op-col that means delete")
	f.StringVar(&lf.batchID, "batch-id", "", "changes tables: the batch id (default: the file's content hash)")
	f.StringSliceVar(&lf.types, "types", nil, "attribute types, col=int64|float64|bool|string|time,...")
	f.StringSliceVar(&lf.ignore, "ignore", nil, "columns of the file to leave out (e.g. sk, tx_from, tx_to of a scan's output)")
	f.BoolVar(&lf.skipBad, "skip-bad", false, "skip rows that do not fit, reporting each, instead of failing")
	f.IntVar(&lf.batchSize, "batch-size", 10000, "rows per transaction (0: one transaction)")
	f.BoolVar(&lf.noCompact, "no-compact", false, "do not compact the store after a load of 100,000 rows or more")
	return cmd
}

func (a *app) load(table, path string, lf *loadFlags) error {
	format, err := inputFormat(lf.format, path)
	if err != nil {
		return err
	}
	if lf.batchSize < 0 {
		return usagef("--batch-size must not be negative")
	}
	types, err := parseTypes(lf.types)
	if err != nil {
		return err
	}
	db, err := a.open(false)
	if err != nil {
		return err
	}
	defer db.Close()
	t, err := a.table(db, table)
	if err != nil {
		return err
	}
	mode, err := chooseMode(t, lf)
	if err != nil {
		return err
	}
	in, err := readInput(path, format, a.stdin)
	if err != nil {
		return err
	}
	if err := in.checkParquetKeys("a key column of table "+t.Name, keyNames(t)); err != nil {
		return err
	}
	plan, err := makePlan(in, t, mode, lf, types)
	if err != nil {
		return err
	}
	rows, bad := plan.convert(in)
	bad = append(in.bad, bad...)
	slices.SortStableFunc(bad, func(x, y *rowError) int { return x.line - y.line })
	if len(bad) > 0 && !lf.skipBad {
		return fmt.Errorf("load %s: %w; nothing loaded (--skip-bad skips such rows)", t.Name, bad[0])
	}
	for _, e := range bad {
		fmt.Fprintf(a.stderr, "bitempo: skipped %v\n", e)
	}
	if mode == modeVersions {
		if err := a.checkOverlaps(in.name, t, rows); err != nil {
			return err
		}
	}
	sum := loadSummary{table: t.Name, file: in.name, rows: len(rows), skipped: len(bad)}
	attrNames := make([]string, 0, len(plan.attrCols))
	for _, i := range plan.attrCols {
		attrNames = append(attrNames, in.cols[i])
	}
	if err := db.DeclareAttrNames(t, attrNames); err != nil {
		return err
	}
	switch mode {
	case modeVersions:
		err = a.commitVersions(db, t, rows, lf.batchSize, &sum)
	case modeUpserts:
		err = a.commitUpserts(db, t, rows, lf.batchSize, &sum)
	case modeEvents:
		batchID := lf.batchID
		if batchID == "" {
			h := sha256.Sum256(in.data)
			batchID = "sha256:" + hex.EncodeToString(h[:16])
		}
		err = a.commitEvents(db, t, rows, lf.batchSize, batchID, &sum)
	}
	if err != nil {
		return err
	}
	if !a.quiet {
		fmt.Fprintln(a.stderr, sum.String())
	}
	if len(rows) >= compactAfterRows && len(sum.txs) > 0 && !lf.noCompact { // a load that committed nothing wrote nothing to compact
		start := time.Now()
		if err := db.Compact(context.Background()); err != nil {
			return fmt.Errorf("load %s: every row is committed, but %w", t.Name, err)
		}
		if !a.quiet {
			fmt.Fprintf(a.stderr, "compacted the store in %s\n", time.Since(start).Round(time.Millisecond))
		}
	}
	return nil
}

// chooseMode checks the flags against the table's kind.
func chooseMode(t *store.Table, lf *loadFlags) (loadMode, error) {
	if lf.deleteCol != "" && lf.opCol != "" && lf.deleteCol != lf.opCol {
		return 0, usagef("load: --delete-col and --op-col name the same thing; give one")
	}
	if lf.opCol == "" {
		lf.opCol = lf.deleteCol
	}
	versions := lf.from != "" || lf.to != ""
	if t.Kind == store.Changes {
		if versions {
			return 0, usagef("load: %s is a changes table: give --at (and --seq, --op-col), not --from/--to", t.Name)
		}
		if lf.at == "" {
			return 0, usagef("load: %s is a changes table: --at COL is required", t.Name)
		}
		return modeEvents, nil
	}
	if lf.seq != "" || lf.batchID != "" {
		return 0, usagef("load: --seq and --batch-id are for changes tables; %s is a periods table", t.Name)
	}
	switch {
	case versions && lf.at != "":
		return 0, usagef("load: give --from/--to (rows are versions) or --at (rows are changes), not both")
	case versions:
		if lf.from == "" || lf.to == "" {
			return 0, usagef("load: rows as versions need both --from and --to")
		}
		if lf.opCol != "" {
			return 0, usagef("load: --delete-col goes with --at (rows are changes)")
		}
		return modeVersions, nil
	case lf.at != "":
		if lf.openSentinel != "" {
			return 0, usagef("load: --open-sentinel goes with --from/--to")
		}
		return modeUpserts, nil
	}
	return 0, usagef("load: say how rows become versions: --from COL --to COL (rows are versions) or --at COL (rows are changes)")
}

// checkOverlaps rejects a versions load in which two rows of one key overlap,
// reporting every overlapping pair (up to 20) on stderr.
func (a *app) checkOverlaps(file string, t *store.Table, rows []loadRow) error {
	byKey := map[string][]int{}
	var order []string
	for i := range rows {
		k := rows[i].tuple
		if _, ok := byKey[k]; !ok {
			order = append(order, k)
		}
		byKey[k] = append(byKey[k], i)
	}
	var report []string
	for _, k := range order {
		idx := byKey[k]
		slices.SortStableFunc(idx, func(x, y int) int { return cmpInt64(rows[x].from, rows[y].from) })
		reach := -1 // the row reaching furthest so far
		for _, i := range idx {
			if reach >= 0 && rows[i].from < rows[reach].to {
				x, y := &rows[reach], &rows[i]
				report = append(report, fmt.Sprintf("%s lines %d and %d overlap for key %s: [%s, %s) and [%s, %s)",
					file, x.line, y.line, x.key, formatAxisValue(t.Axis, x.from), formatAxisValue(t.Axis, x.to),
					formatAxisValue(t.Axis, y.from), formatAxisValue(t.Axis, y.to)))
			}
			if reach < 0 || rows[i].to > rows[reach].to {
				reach = i
			}
		}
	}
	if len(report) == 0 {
		return nil
	}
	if len(report) > 1 {
		for _, line := range report[:min(len(report), 20)] {
			fmt.Fprintf(a.stderr, "bitempo: %s\n", line)
		}
		return fmt.Errorf("load %s: %d overlapping pairs of rows (listed above%s); nothing loaded",
			t.Name, len(report), map[bool]string{true: ", first 20", false: ""}[len(report) > 20])
	}
	return fmt.Errorf("load %s: %s; nothing loaded", t.Name, report[0])
}

// batches splits n rows into runs of size (all in one when size is 0).
func batches(n, size int) [][2]int {
	if size <= 0 {
		size = max(n, 1)
	}
	var out [][2]int
	for lo := 0; lo < n; lo += size {
		out = append(out, [2]int{lo, min(lo+size, n)})
	}
	return out
}

// midwayError reports a commit that failed after earlier batches committed.
func midwayError(table string, sum *loadSummary, total int, err error) error {
	if sum.committedRows == 0 {
		return fmt.Errorf("load %s: %w; nothing loaded", table, err)
	}
	return fmt.Errorf("load %s: %w; rows 1-%d of %d (in checked order) were committed in %s before the failure, the rest is not loaded; loading the file again is safe",
		table, err, sum.committedRows, total, describeTxs(sum.txs))
}
