package query

import (
	"bytes"
	"cmp"
	"fmt"
	"iter"
	"math"
	"slices"

	"github.com/bitempo/bitempo/store"
)

// LeftRow is one request of a backfill (a training row): the features of the
// group whose GroupBy attributes equal Group, at valid time TS, as known at
// transaction time Tx.
type LeftRow struct {
	// Group holds one value per GroupBy attribute; ignored by table-wide backfills.
	Group store.Key
	TS    int64
	// Tx is the transaction time the row reads at; 0 takes BackfillOptions.Tx.
	Tx int64
}

// BackfillOptions tune a backfill.
type BackfillOptions struct {
	// Tx is the transaction time of rows whose Tx is 0; 0 means the latest commit
	// of the snapshot the backfill reads.
	Tx int64
	// TableWide aggregates every version of the table at each row's time instead
	// of one group's (a series such as "total amount at each reference date").
	TableWide bool
	// Progress, if set, is called on the backfill's goroutine about every
	// ProgressEvery computed rows, within a group as between groups (a
	// table-wide backfill is one group), and once at the end.
	Progress func(BackfillProgress)
	// ProgressEvery is the number of computed rows between Progress calls;
	// default 1% of the rows.
	ProgressEvery int
}

// BackfillProgress says how far a backfill is.
type BackfillProgress struct {
	Rows, TotalRows     int // rows computed
	Groups, TotalGroups int // groups swept
}

// BackfillRow is the result of one left row.
type BackfillRow struct {
	// Index is the row's position in the input.
	Index int
	// Values holds one value per feature, in FeatureNames(aggs) order.
	Values []any
}

// Backfill computes the features aggs for every left row, yielding them in input
// order. Rows are bucketed by group and sorted by transaction time and ts; each
// group's records are read once from the group index, and for each transaction
// time the rows read at, one sweep over ts adds a version to each feature's
// running state when ts reaches its start and removes it when ts reaches its
// end. A group of v versions and r rows costs one range scan plus
// O(v log v + r log r), not one scan per row; a run of few rows for its
// versions (at most 4 per bit of v) is computed instead by testing every
// version against each row, O(v r). Rows of a group that read at many distinct
// transaction times cost one pass over the group's records per distinct time.
//
// A row is yielded once every earlier row is done: input clustered by group
// streams group by group (computed in the order they first appear), a shuffled
// input is mostly held until the end (16 bytes per row and feature), its
// groups computed in the order of their keys in the group index. Each row's
// Values is a fresh slice. A failure (an unknown table, an invalid spec or
// group key, a value an aggregation cannot take) is yielded once and ends the
// backfill: the first failing group in order of appearance, after the rows
// before its first row. Table-wide backfills read every version of the table
// alive at each distinct transaction time into memory.
//
// Backfill is BackfillRows with each row's features boxed into a fresh slice.
func Backfill(r store.Reader, table string, rows []LeftRow, aggs []Agg, opts BackfillOptions) iter.Seq2[BackfillRow, error] {
	return backfillOn(r, table, rows, aggs, opts, intPath)
}

// BackfillRows is Backfill yielding each row as a view of its computed
// features (FeatureRow), valid until the next iteration: the features are read
// with typed accessors, and nothing is allocated per row. Rows come in input
// order, as Backfill's do.
func BackfillRows(r store.Reader, table string, rows []LeftRow, aggs []Agg, opts BackfillOptions) iter.Seq2[*FeatureRow, error] {
	return backfillRowsOn(r, table, rows, aggs, opts, intPath, evalByShape)
}

// backfillOn is Backfill on the given path.
func backfillOn(r store.Reader, table string, rows []LeftRow, aggs []Agg, opts BackfillOptions, path aggPath) iter.Seq2[BackfillRow, error] {
	return func(yield func(BackfillRow, error) bool) {
		for row, err := range backfillRowsOn(r, table, rows, aggs, opts, path, evalByShape) {
			if err != nil {
				yield(BackfillRow{}, err)
				return
			}
			out := BackfillRow{Index: row.Index, Values: make([]any, row.Len())}
			for k := range out.Values {
				out.Values[k] = row.Value(k)
			}
			if !yield(out, nil) {
				return
			}
		}
	}
}

