package query

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"hash/maphash"
	"iter"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

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
// A backfill of many rows (at least 4,096 per goroutine) over several groups
// computes its groups on every core (GOMAXPROCS), each goroutine on a fork of
// the snapshot; the rows, their order, the error and the Progress calls are
// still the caller's goroutine's, as above (docs/design/backfill-workers.md).
//
// Backfill is BackfillRows with each row's features boxed into a fresh slice.
func Backfill(r store.Reader, table string, rows []LeftRow, aggs []Agg, opts BackfillOptions) iter.Seq2[BackfillRow, error] {
	return backfillOn(r, table, rows, aggs, opts, intPath)
}

// BackfillRows is Backfill yielding each row as a view of its computed
// features (FeatureRow), valid until the next iteration: the features are read
// with typed accessors, and nothing is allocated per row or per group (the
// batch's buffers grow a few times in all). Rows come in input order, as
// Backfill's do.
func BackfillRows(r store.Reader, table string, rows []LeftRow, aggs []Agg, opts BackfillOptions) iter.Seq2[*FeatureRow, error] {
	return backfillRowsOn(r, table, rows, aggs, opts, intPath, evalByShape, 0)
}

// backfillOn is Backfill on the given path.
func backfillOn(r store.Reader, table string, rows []LeftRow, aggs []Agg, opts BackfillOptions, path aggPath) iter.Seq2[BackfillRow, error] {
	return func(yield func(BackfillRow, error) bool) {
		for row, err := range backfillRowsOn(r, table, rows, aggs, opts, path, evalByShape, 0) {
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
// by rule eval, computing groups on workers goroutines (0 chooses by the
// batch's size, backfillWorkers).
func backfillRowsOn(r store.Reader, table string, rows []LeftRow, aggs []Agg, opts BackfillOptions, path aggPath, eval evalRule, workers int) iter.Seq2[*FeatureRow, error] {
	return func(yield func(*FeatureRow, error) bool) {
		s, release, err := r.AcquireSnapshot()
		if err != nil {
			yield(nil, err)
			return
		}
		defer release()
		b, err := newBackfill(s, table, rows, aggs, opts, path, eval, workers)
		if err != nil {
			yield(nil, err)
			return
		}
		defer b.scan.Close() // run closes it when the backfill ends; this after an early stop
		defer b.release()
		b.run(yield)
	}
}

// FeatureRow is one row of BackfillRows: the features of one left row, in
// FeatureNames(aggs) order, as a view valid until the next iteration. It is
// not valid after the loop either: the next backfill writes its features into
// the same memory.
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

// backfill is one backfill's rows, bucketed by group, and their computed
// features. Its groups are computed by evaluators: one on the backfill's
// goroutine, or one per worker goroutine for a batch large enough to share
// (backfillWorkers). Evaluators write the cells of their own groups' rows
// only; the rows are yielded on the backfill's goroutine.
type backfill struct {
	s       *store.Snapshot
	p       *plan
	rows    []LeftRow
	opts    BackfillOptions
	lastTx  int64
	nf      int
	eval    evalRule
	workers int    // goroutines computing groups; 0 chooses by the batch's size
	boxed   []bool // per plan.attrs: some feature needs the values boxed

	groups   [][]byte // encoded group keys, in order of first appearance
	bounds   []int    // group g's rows are order[bounds[g]:bounds[g+1]]
	order    []int32
	rowGroup []int32 // per row, its group
	visit    []int32 // the groups in the order they are computed
	txs      []int64 // resolved transaction time per row

	cells    []cell          // row i's features are cells[i*nf : (i+1)*nf]
	bufs     *backfillArrays // where the arrays above came from (release)
	next     int             // first row not yet yielded
	computed int
	swept    int // groups finished
	reported int // rows computed at the last Progress call
	calls    int // Progress calls so far

	// scan reads the groups' records on the backfill's goroutine.
	scan *store.GroupScan
}

// evaluator computes the features of whole groups of a backfill: it reads a
// group's records and sweeps its rows. It owns every buffer it fills, so
// evaluators on different goroutines (each with a fork of the snapshot and a
// copy of the plan) share nothing they write but the cells of their own
// groups' rows.
type evaluator struct {
	b    *backfill
	s    *store.Snapshot
	p    *plan
	scan *store.GroupScan
	// onEntry adds a group's record to the members (loadGroup).
	onEntry func(*store.GroupEntry) error

	// Reused buffers: members of the current group (or table-wide load), and
	// per filter the sweep's edges and membership states.
	mem          memberBuf
	cols         []colPath // per plan.attrs: how the loaded members hold the column
	starts, ends [][]edge
	states       [][]uint8
	accs         []accum  // the running states of the last sweep
	next2        [][2]int // per filter: the sweep's next start and end
	// A direct evaluation's members, and their spans in each filter: member
	// j's in filter fi is spans[j*len(p.filters)+fi] (backfill_direct.go).
	candidates []directMember
	spans      []memberSpan
	inSet      [][]int32 // per filter: the members in its set at a row's ts

	refs      []any  // values of the valRef cells this evaluator computed
	rows      int    // rows computed
	beforeRow func() // called before each row is computed (progress), if set
}

// cell is a computed feature value waiting for its row to be yielded: a val
// without its pointer (a valRef's n indexes the refs of the evaluator that
// computed it).
type cell struct {
	kind uint8
	n    uint64
}

// edge is a member entering (or leaving) a filter's set at time at.
type edge struct {
	at int64
	id int32
}

func newBackfill(s *store.Snapshot, table string, rows []LeftRow, aggs []Agg, opts BackfillOptions, path aggPath, eval evalRule, workers int) (*backfill, error) {
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
	b := &backfill{s: s, p: p, rows: rows, opts: opts, lastTx: s.LastTx(), nf: len(p.feats), boxed: p.boxedCols(),
		eval: eval, workers: workers, scan: s.GroupScan(p.t)}
	if b.opts.ProgressEvery <= 0 {
		b.opts.ProgressEvery = max(len(rows)/100, 1)
	}
	b.bufs = backfillPool.Get().(*backfillArrays)
	b.txs = zeroed(b.bufs.txs, len(rows))
	for i := range rows {
		tx := cmp.Or(rows[i].Tx, opts.Tx, b.lastTx)
		b.txs[i] = min(tx, b.lastTx) // later times read the same state
	}
	if err := b.bucket(); err != nil {
		return nil, err
	}
	b.cells = zeroed(b.bufs.cells, len(rows)*b.nf)
	return b, nil
}

// backfillArrays are the arrays a backfill holds per row: its rows' features,
// transaction times, groups and order. A backfill of many rows writes
// megabytes of them, and memory the process has just taken from the system
// costs a page fault per 4 KiB page at its first write: in the peer
// harness's backfill, 100,000 rows in 10 MB, storing the features was a
// seventh of the workers' CPU. A backfill takes its arrays from the ones an
// earlier one finished with (backfillPool), whose pages are already mapped,
// and gives them back when its iterator returns: FeatureRow is a view valid
// only until the next iteration, and the workers are gone by then, so
// nothing refers to them any more.
type backfillArrays struct {
	cells           []cell
	txs             []int64
	rowGroup, order []int32
}

// backfillPool holds the backfillArrays of finished backfills; as the resolve's
// batchPool, it drops what no backfill has taken for two collections.
var backfillPool = sync.Pool{New: func() any { return new(backfillArrays) }}

// release gives b's arrays to the next backfill. b must not be used after.
func (b *backfill) release() {
	if b.bufs == nil {
		return
	}
	*b.bufs = backfillArrays{cells: b.cells, txs: b.txs, rowGroup: b.rowGroup, order: b.order}
	backfillPool.Put(b.bufs)
	b.bufs, b.cells, b.txs, b.rowGroup, b.order = nil, nil, nil, nil, nil
}

// zeroed returns s's array holding n zero values when it has room for
// them, else a new one.
func zeroed[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	s = s[:n]
	clear(s)
	return s
}

// newEvaluator returns an evaluator of b's groups reading through s and
// scan with plan p (b's own, or a copy for another goroutine).
func (b *backfill) newEvaluator(s *store.Snapshot, p *plan, scan *store.GroupScan) *evaluator {
	nf := len(p.filters)
	e := &evaluator{b: b, s: s, p: p, scan: scan, cols: make([]colPath, len(p.attrs)),
		starts: make([][]edge, nf), ends: make([][]edge, nf), states: make([][]uint8, nf)}
	e.onEntry = e.addEntry
	return e
}

// bucket assigns rows to groups in order of first appearance and lays out each
// group's rows contiguously in b.order (a counting sort, stable by index).
func (b *backfill) bucket() error {
	b.rowGroup = zeroed(b.bufs.rowGroup, len(b.rows))
	if !b.opts.TableWide {
		if err := b.assignGroups(); err != nil {
			return err
		}
	} else if len(b.rows) > 0 {
		b.groups = [][]byte{nil}
	}
	rowGroup := b.rowGroup
	b.bounds = make([]int, len(b.groups)+1)
	for _, g := range rowGroup {
		b.bounds[g+1]++
	}
	for g := range b.groups {
		b.bounds[g+1] += b.bounds[g]
	}
	fill := slices.Clone(b.bounds)
	b.order = zeroed(b.bufs.order, len(b.rows))
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

// groupKeyHash hashes a group key for assignGroups; a test replaces it with
// one that collides.
var groupKeyHash = maphash.Bytes

// assignGroups sets b.rowGroup and b.groups: each row's group, numbered in
// order of first appearance, and each group's encoded key. It allocates per
// batch, not per group or row: the groups' keys are appended to one buffer,
// and the map that finds a row's group is keyed by a hash of the key (seeded
// per call), checked against the group's key; a key whose hash another
// group's key already has (a chance of 2^-64 per pair) goes into a second map
// keyed by the key itself.
func (b *backfill) assignGroups() error {
	seed := maphash.MakeSeed()
	ids := map[uint64]int32{}
	var collided map[string]int32
	var buf, keys []byte
	bounds := []int{0} // group g's key is keys[bounds[g]:bounds[g+1]]
	key := func(g int32) []byte { return keys[bounds[g]:bounds[g+1]:bounds[g+1]] }
	add := func() int32 {
		keys = append(keys, buf...)
		bounds = append(bounds, len(keys))
		return int32(len(bounds) - 2)
	}
	for i := range b.rows {
		var err error
		if buf, err = b.p.t.AppendGroupKey(buf[:0], b.rows[i].Group); err != nil {
			return fmt.Errorf("backfill row %d: %w", i, err)
		}
		h := groupKeyHash(seed, buf)
		id, ok := ids[h]
		switch {
		case !ok:
			id = add()
			ids[h] = id
		case !bytes.Equal(key(id), buf):
			if id, ok = collided[string(buf)]; !ok {
				if collided == nil {
					collided = map[string]int32{}
				}
				id = add()
				collided[string(buf)] = id
			}
		}
		b.rowGroup[i] = id
	}
	b.groups = make([][]byte, len(bounds)-1)
	for g := range b.groups {
		b.groups[g] = key(int32(g))
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

// minRowsPerWorker is the fewest rows of a backfill worth a worker goroutine
// of their own: a worker forks the snapshot and copies the plan, and below
// this many rows that costs more than the rows it takes off the others.
const minRowsPerWorker = 1 << 12

// backfillWorkers returns how many goroutines compute b's groups: one per
// core (GOMAXPROCS), at most one per group and per minRowsPerWorker rows. A
// table-wide backfill is one group, computed on the backfill's goroutine.
func (b *backfill) backfillWorkers() int {
	if b.workers > 0 {
		return max(1, min(b.workers, len(b.groups)))
	}
	return max(1, min(runtime.GOMAXPROCS(0), len(b.groups), len(b.rows)/minRowsPerWorker))
}

// run computes the groups in b.visit order and yields each row once every
// row before it is done and every group that first appears before its group
// is computed. A failing group ends the backfill once the groups appearing
// before it are computed: the rows yielded and the error are those of
// computing the groups in order of appearance, however many goroutines
// compute them.
func (b *backfill) run(yield func(*FeatureRow, error) bool) {
	n := b.backfillWorkers()
	f := &rowFeed{b: b, yield: yield, done: make([]bool, len(b.groups)), owner: make([]int32, len(b.groups)),
		refs: make([][]any, n), fail: len(b.groups)}
	if n > 1 {
		b.runWorkers(f, n)
		return
	}
	e := b.newEvaluator(b.s, b.p, b.scan)
	e.beforeRow = func() {
		b.computed = e.rows
		b.progress(b.swept, false)
	}
	for n, g := range b.visit {
		if int(g) > f.fail {
			continue // a group appearing before it failed
		}
		b.swept = n
		err := e.group(int(g))
		b.computed = e.rows
		if err == nil {
			b.swept = n + 1
		}
		if !f.finished(int(g), 0, e.refs, err) {
			return
		}
	}
	f.end(b.scan.Close())
}

// rowFeed yields a backfill's rows in input order as their groups are
// computed, and the error of the first failing group to appear.
type rowFeed struct {
	b       *backfill
	yield   func(*FeatureRow, error) bool
	row     FeatureRow
	done    []bool  // per group: computed
	owner   []int32 // per group: the evaluator that computed it
	refs    [][]any // per evaluator: its valRef values as of its last finished group
	prefix  int     // groups 0..prefix-1 are computed
	fail    int     // the first failing group to appear so far, or len(groups)
	failErr error
}

// finished records that evaluator w computed group g, its refs then being
// refs, or failed on it with err, and yields the rows that are now ready. It
// returns false if the consumer stopped.
func (f *rowFeed) finished(g, w int, refs []any, err error) bool {
	b := f.b
	if err != nil {
		if g < f.fail {
			f.fail, f.failErr = g, err
		}
		return true
	}
	f.done[g], f.owner[g], f.refs[w] = true, int32(w), refs
	for f.prefix < len(f.done) && f.done[f.prefix] {
		f.prefix++
	}
	b.progress(b.swept, false)
	for b.next < len(b.rows) && int(b.rowGroup[b.next]) < f.prefix {
		w := f.owner[b.rowGroup[b.next]]
		f.row.Index, f.row.cells, f.row.refs = b.next, b.cells[b.next*b.nf:(b.next+1)*b.nf], f.refs[w]
		b.next++
		if !f.yield(&f.row, nil) {
			return false
		}
	}
	return true
}

// end yields the backfill's error, if any (a failing group's, else closeErr
// from releasing its reads), or reports the final progress.
func (f *rowFeed) end(closeErr error) {
	switch {
	case f.failErr != nil:
		f.yield(nil, f.failErr)
	case closeErr != nil:
		f.yield(nil, closeErr)
	default:
		f.b.progress(len(f.b.groups), true)
	}
}

// workerNote is what a worker tells the backfill's goroutine: rows computed
// since its last note, and that it finished group g (computed, or failed with
// err), or that it stopped (with err from releasing its reads).
type workerNote struct {
	kind noteKind
	g, w int
	rows int
	refs []any
	err  error
}

type noteKind uint8

const (
	noteRows    noteKind = iota // rows computed inside a group (progress)
	noteGroup                   // group g finished
	noteStopped                 // the worker has no more groups to compute
)

// chunksPerWorker is about how many runs of consecutive groups of its visiting
// order each worker of a backfill takes: a worker reads a run's groups
// forward through the group index, as one goroutine reads them all, and
// many runs balance the goroutines.
const chunksPerWorker = 16

// runWorkers computes b's groups on n goroutines, each taking the next run of
// consecutive groups of b.visit not yet taken (chunksPerWorker), on its own
// fork of the snapshot and copy of the plan; the backfill's goroutine yields
// the rows as their groups finish, and calls Progress. A worker skips a group
// appearing after one that failed. When the consumer stops, the workers stop
// after their current group, and runWorkers returns once they are gone (their
// reads are released before the snapshot).
func (b *backfill) runWorkers(f *rowFeed, n int) {
	notes := make(chan workerNote, 4*n)
	chunk := max(1, len(b.visit)/(n*chunksPerWorker))
	var taken atomic.Int64 // chunks of b.visit taken
	var stop atomic.Bool
	var fail atomic.Int64 // the first failing group to appear so far
	fail.Store(int64(len(b.groups)))
	var wg sync.WaitGroup
	for w := range n {
		wg.Go(func() { b.work(w, chunk, notes, &taken, &stop, &fail) })
	}
	go func() {
		wg.Wait()
		close(notes)
	}()
	defer func() {
		stop.Store(true)
		for range notes { // until every worker is gone
		}
	}()
	var closeErr error
	for note := range notes {
		b.computed += note.rows
		switch note.kind {
		case noteRows:
			b.progress(b.swept, false)
		case noteGroup:
			if note.err == nil {
				b.swept++
			}
			if !f.finished(note.g, note.w, note.refs, note.err) {
				return
			}
		case noteStopped:
			closeErr = errors.Join(closeErr, note.err)
		}
	}
	f.end(closeErr)
}

// work is worker w of runWorkers: it computes groups until none is left or
// stop is set, telling the backfill's goroutine through notes.
func (b *backfill) work(w, chunk int, notes chan<- workerNote, taken *atomic.Int64, stop *atomic.Bool, fail *atomic.Int64) {
	s, err := b.s.Fork()
	if err != nil {
		notes <- workerNote{kind: noteStopped, w: w, err: err}
		return
	}
	p := b.p.clone()
	e := b.newEvaluator(s, p, s.GroupScan(p.t))
	told := 0 // e.rows when the last note was sent
	if b.opts.Progress != nil {
		e.beforeRow = func() {
			if e.rows-told >= b.opts.ProgressEvery {
				notes <- workerNote{kind: noteRows, w: w, rows: e.rows - told}
				told = e.rows
			}
		}
	}
	for c := int(taken.Add(1) - 1); c*chunk < len(b.visit) && !stop.Load(); c = int(taken.Add(1) - 1) {
		for _, g := range b.visit[c*chunk : min((c+1)*chunk, len(b.visit))] {
			if stop.Load() {
				break
			}
			if int64(g) > fail.Load() {
				continue // a group appearing before it failed
			}
			err := e.group(int(g))
			if err != nil {
				lowerTo(fail, int64(g))
			}
			notes <- workerNote{kind: noteGroup, g: int(g), w: w, rows: e.rows - told, refs: e.refs, err: err}
			told = e.rows
		}
	}
	notes <- workerNote{kind: noteStopped, w: w, err: errors.Join(e.scan.Close(), s.Close())}
}

// lowerTo sets v to x if x is smaller.
func lowerTo(v *atomic.Int64, x int64) {
	for cur := v.Load(); x < cur && !v.CompareAndSwap(cur, x); cur = v.Load() {
	}
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
func (e *evaluator) group(g int) error {
	b := e.b
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
		if all, err = e.loadGroup(b.groups[g], minTx, maxTx, minTS, maxTS); err != nil {
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
			if ms, err = e.loadTable(tx, b.rows[run[0]].TS, b.rows[run[len(run)-1]].TS); err != nil {
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
		if err := e.evaluate(ms, run); err != nil {
			return err
		}
		start = end
	}
	return nil
}

// loadGroup reads the records of a group alive at some time in [minTx, maxTx]
// whose valid period meets [minTS, maxTS]. The members live in buffers reused
// by the next group.
func (e *evaluator) loadGroup(group []byte, minTx, maxTx, minTS, maxTS int64) ([]member, error) {
	e.mem.reset()
	if err := e.scan.GroupMeeting(group, minTx, maxTx, minTS, maxTS, e.onEntry); err != nil {
		return nil, err
	}
	e.p.settleInts(e.mem.ms, e.b.boxed, e.cols)
	return e.mem.ms, nil
}

// addEntry adds a member for a group's record.
func (e *evaluator) addEntry(rec *store.GroupEntry) error {
	return e.mem.addRecord(e.p, rec)
}

// loadTable reads every version of the table alive at tx whose valid period
// meets [minTS, maxTS]. The members live in buffers reused by the next load.
func (e *evaluator) loadTable(tx, minTS, maxTS int64) ([]member, error) {
	e.mem.reset()
	to := maxTS + 1
	if to < maxTS {
		to = store.Infinity
	}
	for v, err := range e.s.ScanHistory(e.p.readTable(), store.Span{}, tx, minTS, to, nil) {
		if err != nil {
			return nil, err
		}
		if err := e.mem.addVersion(e.p, &v); err != nil {
			return nil, err
		}
	}
	e.p.settleInts(e.mem.ms, e.b.boxed, e.cols)
	return e.mem.ms, nil
}

// sweep computes the rows of run (sorted by ts, all reading at one transaction
// time) over ms, the versions alive at that time.
func (e *evaluator) sweep(ms []member, run []int32) error {
	b, p := e.b, e.p
	e.accs = p.newAccums(e.accs, ms, e.cols, false)
	accs := e.accs
	for fi := range p.filters {
		f := &p.filters[fi]
		starts, ends := e.starts[fi][:0], e.ends[fi][:0]
		state := slices.Grow(e.states[fi][:0], len(ms))[:len(ms)]
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
		e.starts[fi], e.ends[fi], e.states[fi] = starts, ends, state
		for _, k := range f.feats {
			accs[k].state = state
		}
	}
	next := slices.Grow(e.next2[:0], len(p.filters))[:len(p.filters)] // per filter: next start, next end
	clear(next)
	e.next2 = next
	for _, ri := range run {
		e.progress()
		ts := b.rows[ri].TS
		for fi := range p.filters {
			if err := e.advance(accs, fi, &next[fi], ms, ts); err != nil {
				return fmt.Errorf("backfill row %d: %w", ri, b.inGroup(err, ri))
			}
		}
		if err := e.emit(ri); err != nil {
			return fmt.Errorf("backfill row %d: %w", ri, b.inGroup(err, ri))
		}
	}
	return nil
}

// progress is called before each row is computed: progress counts rows, so
// that a group's last rows are reported with the group once it is finished.
func (e *evaluator) progress() {
	if e.beforeRow != nil {
		e.beforeRow()
	}
}

// emit stores the features of row ri, the results of e.accs, in the row's
// cells.
func (e *evaluator) emit(ri int32) error {
	nf := e.b.nf
	out := e.b.cells[int(ri)*nf : (int(ri)+1)*nf]
	for k := range e.accs {
		v, err := e.accs[k].result()
		if err != nil {
			return err
		}
		if v.kind == valRef {
			v.n = uint64(len(e.refs))
			e.refs = append(e.refs, v.ref)
		}
		out[k] = cell{kind: v.kind, n: v.n}
	}
	e.rows++
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
func (e *evaluator) advance(accs []accum, fi int, next *[2]int, ms []member, ts int64) error {
	f := &e.p.filters[fi]
	state, starts, ends := e.states[fi], e.starts[fi], e.ends[fi]
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
			return e.p.badWindow(f, &ms[id])
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
