package cli

import (
	"bufio"
	"bytes"
	"cmp"
	"container/heap"
	"context"
	bin "encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// This file is the bounded load: a load of more than --spill-rows rows in one
// transaction, never holding the file (CSV, JSONL or Parquet, read by row
// group; stdin is copied to a file first, load_spool.go). A changes table's
// rows are applied as one CDC batch key by key (load_stream_changes.go), or
// with --batch-size in the file-order batches of the in-memory path
// (load_stream_changes_batches.go).
//
//   - Pass 1 streams the file once and sums up each column (colStats): the
//     types inferred from these sums are those the in-memory path infers from
//     every value, and the first inexact decimal of a column is the one it
//     warns about.
//   - Pass 2 streams the file again, checks and converts every row exactly as
//     the in-memory path does (loadPlan.row), and writes the rows, encoded
//     compactly, into runs on disk sorted by key (then --at for changes), file
//     order breaking ties; a run is written whenever the rows held pass the
//     --spill-bytes budget. A bad row stops here (or is skipped, --skip-bad):
//     nothing has been written to the store.
//   - The commit merges the runs and applies the rows key by key in one
//     transaction, flushing finished keys to the spilling Writer (Tx.Flush).
//
// Memory is the budget for the rows of a run, one row per run while merging,
// the rows of one key, and the Writer's own spill budget, never the file's
// size (docs/design/load-two-pass-stream.md).

// streamCheckRows is how many rows a pass reads between two looks at the
// interrupt signal.
const streamCheckRows = 4096

// maxRunFanIn is how many runs a merge reads at once; more are first merged
// into larger runs.
const maxRunFanIn = 64

// colStats sums up the values of one column for type inference, in one pass.
type colStats struct {
	nonEmpty, notInt, notDec, notBool bool // CSV texts
	sawNumber, notAllInts             bool // JSON numbers
	// inexactLine and inexact are the first decimal that a float64 cannot hold
	// exactly, of the values that still allow a float64 column.
	inexactLine int
	inexact     string
}

// addText adds a CSV cell (see inferType).
func (c *colStats) addText(s string, line int) {
	if s == "" {
		return
	}
	c.nonEmpty = true
	c.notInt = c.notInt || !isInteger(s)
	c.notDec = c.notDec || !isDecimal(s)
	c.notBool = c.notBool || !isBool(s)
	if !c.notDec && c.inexactLine == 0 && !exactFloat(s) {
		c.inexactLine, c.inexact = line, s
	}
}

// addJSON adds a JSON value (see inferJSONType).
func (c *colStats) addJSON(v any, line int) {
	n, ok := v.(json.Number)
	if !ok {
		return
	}
	c.sawNumber = true
	if _, err := strconv.ParseInt(n.String(), 10, 64); err != nil {
		c.notAllInts = true
	}
	if s := n.String(); s != "" && c.inexactLine == 0 && !exactFloat(s) {
		c.inexactLine, c.inexact = line, s
	}
}

// inferStreamed is makePlan's type inference for a streamed file: the result of
// inferType or inferJSONType and keepExact over every value of column c.
func (p *loadPlan) inferStreamed(in *input, c int) (attrType, bool) {
	s := in.stats[c]
	var typ attrType
	switch {
	case in.isJSON && !s.sawNumber:
		return attrType{}, false
	case in.isJSON && !s.notAllInts:
		typ = typeInt64
	case in.isJSON:
		typ = typeFloat64
	case s.nonEmpty && !s.notInt:
		typ = typeInt64
	case s.nonEmpty && !s.notDec:
		typ = typeFloat64
	case s.nonEmpty && !s.notBool:
		typ = typeBool
	default:
		typ = typeString
	}
	if typ == typeFloat64 && s.inexactLine != 0 {
		p.warnings = append(p.warnings, fmt.Sprintf("%s line %d, column %q: %s cannot be held exactly by a float64, so the column is kept as text (--types %s=float64 rounds it instead)",
			in.name, s.inexactLine, in.cols[c], s.inexact, in.cols[c]))
		typ = typeString
	}
	return typ, true
}

// streamable reports whether a load reads its file in two passes instead of
// holding it: a one-transaction load (or with batches set, a batched one:
// commitMergedBatches, commitEventsInFileOrder) of a CSV or JSONL file with more lines
// than --spill-rows (a row takes at least one line, so fewer lines means the
// in-memory path, without reading the file twice), or of a Parquet file whose
// footer counts more rows.
func streamable(path, format string, mode loadMode, lf *loadFlags, batches bool) (bool, error) {
	if lf.batchSize != 0 && !batches {
		return false, nil
	}
	if format == "parquet" {
		// The footer says how many rows; a file it cannot open goes to the
		// in-memory path, which reports why.
		n, err := parquetRowCount(path)
		return err == nil && n > int64(lf.spillRows), nil
	}
	f, err := os.Open(path)
	if err != nil {
		return false, fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	lines, last := 0, byte('\n')
	for lines <= lf.spillRows {
		n, err := f.Read(buf)
		lines += bytes.Count(buf[:n], []byte{'\n'})
		if n > 0 {
			last = buf[n-1]
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return false, fmt.Errorf("read %s: %w", path, err)
		}
	}
	if last != '\n' {
		lines++
	}
	return lines > lf.spillRows, nil
}

// scanFile streams the rows of path to emit (pass 1 and pass 2), into in:
// the columns, and in.bad for rows that do not split into fields.
func (in *input) scanFile(ctx context.Context, path string, emit func(inputRow) error) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("read %s: %w", in.name, err)
	}
	defer f.Close()
	rows := 0
	each := func(r inputRow) error {
		if rows++; rows%streamCheckRows == 0 && ctx.Err() != nil {
			return errInterrupted
		}
		return emit(r)
	}
	in.bad = nil
	if in.isParquet {
		st, err := f.Stat()
		if err != nil {
			return fmt.Errorf("read %s: %w", in.name, err)
		}
		return in.scanParquet(f, st.Size(), each)
	}
	br := bufio.NewReaderSize(f, 1<<20)
	if in.isJSON { // keeps the columns of an earlier pass: rows get them all
		return in.scanJSONL(br, each)
	}
	in.cols = nil
	var base int64
	if bom, _ := br.Peek(3); bytes.Equal(bom, []byte("\xef\xbb\xbf")) {
		_, _ = br.Discard(3)
		base = 3
	}
	head, _ := br.Peek(64 << 10)
	if bytes.HasPrefix(bytes.TrimSpace(head), []byte("{")) {
		return usagef("%s: the first line starts with '{': it looks like JSON lines, not CSV; give --format jsonl (CSV is the default for stdin and .csv files)", in.name)
	}
	return in.scanCSV(br, io.NewSectionReader(f, base, 1<<62), each)
}