// backfillRowsOn is BackfillRows on the given path, evaluating runs of rows
// by rule eval.
func backfillRowsOn(r store.Reader, table string, rows []LeftRow, aggs []Agg, opts BackfillOptions, path aggPath, eval evalRule) iter.Seq2[*FeatureRow, error] {
	return func(yield func(*FeatureRow, error) bool) {
		s, release, err := r.AcquireSnapshot()
		if err != nil {
			yield(nil, err)
			return
		}
		defer release()
		b, err := newBackfill(s, table, rows, aggs, opts, path, eval)
		if err != nil {
			yield(nil, err)
			return
		}
		defer b.scan.Close() // run closes it when the backfill ends; this after an early stop
		b.run(yield)
	}
}

// FeatureRow is one row of BackfillRows: the features of one left row, in
// FeatureNames(aggs) order, as a view valid until the next iteration.
type FeatureRow struct {
	// Index is the row's position in the input.
	Index int
	cells []cell
	refs  []any
}

// Len returns the number of features.
func (r *FeatureRow) Len() int { return len(r.cells) }

// val returns feature k.
func (r *FeatureRow) val(k int) val {
	c := r.cells[k]
	v := val{kind: c.kind, n: c.n}
	if c.kind == valRef {
		v.ref = r.refs[c.n]
	}
	return v
}

// Null reports whether feature k is null (SUM, MIN and the like of an empty set).
func (r *FeatureRow) Null(k int) bool { return r.cells[k].kind == valNull }

// Int returns feature k when it is an int64 (COUNT, COUNT_DISTINCT, a SUM of
// integers, MIN or MAX of an integer column, ...); ok is false for a null or
// a value of another type.
func (r *FeatureRow) Int(k int) (int64, bool) {
	c := r.cells[k]
	return int64(c.n), c.kind == valInt
}

// Float returns feature k when it is a float64 (AVG, a SUM of floats); ok is
// false for a null or a value of another type.
func (r *FeatureRow) Float(k int) (float64, bool) {
	c := r.cells[k]
	return math.Float64frombits(c.n), c.kind == valFloat
}

// Value returns feature k as Backfill's Values hold it (nil, bool, int64,
// uint64, float64, time.Time, encoding.Decimal or an attribute's value).
func (r *FeatureRow) Value(k int) any { return r.val(k).any() }

type backfill struct {
	s      *store.Snapshot
	p      *plan
	rows   []LeftRow
	opts   BackfillOptions
	lastTx int64
	nf     int

	groups   [][]byte // encoded group keys, in order of first appearance
	bounds   []int    // group g's rows are order[bounds[g]:bounds[g+1]]
	order    []int32
	rowGroup []int32 // per row, its group
	visit    []int32 // the groups in the order they are computed
	txs      []int64 // resolved transaction time per row

	cells    []cell // row i's features are cells[i*nf : (i+1)*nf]
	refs     []any  // values of valRef cells
	ready    []bool
	next     int // first row not yet yielded
	computed int
	swept    int // groups finished
	reported int // rows computed at the last Progress call
	calls    int // Progress calls so far

	// scan reads the groups' records, adding through onEntry those whose valid
	// period meets [loadFrom, loadTo] (loadGroup).
	scan             *store.GroupScan
	onEntry          func(*store.GroupEntry) error
	loadFrom, loadTo int64

	// Reused buffers: members of the current group (or table-wide load), and
	// per filter the sweep's edges and membership states.
	mem          memberBuf
	boxed        []bool    // per plan.attrs: some feature needs the values boxed
	cols         []colPath // per plan.attrs: how the loaded members hold the column
	starts, ends [][]edge
	states       [][]uint8
	accs         []accum  // the running states of the last sweep
	next2        [][2]int // per filter: the sweep's next start and end
	// Per filter, the spans of a direct evaluation's members (backfill_direct.go).
	spans [][]memberSpan
	eval  evalRule
}

// cell is a computed feature value waiting for its row to be yielded: a val
// without its pointer (a valRef's n indexes backfill.refs).
type cell struct {
	kind uint8
	n    uint64
}

// edge is a member entering (or leaving) a filter's set at time at.
type edge struct {
	at int64
	id int32
}

