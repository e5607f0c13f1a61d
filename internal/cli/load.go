package cli

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
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
	batchSize, spillRows          int
	spillBytes                    int64
}

// compactAfterRows is the size of load after which load compacts the store
// (store.DB.Compact); smaller loads leave compaction to the background
// (docs/design/load-compaction.md).
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

The key columns are the table's; every other column is an attribute. A column
the table declares (create --columns) is read as its declared type, and an
attribute the table already holds as the type its first value established (so a
cell n/a in a float64 column is a bad row, not a new string column); only
attributes the table never held take --types COL=TYPE (string, int64, uint64,
float64, bool, bytes, time, date, decimal(P,S)) or are inferred per column
(integers, decimals, booleans, otherwise strings); an empty cell is null. A
decimal(P,S) cell is read exactly and rescaled: 232.1 is 232.10, 0.125 does not
fit decimal(10,2). A time
column takes RFC 3339 values or dates (midnight UTC) and stores time values (UTC,
to the microsecond), which output prints in RFC 3339 and a backfill window can use.
Values come back as they went in: a column holding a decimal that a float64 cannot
hold exactly (12345678901234567890.5) is kept as text, with a warning naming the
line (--types COL=float64 rounds it instead). Text must be UTF-8: a cell that is
not fails the load with its line and column (or is skipped with --skip-bad).
Parquet columns are typed and need no --types: integers load as int64, FLOAT,
DOUBLE and DECIMAL as float64, BOOLEAN as bool, STRING as string, TIMESTAMP and
DATE columns load as time values (as --types time does), other byte
arrays as hex text; a null is null. Key columns must be integers, strings or
bytes; nested columns are refused.

Every row is read and checked before anything is written: a row that does not fit
(bad time, wrong type, missing key) fails the load with its file, line and column,
and nothing is committed, unless --skip-bad (each skipped row is reported).

A load is one transaction: every row commits at one transaction time, or none
does. A load that fails, or is interrupted (Ctrl-C, SIGTERM), leaves the store
exactly as it was and says so; a kill or a crash cannot leave part of it either.

Memory: a load of up to --spill-rows rows (default 500,000) is held in memory,
file and transaction: about 1 KB per row parsed and 1.6 KB more per row of
transaction into a periods table (into a changes table about 4 KB per row in
all: 4.2 GB for 1M rows). A larger load in one transaction (no --batch-size)
is bounded instead, whatever the format and the table's kind, and reads its
input twice: pass 1 infers the
column types (the same types as in memory), pass 2 checks and converts every
row (the same errors, lines and columns, the same --skip-bad) into runs sorted
by key on disk, one run per --spill-bytes (64 MB) of rows, in files of the
store's directory. Only then does the transaction
start: the runs are merged and applied key by key (into a changes table as one
CDC batch, with the versions, batch id, counts and errors of one Apply of the
whole file), and its writes spill to sorted files past --spill-bytes too; the
commit adds them in one atomic step (an ingested sstable). Memory is then about
2 x --spill-bytes, the rows of one key and about 100 bytes per distinct key,
and grows only slowly with the rows: measured 0.62 GB peak for 1M change rows
into a periods table (0.83 GB for 10M) and 0.58 GB for 1M CDC rows into a
changes table. The run files take about 50 bytes per row on disk; each has
no name (created with O_TMPFILE on Linux, else unlinked as soon as it is
created) and is read back through its open handle, so that its space is freed
when the load ends, however it ends (a kill or a crash included). Versions are the same as
in memory; into a periods table surrogate keys (sk) are numbered in key order
rather than file order, and overlapping versions are listed in key order.
On a store whose engine bounds one commit (etcd), a one-transaction load of
more rows than the commit holds writes takes this bounded path too, its runs
in the system's temporary directory; its writes cannot spill, so it fails as
soon as they pass the bound, nothing written (--batch-size loads it). There a
--batch-size load into a periods table streams too: it commits the sorted
rows in batches of whole keys, in key order, holding one batch; a load that
stops there (an interruption, a failed commit) names the rows committed in
that order (rows 1-N of the file's, and the file line of the last one).
A --batch-size load into a changes table of more rows than --spill-rows (on
etcd, than one commit holds writes) streams on every engine, in the batches
of the in-memory load: file order, the same rows in each, the same batch ids,
the same store; it reads its input twice, writes its rows to runs twice
(sorted by event, then by file order) and holds one batch of rows.
A Parquet file is read row group by row group (one row group's pages in
memory). Stdin (FILE -) is first copied to a file on disk, as large as the
input: in the store directory's parent, named .bitempo-stdin-* (in the
system's temporary directory if that one cannot be written); the copy is
loaded as a file would be (and its content hash is the default batch id) and
is removed when the load ends, fails or is interrupted, or after a kill by the
next load of the store.

--batch-size N instead commits N rows per transaction. The load is then no
longer atomic: an interruption or failure stops between batches and names the
rows that committed (in file order, or --at order for changes into a periods
table), and running the same command again finishes the load (rows already
loaded change nothing; for a changes table keep the same --batch-size).

Periods tables and late changes: a periods table keeps versions, not events. A
change row equal to the version in effect is a no-op and is dropped; a row dated
before or between versions already stored is late and only rewrites the interval
up to the next stored change. So loading changes file by file can give another
history than loading them as one file: if file 1 holds gold on 01-01 and gold on
03-01 (dropped) and file 2 holds silver on 02-01, silver runs on past 03-01. The
summary counts the late rows and the no-op rows dropped. When events come late,
repeated or split across files in any order, use a changes table (bitempo create
NAME --kind changes): its versions derive from the set of events, whatever their
order.

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
	f.StringSliceVar(&lf.types, "types", nil, "attribute types, COL=TYPE,... with TYPE one of "+typeNames)
	f.StringSliceVar(&lf.ignore, "ignore", nil, "columns of the file to leave out (e.g. sk, tx_from, tx_to of a scan's output)")
	f.BoolVar(&lf.skipBad, "skip-bad", false, "skip rows that do not fit, reporting each, instead of failing")
	f.IntVar(&lf.batchSize, "batch-size", 0, "commit N rows per transaction instead of the whole file in one (0: one transaction)")
	f.IntVar(&lf.spillRows, "spill-rows", 500_000, "a one-transaction load of more rows goes key by key, its writes spilling to disk")
	f.Int64Var(&lf.spillBytes, "spill-bytes", defaultSpillBytes, "a load of more than --spill-rows rows: memory its sorted rows, and then its writes, take before they go to disk")
	f.BoolVar(&lf.noCompact, "no-compact", false, "do not compact the store after a load of 100,000 rows or more")
	return cmd
}