// loadStreamed is the bounded load (see the top of this file). It returns the
// summary of the committed load and the number of rows loaded; small says the
// file turned out to hold no more than --spill-rows rows, and the caller
// loads it in memory instead.
func (a *app) loadStreamed(ctx context.Context, db *store.DB, t *store.Table, mode loadMode, lf *loadFlags,
	types map[string]attrType, path, name, format string) (sum *loadSummary, small bool, err error) {
	in := &input{name: name, isJSON: format != "csv", isParquet: format == "parquet"}
	nothing := func() error {
		return &interruptedError{fmt.Sprintf("load %s: interrupted; nothing loaded, the store is as it was before", t.Name)}
	}
	// Pass 1: count the rows and sum up the columns.
	nrows := 0
	err = in.scanFile(ctx, path, func(r inputRow) error {
		nrows++
		for len(in.stats) < len(r.vals) {
			in.stats = append(in.stats, colStats{})
		}
		for i, v := range r.vals {
			if in.isJSON {
				in.stats[i].addJSON(v, r.line)
			} else {
				in.stats[i].addText(v.(string), r.line)
			}
		}
		return nil
	})
	if errors.Is(err, errInterrupted) {
		return nil, false, nothing()
	}
	if err != nil {
		return nil, false, err
	}
	if nrows <= lf.spillRows {
		return nil, true, nil
	}
	for len(in.stats) < len(in.cols) {
		in.stats = append(in.stats, colStats{})
	}
	if err := in.checkParquetKeys("a key column of table "+t.Name, keyNames(t)); err != nil {
		return nil, false, err
	}
	plan, err := makePlan(in, t, db.AttrTypes(t), mode, lf, types)
	if err != nil && len(in.bad) > 0 {
		return nil, false, fmt.Errorf("load %s: %w; nothing loaded", t.Name, in.bad[0])
	}
	if err != nil {
		return nil, false, err
	}
	for _, w := range plan.warnings {
		fmt.Fprintf(a.stderr, "bitempo: warning: %s\n", w)
	}

	// Pass 2: check and convert every row into sorted runs.
	rs := &runSorter{dir: runsPlace(db), budget: max(lf.spillBytes, 1), byAt: mode == modeUpserts,
		byEvent: mode == modeEvents && lf.batchSize > 0, attrCols: plan.attrCols}
	defer rs.close()
	var bad []*rowError
	good := 0
	errBad := errors.New("bad row")
	err = in.scanFile(ctx, path, func(r inputRow) error {
		if len(in.bad) > 0 && !lf.skipBad {
			return errBad
		}
		r.pad(len(in.cols))
		row, rerr := plan.row(in, &r)
		if rerr != nil {
			bad = append(bad, rerr)
			if !lf.skipBad {
				return errBad
			}
			return nil
		}
		good++
		return rs.add(&row, in)
	})
	if err == nil {
		err = rs.finish()
	}
	switch {
	case errors.Is(err, errInterrupted):
		return nil, false, nothing()
	case err != nil && !errors.Is(err, errBad):
		return nil, false, fmt.Errorf("load %s: %w; nothing loaded", t.Name, err)
	}
	bad = append(in.bad, bad...)
	slices.SortStableFunc(bad, func(x, y *rowError) int { return x.line - y.line })
	if len(bad) > 0 && !lf.skipBad {
		return nil, false, fmt.Errorf("load %s: %w; nothing loaded (--skip-bad skips such rows)", t.Name, bad[0])
	}
	for _, e := range bad {
		fmt.Fprintf(a.stderr, "bitempo: skipped %v\n", e)
	}
	if ctx.Err() != nil {
		return nil, false, nothing()
	}

	// The commit: merge the runs, apply key by key.
	sum = &loadSummary{table: t.Name, file: in.name, rows: good, skipped: len(bad), mode: mode}
	run := &loadRun{a: a, ctx: ctx, db: db, t: t, mode: mode, sum: sum, spillBytes: lf.spillBytes, flushEvery: flushInterval(db), size: lf.batchSize}
	for _, i := range plan.attrCols {
		run.attrNames = append(run.attrNames, in.cols[i])
	}
	if mode == modeEvents {
		batchID := lf.batchID
		if batchID == "" {
			if batchID, err = fileBatchID(path); err != nil {
				return nil, false, fmt.Errorf("load %s: %w; nothing loaded", t.Name, err)
			}
		}
		if run.size > 0 {
			err = run.commitEventsInFileOrder(rs, good, in, batchID)
		} else {
			err = run.commitMergedEvents(rs, good, in, batchID)
		}
	} else if run.size > 0 {
		err = run.commitMergedBatches(rs, good, in)
	} else {
		err = run.commitMerged(rs, good, in)
	}
	if err != nil {
		return nil, false, err
	}
	return sum, false, nil
}