func newBackfill(s *store.Snapshot, table string, rows []LeftRow, aggs []Agg, opts BackfillOptions, path aggPath, eval evalRule) (*backfill, error) {
	if len(rows) > math.MaxInt32 {
		return nil, fmt.Errorf("bitempo: backfill of %d rows: at most %d per call", len(rows), math.MaxInt32)
	}
	t, err := s.Table(table)
	if err != nil {
		return nil, err
	}
	p, err := newPlan(s, t, aggs, path)
	if err != nil {
		return nil, err
	}
	b := &backfill{s: s, p: p, rows: rows, opts: opts, lastTx: s.LastTx(), nf: len(p.feats), boxed: p.boxedCols(), cols: make([]colPath, len(p.attrs)),
		starts: make([][]edge, len(p.filters)), ends: make([][]edge, len(p.filters)), states: make([][]uint8, len(p.filters)),
		spans: make([][]memberSpan, len(p.filters)), eval: eval, scan: s.GroupScan(p.t)}
	b.onEntry = b.addEntry
	if b.opts.ProgressEvery <= 0 {
		b.opts.ProgressEvery = max(len(rows)/100, 1)
	}
	b.txs = make([]int64, len(rows))
	for i := range rows {
		tx := cmp.Or(rows[i].Tx, opts.Tx, b.lastTx)
		b.txs[i] = min(tx, b.lastTx) // later times read the same state
	}
	if err := b.bucket(); err != nil {
		return nil, err
	}
	b.cells = make([]cell, len(rows)*b.nf)
	b.ready = make([]bool, len(rows))
	return b, nil
}

// bucket assigns rows to groups in order of first appearance and lays out each
// group's rows contiguously in b.order (a counting sort, stable by index).
func (b *backfill) bucket() error {
	b.rowGroup = make([]int32, len(b.rows))
	rowGroup := b.rowGroup
	if !b.opts.TableWide {
		ids := map[string]int32{}
		var buf []byte
		for i := range b.rows {
			var err error
			buf, err = b.p.t.AppendGroupKey(buf[:0], b.rows[i].Group)
			if err != nil {
				return fmt.Errorf("backfill row %d: %w", i, err)
			}
			id, ok := ids[string(buf)]
			if !ok {
				id = int32(len(b.groups))
				ids[string(buf)] = id
				b.groups = append(b.groups, slices.Clone(buf))
			}
			rowGroup[i] = id
		}
	} else if len(b.rows) > 0 {
		b.groups = [][]byte{nil}
	}
	b.bounds = make([]int, len(b.groups)+1)
	for _, g := range rowGroup {
		b.bounds[g+1]++
	}
	for g := range b.groups {
		b.bounds[g+1] += b.bounds[g]
	}
	fill := slices.Clone(b.bounds)
	b.order = make([]int32, len(b.rows))
	for i, g := range rowGroup {
		b.order[fill[g]] = int32(i)
		fill[g]++
	}
	b.visit = make([]int32, len(b.groups))
	for g := range b.visit {
		b.visit[g] = int32(g)
	}
	if !clustered(rowGroup) {
		slices.SortFunc(b.visit, func(g, h int32) int { return bytes.Compare(b.groups[g], b.groups[h]) })
	}
	return nil
}

// clustered reports whether each group's rows are contiguous in the input.
// A backfill computes the groups of clustered rows in order of appearance,
// streaming them group by group; rows of other inputs are mostly held until
// the end whatever the order, and their groups are computed in the group
// index's order, so that the group scans read forward through the index and
// its blocks are read once.
func clustered(rowGroup []int32) bool {
	for i := 1; i < len(rowGroup); i++ {
		if rowGroup[i] < rowGroup[i-1] {
			return false
		}
	}
	return true
}