// removeLoadLeftovers removes what loads killed midway left: their spilled
// writes, run files killed between their creation and their unlinking (a
// moment, where O_TMPFILE is not available), and stdin spools. The store's lock, held now, says no load is using them.
func removeLoadLeftovers(db *store.DB) {
	if left, _ := filepath.Glob(filepath.Join(db.Dir(), "bitempo-spill-*")); len(left) > 0 {
		for _, d := range left {
			_ = os.RemoveAll(d)
		}
	}
	removeLeftoverSpools(db)
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
	// SIGINT and SIGTERM roll the load back instead of killing the process
	// midway (SIGKILL cannot be caught, but a commit is atomic on disk). The
	// handler goes in before the store is opened, so that an interrupt while
	// it opens is reported too.
	ctx, stop := a.interruptContext()
	defer stop()
	db, err := a.open(false)
	if err != nil {
		return err
	}
	defer db.Close()
	t, err := a.table(db, table)
	if err != nil {
		return err
	}
	if a.shared == nil {
		removeLoadLeftovers(db) // a server did at its start: its loads run side by side
	}
	mode, err := chooseMode(t, lf)
	if err != nil {
		return err
	}
	name := path
	if path == "-" {
		// Stdin cannot be read twice: a copy on disk can, and streams.
		spool, err := a.spoolStdin(ctx, db, t.Name)
		if err != nil {
			return err
		}
		defer os.Remove(spool)
		path, name = spool, "stdin"
	}
	maxWrites, _, bounded := db.CommitLimits()
	// A file of more than --spill-rows rows streams when the load is one
	// transaction or a batched load into a changes table (its batches those
	// of the in-memory path, in file order), on any engine. On an engine that
	// bounds one commit, a batched load into a periods table streams too (in
	// key order), and so does a file of more rows than a commit holds writes:
	// a one-transaction load then holds no more than the commit can before it
	// fails, and a batched load no more than a batch (docs/replication.md).
	batches := lf.batchSize > 0 && (bounded || mode == modeEvents)
	if bounded {
		lf.spillRows = min(lf.spillRows, max(maxWrites, 1))
	}
	if stream, err := streamable(path, format, mode, lf, batches); err != nil {
		return err
	} else if stream {
		sum, small, err := a.loadStreamed(ctx, db, t, mode, lf, types, path, name, format)
		if err != nil {
			return err
		}
		if !small {
			return a.loadDone(ctx, db, t, sum, lf)
		}
	}
	var in *input
	if name != path {
		// The spooled copy of stdin: a file read returns promptly, and the
		// signal is looked at after it, so the deferred removal of the copy runs.
		in, err = readInputAs(path, name, format, a.stdin)
	} else {
		in, err = a.readInterruptible(ctx, t.Name, path, name, format)
	}
	if err != nil {
		return err
	}
	noteRowsHeld(len(in.rows))
	if err := in.checkParquetKeys("a key column of table "+t.Name, keyNames(t)); err != nil {
		return err
	}
	plan, err := makePlan(in, t, db.AttrTypes(t), mode, lf, types)
	if err != nil && len(in.bad) > 0 {
		// Columns go missing when the rows that hold them could not be read
		// (every line of a JSONL file bad): the bad row is the cause to report.
		return fmt.Errorf("load %s: %w; nothing loaded", t.Name, in.bad[0])
	}
	if err != nil {
		return err
	}
	for _, w := range plan.warnings {
		fmt.Fprintf(a.stderr, "bitempo: warning: %s\n", w)
	}
	rows, bad := plan.convert(in)
	bad = append(in.bad, bad...)
	in.rows = nil // converted: let the parsed cells go before the transaction grows
	slices.SortStableFunc(bad, func(x, y *rowError) int { return x.line - y.line })
	if len(bad) > 0 && !lf.skipBad {
		return fmt.Errorf("load %s: %w; nothing loaded (--skip-bad skips such rows)", t.Name, bad[0])
	}
	for _, e := range bad {
		fmt.Fprintf(a.stderr, "bitempo: skipped %v\n", e)
	}
	if ctx.Err() != nil {
		return &interruptedError{fmt.Sprintf("load %s: interrupted; nothing loaded, the store is as it was before", t.Name)}
	}
	if mode == modeVersions {
		if err := a.checkOverlaps(in.name, t, rows); err != nil {
			return err
		}
	}
	sum := loadSummary{table: t.Name, file: in.name, rows: len(rows), skipped: len(bad), mode: mode}
	run := &loadRun{a: a, ctx: ctx, db: db, t: t, mode: mode, rows: rows, size: lf.batchSize, sum: &sum,
		grouped: lf.batchSize == 0 && mode != modeEvents && len(rows) > lf.spillRows, spillBytes: lf.spillBytes}
	for _, i := range plan.attrCols {
		run.attrNames = append(run.attrNames, in.cols[i])
	}
	switch mode {
	case modeVersions:
		err = run.commitVersions()
	case modeUpserts:
		err = run.commitUpserts()
	case modeEvents:
		batchID := lf.batchID
		if batchID == "" {
			h := sha256.Sum256(in.data)
			batchID = "sha256:" + hex.EncodeToString(h[:16])
		}
		err = run.commitEvents(batchID)
	}
	if err != nil {
		return err
	}
	return a.loadDone(ctx, db, t, &sum, lf)
}