// runsPlace is the directory a streamed load's runs go in: the store's
// directory, so that they land on its disk, or "" (the system's temporary
// directory) for a store without one (etcd).
func runsPlace(db *store.DB) string {
	if st, err := os.Stat(db.Dir()); err == nil && st.IsDir() {
		return db.Dir()
	}
	return ""
}

// flushInterval is how many rows a streamed load applies between flushes of
// its transaction: flushRows, or on an engine that bounds one commit, the rows
// that could fill it, so that a load that cannot fit fails (at the Writer's
// check in the flush) within about one commit's worth of rows.
func flushInterval(db *store.DB) int {
	if maxWrites, _, bounded := db.CommitLimits(); bounded {
		return min(flushRows, max(maxWrites/writesPerRow, 1))
	}
	return flushRows
}

// commitMerged applies the sorted rows of rs key by key in one transaction.
func (r *loadRun) commitMerged(rs *runSorter, nrows int, in *input) error {
	r.bar = r.a.newProgress("loading "+r.t.Name, nrows)
	defer r.bar.finish()
	var vc versionCounts
	var uc upsertCounts
	var overlaps []string
	c, err := txn.Update(r.db, func(tx *txn.Tx) error {
		vc, uc, overlaps = versionCounts{}, upsertCounts{}, nil
		conflicts := 0
		if err := tx.DeclareAttrNames(r.t.Name, r.attrNames); err != nil {
			return err
		}
		if err := tx.SpillTo(r.db.Dir(), r.spillBytes); err != nil && !errors.Is(err, store.ErrBulkUnsupported) {
			return err
		}
		m, err := rs.merge()
		if err != nil {
			return err
		}
		defer m.close()
		sinceFlush := 0
		var group []loadRow
		for {
			group, err = r.nextKeyRows(tx, m, group[:0], in, &sinceFlush)
			if err != nil {
				return err
			}
			if len(group) == 0 {
				break
			}
			switch r.mode {
			case modeVersions:
				idx := make([]int, len(group))
				for i := range idx {
					idx[i] = i
				}
				overlaps = keyOverlaps(overlaps, in.name, r.t, group, idx)
			case modeUpserts:
				for i := 1; i < len(group); i++ {
					if group[i].at == group[i-1].at && conflicting(&group[i-1], &group[i]) {
						conflicts++
					}
				}
				group = lastPerTime(group)
			}
			for i := range group {
				if len(overlaps) > 0 {
					break // the load fails: only the check goes on
				}
				var err error
				if r.mode == modeVersions {
					err = r.putVersion(tx, &group[i], &vc)
				} else {
					err = r.upsert(tx, &group[i], &uc)
				}
				if err != nil {
					return err
				}
			}
			r.bar.add(len(group))
		}
		if len(overlaps) > 0 {
			return errOverlaps
		}
		if r.ctx.Err() != nil { // the last moment at which the load can still be rolled back
			return errInterrupted
		}
		r.sum.conflicts = conflicts
		return nil
	})
	switch {
	case errors.Is(err, errOverlaps):
		return r.a.overlapError(r.t, overlaps)
	case errors.Is(err, errInterrupted):
		return r.interrupted()
	case err != nil:
		return r.midway(err)
	}
	r.sum.committedRows = nrows
	if r.mode == modeVersions {
		vc.addTo(r.sum, c)
	} else {
		uc.addTo(r.sum, c)
	}
	return nil
}