// run computes the groups in b.visit order and yields each row once every
// row before it is done and every group that first appears before its group
// is computed. A failing group ends the backfill once the groups appearing
// before it are computed: the rows yielded and the error are those of
// computing the groups in order of appearance.
func (b *backfill) run(yield func(*FeatureRow, error) bool) {
	row := &FeatureRow{}
	done := make([]bool, len(b.groups))
	prefix := 0 // groups 0..prefix-1 are computed
	fail, failErr := len(b.groups), error(nil)
	for n, g := range b.visit {
		if int(g) > fail {
			continue // a group appearing before it failed
		}
		b.swept = n
		if err := b.group(int(g)); err != nil {
			fail, failErr = int(g), err
			continue
		}
		done[g] = true
		for prefix < len(done) && done[prefix] {
			prefix++
		}
		b.progress(n+1, false)
		for b.next < len(b.rows) && int(b.rowGroup[b.next]) < prefix {
			row.Index, row.cells, row.refs = b.next, b.cells[b.next*b.nf:(b.next+1)*b.nf], b.refs
			b.next++
			if !yield(row, nil) {
				return
			}
		}
	}
	if failErr != nil {
		yield(nil, failErr)
		return
	}
	if err := b.scan.Close(); err != nil {
		yield(nil, err)
		return
	}
	b.progress(len(b.groups), true)
}

func (b *backfill) progress(groups int, final bool) {
	switch {
	case b.opts.Progress == nil:
		return
	case final && b.calls > 0 && b.reported == b.computed:
		return // the last report already said it all
	case !final && b.computed-b.reported < b.opts.ProgressEvery:
		return
	}
	b.reported = b.computed
	b.calls++
	b.opts.Progress(BackfillProgress{Rows: b.computed, TotalRows: len(b.rows), Groups: groups, TotalGroups: len(b.groups)})
}

// group computes every row of group g.
func (b *backfill) group(g int) error {
	idx := b.order[b.bounds[g]:b.bounds[g+1]]
	slices.SortFunc(idx, func(i, j int32) int {
		if c := cmp.Compare(b.txs[i], b.txs[j]); c != 0 {
			return c
		}
		if c := cmp.Compare(b.rows[i].TS, b.rows[j].TS); c != 0 {
			return c
		}
		return cmp.Compare(i, j)
	})
	minTS, maxTS := b.rows[idx[0]].TS, b.rows[idx[0]].TS
	for _, i := range idx {
		minTS, maxTS = min(minTS, b.rows[i].TS), max(maxTS, b.rows[i].TS)
	}
	minTx, maxTx := b.txs[idx[0]], b.txs[idx[len(idx)-1]]
	var all []member
	if !b.opts.TableWide {
		var err error
		if all, err = b.loadGroup(b.groups[g], minTx, maxTx, minTS, maxTS); err != nil {
			return err
		}
	}
	var alive []member
	for start := 0; start < len(idx); {
		tx := b.txs[idx[start]]
		end := start + 1
		for end < len(idx) && b.txs[idx[end]] == tx {
			end++
		}
		run := idx[start:end]
		var ms []member
		switch {
		case b.opts.TableWide:
			var err error
			if ms, err = b.loadTable(tx, b.rows[run[0]].TS, b.rows[run[len(run)-1]].TS); err != nil {
				return err
			}
		case minTx >= b.lastTx:
			ms = all
		default:
			alive = alive[:0]
			for _, m := range all {
				if m.txFrom <= tx && tx < m.txTo {
					alive = append(alive, m)
				}
			}
			ms = alive
		}
		if err := b.evaluate(ms, run); err != nil {
			return err
		}
		start = end
	}
	return nil
}

// loadGroup reads the records of a group alive at some time in [minTx, maxTx]
// whose valid period meets [minTS, maxTS]. The members live in buffers reused
// by the next group.
func (b *backfill) loadGroup(group []byte, minTx, maxTx, minTS, maxTS int64) ([]member, error) {
	b.mem.reset()
	b.loadFrom, b.loadTo = minTS, maxTS
	if err := b.scan.Group(group, minTx, maxTx, b.onEntry); err != nil {
		return nil, err
	}
	b.p.settleInts(b.mem.ms, b.boxed, b.cols)
	return b.mem.ms, nil
}

// addEntry adds a member for a group's record whose valid period meets
// [b.loadFrom, b.loadTo].
func (b *backfill) addEntry(rec *store.GroupEntry) error {
	if rec.ValidFrom > b.loadTo || rec.ValidTo <= b.loadFrom {
		return nil
	}
	return b.mem.addRecord(b.p, rec)
}