// loadDone reports a load that committed (or committed nothing) and compacts
// the store after a large one.
func (a *app) loadDone(ctx context.Context, db *store.DB, t *store.Table, sum *loadSummary, lf *loadFlags) error {
	if !a.quiet {
		fmt.Fprintln(a.stderr, sum.String())
	}
	if ctx.Err() != nil {
		// The signal came while the last transaction was committing: too late
		// to roll it back, so the load is whole.
		fmt.Fprintf(a.stderr, "bitempo: interrupted after the load committed; every row is loaded\n")
		return nil
	}
	if sum.rows >= compactAfterRows && len(sum.txs) > 0 && !lf.noCompact { // a load that committed nothing wrote nothing to compact
		start := time.Now()
		if err := db.Compact(ctx); err != nil {
			return fmt.Errorf("load %s: every row is committed, but compaction stopped: %w (bitempo compact finishes it)", t.Name, err)
		}
		if !a.quiet {
			fmt.Fprintf(a.stderr, "compacted the store in %s\n", time.Since(start).Round(time.Millisecond))
		}
	}
	return nil
}

// readInterruptible reads the input file (see exitDuringRead).
func (a *app) readInterruptible(ctx context.Context, table, path, name, format string) (*input, error) {
	what := path
	if what == "-" {
		what = "stdin"
	}
	var in *input
	err := a.exitDuringRead(ctx, table, what, nil, func() (err error) {
		in, err = readInputAs(path, name, format, a.stdin)
		return err
	})
	return in, err
}

// exitDuringRead runs read, a read of the load's input (named what in
// messages). A read of stdin does not return when a signal arrives (a
// terminal, or a pipe whose writer ignores SIGINT), so a signal during it
// runs cleanup (when not nil), says that nothing was loaded and ends the
// process there: nothing has been written to the store yet. A command run
// for a server (a.shared) is never ended this way.
func (a *app) exitDuringRead(ctx context.Context, table, what string, cleanup func(), read func() error) error {
	const reading, done, exiting = 0, 1, 2
	var phase atomic.Int32
	finished := make(chan struct{})
	defer close(finished)
	go func() {
		select {
		case <-ctx.Done():
			if a.shared == nil && phase.CompareAndSwap(reading, exiting) {
				if cleanup != nil {
					cleanup()
				}
				fmt.Fprintf(a.stderr, "bitempo: load %s: interrupted while reading %s; nothing loaded, the store is as it was before\n", table, what)
				os.Exit(exitSignal)
			}
		case <-finished:
		}
	}()
	err := read()
	if !phase.CompareAndSwap(reading, done) {
		select {} // the goroutine is exiting the process
	}
	return err
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
		report = keyOverlaps(report, file, t, rows, byKey[k])
	}
	return a.overlapError(t, report)
}

// keyOverlaps appends to report the overlapping pairs among the rows idx of
// one key.
func keyOverlaps(report []string, file string, t *store.Table, rows []loadRow, idx []int) []string {
	slices.SortStableFunc(idx, func(x, y int) int { return cmp.Compare(rows[x].from, rows[y].from) })
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
	return report
}

// overlapError is the error of a versions load whose rows overlap (report),
// listing the pairs on stderr; nil when report is empty.
func (a *app) overlapError(t *store.Table, report []string) error {
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