// errOverlaps rolls back a streamed versions load whose rows overlap.
var errOverlaps = errors.New("overlapping rows")

// runSorter collects encoded rows and writes them to sorted runs.
type runSorter struct {
	dir       string // where run files are created ("": the system's temporary directory)
	budget    int64
	byAt      bool  // sort a key's rows by --at (changes), else file order
	byEvent   bool  // sort by event (eventTuple: key, --at, --seq), then file order
	fileOrder bool  // sort by file order alone
	attrCols  []int // the plan's attribute columns, which records name by index
	held      []runRow
	heldSize  int64
	seq       uint64
	runs      []*runFile
}

// close releases the runs' files, which removes them.
func (rs *runSorter) close() {
	for _, f := range rs.runs {
		f.close()
	}
	rs.runs = nil
}

// runFilePrefix begins the name a run file has between its creation and its
// unlinking: the next load of a Pebble store removes such names from its
// directory (removeLoadLeftovers).
const runFilePrefix = "bitempo-spill-load-"

// runFile is one sorted run on disk. Its file has no name (created unnamed
// where the system can, otherwise unlinked as soon as it is created), so that
// it goes with its last handle however the process ends (a kill, a crash, a
// power loss included): the run is written once and read back, any number of
// times, through that handle only.
type runFile struct {
	f    *os.File
	size int64  // bytes written
	name string // where the system refused to unlink an open file: removed at close
}