// loadTable reads every version of the table alive at tx whose valid period
// meets [minTS, maxTS]. The members live in buffers reused by the next load.
func (b *backfill) loadTable(tx, minTS, maxTS int64) ([]member, error) {
	b.mem.reset()
	to := maxTS + 1
	if to < maxTS {
		to = store.Infinity
	}
	for v, err := range b.s.ScanHistory(b.p.readTable(), store.Span{}, tx, minTS, to, nil) {
		if err != nil {
			return nil, err
		}
		if err := b.mem.addVersion(b.p, &v); err != nil {
			return nil, err
		}
	}
	b.p.settleInts(b.mem.ms, b.boxed, b.cols)
	return b.mem.ms, nil
}

// sweep computes the rows of run (sorted by ts, all reading at one transaction
// time) over ms, the versions alive at that time.
func (b *backfill) sweep(ms []member, run []int32) error {
	p := b.p
	b.accs = p.newAccums(b.accs, ms, b.cols)
	accs := b.accs
	for fi := range p.filters {
		f := &p.filters[fi]
		starts, ends := b.starts[fi][:0], b.ends[fi][:0]
		state := slices.Grow(b.states[fi][:0], len(ms))[:len(ms)]
		clear(state)
		for i := range ms {
			a, end, bad := f.span(p, &ms[i])
			if a >= end {
				continue
			}
			if bad { // entering the set fails; the state marks it
				state[i] = badWindowState
			}
			starts = append(starts, edge{a, int32(i)})
			ends = append(ends, edge{end, int32(i)})
		}
		byAt := func(x, y edge) int { return cmp.Compare(x.at, y.at) }
		slices.SortFunc(starts, byAt)
		slices.SortFunc(ends, byAt)
		b.starts[fi], b.ends[fi], b.states[fi] = starts, ends, state
		for _, k := range f.feats {
			accs[k].state = state
		}
	}
	next := slices.Grow(b.next2[:0], len(p.filters))[:len(p.filters)] // per filter: next start, next end
	clear(next)
	b.next2 = next
	for _, ri := range run {
		// Progress counts rows: checked before each row, so a group's last
		// rows are reported with the group once it is finished.
		b.progress(b.swept, false)
		ts := b.rows[ri].TS
		for fi := range p.filters {
			if err := b.advance(accs, fi, &next[fi], ms, ts); err != nil {
				return fmt.Errorf("backfill row %d: %w", ri, b.inGroup(err, ri))
			}
		}
		if err := b.emit(ri); err != nil {
			return fmt.Errorf("backfill row %d: %w", ri, b.inGroup(err, ri))
		}
	}
	return nil
}

// emit stores the features of row ri, the results of b.accs, and marks the
// row ready.
func (b *backfill) emit(ri int32) error {
	out := b.cells[int(ri)*b.nf : (int(ri)+1)*b.nf]
	for k := range b.accs {
		v, err := b.accs[k].result()
		if err != nil {
			return err
		}
		if v.kind == valRef {
			v.n = uint64(len(b.refs))
			b.refs = append(b.refs, v.ref)
		}
		out[k] = cell{kind: v.kind, n: v.n}
	}
	b.ready[ri] = true
	b.computed++
	return nil
}

// inGroup names row ri's group in err (see the package-level inGroup).
func (b *backfill) inGroup(err error, ri int32) error {
	if b.opts.TableWide {
		return err
	}
	return inGroup(err, b.rows[ri].Group)
}

// badWindowState marks a member whose window column is not an integer; it
// becomes an error if the member enters the set.
const badWindowState uint8 = 0x80

// advance brings filter fi's set to time ts: members whose span ended at or
// before ts leave (or never enter), then members whose span started enter.
func (b *backfill) advance(accs []accum, fi int, next *[2]int, ms []member, ts int64) error {
	f := &b.p.filters[fi]
	state, starts, ends := b.states[fi], b.starts[fi], b.ends[fi]
	for ; next[1] < len(ends) && ends[next[1]].at <= ts; next[1]++ {
		id := ends[next[1]].id
		if state[id] == inSet {
			for _, k := range f.feats {
				accs[k].remove(id)
			}
		}
		state[id] = gone
	}
	for ; next[0] < len(starts) && starts[next[0]].at <= ts; next[0]++ {
		id := starts[next[0]].id
		switch state[id] {
		case gone:
			continue
		case badWindowState:
			return b.p.badWindow(f, &ms[id])
		}
		state[id] = inSet
		for _, k := range f.feats {
			if err := accs[k].add(id); err != nil {
				return err
			}
		}
	}
	return nil
}