// writeRunFile creates a run file in dir and writes to it the rows next
// returns until it says there are no more.
func writeRunFile(dir string, next func() (*runRow, bool, error)) (*runFile, error) {
	f, name, err := createRunFile(dir)
	if err != nil {
		return nil, err
	}
	rf := &runFile{f: f, name: name}
	cw := &countingWriter{w: f}
	w := bufio.NewWriterSize(cw, 1<<20)
	var buf []byte
	for {
		row, ok, err := next()
		if err == nil && ok {
			buf = appendRunRow(buf[:0], row)
			_, err = w.Write(buf)
		}
		if err == nil && !ok {
			err = w.Flush()
		}
		if err != nil {
			rf.close()
			return nil, err
		}
		if !ok {
			rf.size = cw.n
			return rf, nil
		}
	}
}

// reader reads the run from its start.
func (rf *runFile) reader() *bufio.Reader {
	return bufio.NewReaderSize(io.NewSectionReader(rf.f, 0, rf.size), 64<<10)
}

// createNamedRunFile creates a run file in dir (the system's temporary
// directory when empty) and unlinks it at once. It returns the file's name
// only where the system refused to unlink an open file, for close to remove.
// Between the two calls the file has a name: a process killed there leaves
// an empty file behind.
func createNamedRunFile(dir string) (*os.File, string, error) {
	f, err := os.CreateTemp(dir, runFilePrefix+"*")
	if err != nil {
		return nil, "", err
	}
	if os.Remove(f.Name()) != nil {
		return f, f.Name(), nil
	}
	return f, "", nil
}

func (rf *runFile) close() {
	rf.f.Close()
	if rf.name != "" {
		_ = os.Remove(rf.name)
	}
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// runRow is one row in a run: its sort key and its encoded record.
type runRow struct {
	tuple string
	at    int64
	seq   uint64 // file order
	rec   []byte
}

func (rs *runSorter) compare(x, y *runRow) int {
	if rs.fileOrder {
		return cmp.Compare(x.seq, y.seq)
	}
	if c := cmp.Compare(x.tuple, y.tuple); c != 0 {
		return c
	}
	if rs.byAt {
		if c := cmp.Compare(x.at, y.at); c != 0 {
			return c
		}
	}
	return cmp.Compare(x.seq, y.seq)
}

// add encodes a checked row and holds it, writing a run past the budget.
func (rs *runSorter) add(row *loadRow, in *input) error {
	rec, err := encodeRow(nil, row, in, rs.attrCols)
	if err != nil {
		return err
	}
	tuple := row.tuple
	if rs.byEvent {
		tuple = eventTuple(row)
	}
	rs.seq++
	return rs.hold(runRow{tuple: tuple, at: row.at, seq: rs.seq - 1, rec: rec})
}

// hold holds an encoded row, writing a run past the budget.
func (rs *runSorter) hold(row runRow) error {
	rs.held = append(rs.held, row)
	noteRowsHeld(len(rs.held))
	rs.heldSize += int64(len(row.rec)+len(row.tuple)) + 64
	if rs.heldSize >= rs.budget {
		return rs.writeRun()
	}
	return nil
}

// writeRun sorts the rows held and writes them as a run. Past 2 x maxRunFanIn
// runs it merges maxRunFanIn of them into one, so that a load holds at most
// that many files open, whatever its size.
func (rs *runSorter) writeRun() error {
	if len(rs.held) == 0 {
		return nil
	}
	slices.SortFunc(rs.held, func(x, y runRow) int { return rs.compare(&x, &y) })
	i := 0
	f, err := writeRunFile(rs.dir, func() (*runRow, bool, error) {
		if i == len(rs.held) {
			return nil, false, nil
		}
		i++
		return &rs.held[i-1], true, nil
	})
	if err != nil {
		return err
	}
	rs.runs = append(rs.runs, f)
	clear(rs.held)
	rs.held, rs.heldSize = rs.held[:0], 0
	if len(rs.runs) >= 2*maxRunFanIn {
		return rs.mergeFirst()
	}
	return nil
}

// finish writes the last run and merges runs until at most maxRunFanIn are left.
func (rs *runSorter) finish() error {
	if err := rs.writeRun(); err != nil {
		return err
	}
	for len(rs.runs) > maxRunFanIn {
		if err := rs.mergeFirst(); err != nil {
			return err
		}
	}
	return nil
}

// mergeFirst merges the first maxRunFanIn runs into one, put last.
func (rs *runSorter) mergeFirst() error {
	m, err := openMerge(rs, rs.runs[:maxRunFanIn])
	if err != nil {
		return err
	}
	f, err := writeRunFile(rs.dir, func() (*runRow, bool, error) {
		row, ok, err := m.next()
		return &row, ok, err
	})
	if err != nil {
		return err
	}
	for _, old := range rs.runs[:maxRunFanIn] {
		old.close()
	}
	rs.runs = append(rs.runs[maxRunFanIn:], f)
	return nil
}

// merge opens every run for reading in sort order.
func (rs *runSorter) merge() (*runMerge, error) { return openMerge(rs, rs.runs) }

// nextKeyRows appends the next key's rows from m to group (none at the end of
// the input), first failing with errInterrupted if the load was interrupted and
// flushing tx when r.flushEvery rows have passed since its last flush;
// sinceFlush counts them across calls.
func (r *loadRun) nextKeyRows(tx *txn.Tx, m *runMerge, group []loadRow, in *input, sinceFlush *int) ([]loadRow, error) {
	group, err := m.nextKey(group, in)
	if err != nil || len(group) == 0 {
		return group, err
	}
	if r.ctx.Err() != nil {
		return group, errInterrupted
	}
	if *sinceFlush >= r.flushEvery {
		if err := tx.Flush(); err != nil {
			return group, err
		}
		*sinceFlush = 0
	}
	*sinceFlush += len(group)
	return group, nil
}

// appendRunRow frames a run row: lengths, tuple, at, seq, record.
func appendRunRow(dst []byte, r *runRow) []byte {
	dst = bin.AppendUvarint(dst, uint64(len(r.tuple)))
	dst = append(dst, r.tuple...)
	dst = bin.AppendVarint(dst, r.at)
	dst = bin.AppendUvarint(dst, r.seq)
	dst = bin.AppendUvarint(dst, uint64(len(r.rec)))
	return append(dst, r.rec...)
}

// readRunRow reads one framed run row; io.EOF at the end of the run.
func readRunRow(br *bufio.Reader, r *runRow) error {
	n, err := bin.ReadUvarint(br)
	if err != nil {
		return err // io.EOF between rows: the end
	}
	tuple := make([]byte, n)
	if _, err := io.ReadFull(br, tuple); err != nil {
		return errRunCorrupt
	}
	if r.at, err = bin.ReadVarint(br); err != nil {
		return errRunCorrupt
	}
	if r.seq, err = bin.ReadUvarint(br); err != nil {
		return errRunCorrupt
	}
	if n, err = bin.ReadUvarint(br); err != nil {
		return errRunCorrupt
	}
	r.tuple, r.rec = string(tuple), make([]byte, n)
	if _, err := io.ReadFull(br, r.rec); err != nil {
		return errRunCorrupt
	}
	return nil
}

// errRunCorrupt: a run file of this load did not read back as written.
var errRunCorrupt = errors.New("a sorted run file of the load is truncated or corrupt")

// runMerge reads runs in sort order (a heap of their current rows).
type runMerge struct {
	rs    *runSorter
	heads []runHead
	cur   runRow // the row after the last key returned, if haveCur
	has   bool
}

type runHead struct {
	row runRow
	br  *bufio.Reader
}

func openMerge(rs *runSorter, runs []*runFile) (*runMerge, error) {
	m := &runMerge{rs: rs}
	for _, f := range runs {
		h := runHead{br: f.reader()}
		switch err := readRunRow(h.br, &h.row); {
		case err == io.EOF:
			continue
		case err != nil:
			return nil, err
		}
		m.heads = append(m.heads, h)
	}
	heap.Init(m)
	return m, nil
}

func (m *runMerge) Len() int           { return len(m.heads) }
func (m *runMerge) Less(i, j int) bool { return m.rs.compare(&m.heads[i].row, &m.heads[j].row) < 0 }
func (m *runMerge) Swap(i, j int)      { m.heads[i], m.heads[j] = m.heads[j], m.heads[i] }
func (m *runMerge) Push(x any)         { m.heads = append(m.heads, x.(runHead)) }
func (m *runMerge) Pop() any {
	h := m.heads[len(m.heads)-1]
	m.heads = m.heads[:len(m.heads)-1]
	return h
}

// next returns the next row in sort order; ok false at the end.
func (m *runMerge) next() (runRow, bool, error) {
	if len(m.heads) == 0 {
		return runRow{}, false, nil
	}
	row := m.heads[0].row
	switch err := readRunRow(m.heads[0].br, &m.heads[0].row); {
	case err == io.EOF:
		heap.Pop(m)
	case err != nil:
		return runRow{}, false, err
	default:
		heap.Fix(m, 0)
	}
	return row, true, nil
}

// nextKey appends the rows of the next key to dst, decoded; none at the end.
func (m *runMerge) nextKey(dst []loadRow, in *input) ([]loadRow, error) {
	if !m.has {
		row, ok, err := m.next()
		if err != nil || !ok {
			return dst, err
		}
		m.cur, m.has = row, true
	}
	tuple := m.cur.tuple
	for m.has && m.cur.tuple == tuple {
		lr, err := decodeRow(m.cur.rec, tuple, in, m.rs.attrCols)
		if err != nil {
			return dst, err
		}
		lr.at = m.cur.at
		dst = append(dst, lr)
		noteRowsHeld(len(dst))
		row, ok, err := m.next()
		if err != nil {
			return dst, err
		}
		m.cur, m.has = row, ok
	}
	return dst, nil
}

// close drops the merge's readers; the runs stay, to be read again.
func (m *runMerge) close() { m.heads = nil }

// Value tags of the run encoding.
const (
	tagNull byte = iota
	tagInt
	tagUint
	tagFloat
	tagFalse
	tagTrue
	tagString
	tagBytes
	tagTime
	tagDecimal // scale (1 byte), then the coefficient as a varint
)

// encodeRow encodes a checked row for a run: line, from, to, seq, del, the key
// components and the attributes (by their index in attrCols). The tuple and
// --at time are in the run row's frame.
func encodeRow(dst []byte, row *loadRow, in *input, attrCols []int) ([]byte, error) {
	dst = bin.AppendUvarint(dst, uint64(row.line))
	dst = bin.AppendVarint(dst, row.from)
	dst = bin.AppendVarint(dst, row.to)
	dst = bin.AppendVarint(dst, row.seq)
	dst = append(dst, map[bool]byte{false: 0, true: 1}[row.del])
	dst = bin.AppendUvarint(dst, uint64(len(row.key)))
	var err error
	for _, c := range row.key {
		if dst, err = appendValue(dst, c); err != nil {
			return nil, err
		}
	}
	dst = bin.AppendUvarint(dst, uint64(len(row.attrs)))
	for i, c := range attrCols {
		v, ok := row.attrs[in.cols[c]]
		if !ok {
			continue
		}
		dst = bin.AppendUvarint(dst, uint64(i))
		if dst, err = appendValue(dst, v); err != nil {
			return nil, err
		}
	}
	return dst, nil
}

func appendValue(dst []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(dst, tagNull), nil
	case int64:
		return bin.AppendVarint(append(dst, tagInt), x), nil
	case uint64:
		return bin.AppendUvarint(append(dst, tagUint), x), nil
	case float64:
		return bin.BigEndian.AppendUint64(append(dst, tagFloat), math.Float64bits(x)), nil
	case bool:
		if x {
			return append(dst, tagTrue), nil
		}
		return append(dst, tagFalse), nil
	case string:
		return append(bin.AppendUvarint(append(dst, tagString), uint64(len(x))), x...), nil
	case []byte:
		return append(bin.AppendUvarint(append(dst, tagBytes), uint64(len(x))), x...), nil
	case time.Time:
		return bin.AppendVarint(append(dst, tagTime), x.UnixMicro()), nil
	case encoding.Decimal:
		return bin.AppendVarint(append(dst, tagDecimal, byte(x.Scale())), x.Coef()), nil
	}
	return nil, fmt.Errorf("a value of type %T cannot go into a sorted run", v)
}

// decodeRow decodes a record of encodeRow.
func decodeRow(b []byte, tuple string, in *input, attrCols []int) (loadRow, error) {
	d := runDecoder{b: b}
	row := loadRow{line: int(d.uvarint()), tuple: tuple}
	row.from, row.to, row.seq = d.varint(), d.varint(), d.varint()
	row.del = d.byte() == 1
	row.key = make(store.Key, d.uvarint())
	for i := range row.key {
		row.key[i] = d.value()
	}
	n := int(d.uvarint())
	row.attrs = make(store.Attrs, n)
	for range n {
		i := int(d.uvarint())
		v := d.value()
		if d.bad || i >= len(attrCols) {
			return row, errRunCorrupt
		}
		row.attrs[in.cols[attrCols[i]]] = v
	}
	if d.bad {
		return row, errRunCorrupt
	}
	return row, nil
}

// runDecoder reads a record; bad is set on the first short or invalid read.
type runDecoder struct {
	b   []byte
	bad bool
}

func (d *runDecoder) uvarint() uint64 { return readVarint(d, bin.Uvarint) }

func (d *runDecoder) varint() int64 { return readVarint(d, bin.Varint) }

// readVarint reads a varint with read, binary.Uvarint or binary.Varint.
func readVarint[T int64 | uint64](d *runDecoder, read func([]byte) (T, int)) T {
	v, n := read(d.b)
	if n <= 0 {
		d.bad = true
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *runDecoder) byte() byte {
	if len(d.b) == 0 {
		d.bad = true
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *runDecoder) bytes() []byte {
	n := d.uvarint()
	if uint64(len(d.b)) < n {
		d.bad = true
		return nil
	}
	s := d.b[:n]
	d.b = d.b[n:]
	return s
}

func (d *runDecoder) value() any {
	switch d.byte() {
	case tagNull:
		return nil
	case tagInt:
		return d.varint()
	case tagUint:
		return d.uvarint()
	case tagFloat:
		if len(d.b) < 8 {
			d.bad = true
			return nil
		}
		f := math.Float64frombits(bin.BigEndian.Uint64(d.b))
		d.b = d.b[8:]
		return f
	case tagFalse:
		return false
	case tagTrue:
		return true
	case tagString:
		return string(d.bytes())
	case tagBytes:
		return bytes.Clone(d.bytes())
	case tagTime:
		return time.UnixMicro(d.varint()).UTC()
	case tagDecimal:
		scale := int(d.byte())
		v, err := encoding.NewDecimal(d.varint(), scale)
		if err != nil {
			d.bad = true
			return nil
		}
		return v
	}
	d.bad = true
	return nil
}
