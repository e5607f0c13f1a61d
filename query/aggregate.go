package query

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/store"
)

// This file computes temporal aggregations (the SCD2 group-by of docs/semantics.md): the
// features of a group at a time ts are aggregations over the group's versions
// active at ts (valid_from <= ts < valid_to), as known at a transaction time.
// Aggregate answers one (group, ts[, tx]) from the table's group index; Backfill
// (backfill.go) answers many with one sweep per group.
//
// Semantics decided here (docs/semantics.md leaves them open):
//
//   - SUM is an int64 while every non-null value is an integer, a float64 once
//     one is a float, a Decimal once one is a decimal (the decimal rules are in
//     the package doc); all are exact until the final rounding, so the result does
//     not depend on the order versions are visited (a point query and a backfill
//     agree bit for bit). An integer sum that fits neither int64 nor uint64 is an
//     error (ErrAggValue), not a silent float. AVG is that sum rounded to float64
//     divided by the count of non-null values (of decimals: a Decimal). A
//     SUM/AVG input that is not a number is an error rather than a skipped
//     value.
//   - MIN and MAX use one total order over attribute values: false < true <
//     numbers (compared by value across int64, uint64, decimals and float64,
//     NaN above every number) < times (by instant) < strings < byte strings.
//     Equal numbers of different types order int64 < uint64 < decimal <
//     float64, equal decimals by scale, so the result is always the same value. COUNT_DISTINCT counts values equal in that order once (1
//     and 1.0 are one; a time is never equal to its microseconds as a number:
//     the column changed type). MIN and MAX of times are times.
//   - LATEST and EARLIEST return the input of the active version with the
//     greatest (least) valid_from, null included: "the status of the newest
//     contract" must not fall back to an older one when the newest has none.
//     Versions of different entities starting at the same instant are ordered
//     by natural key in the store's key order: LATEST takes the greatest key,
//     EARLIEST the least.
//   - A window column must hold a time: a time value, or an int64 of
//     microseconds since the epoch (like valid-time ticks); the two give the same
//     windows, since a time value is stored at microsecond precision. A null
//     window column lies in no window, nor does a uint64 (after every time); any
//     other value is an error naming the column and the value's type, raised
//     when its version is active at a requested time (attributes have no
//     declared types, so it cannot be raised earlier); such versions are never
//     skipped silently (docs/design/window-column-errors.md).
//   - Windows on valid_from need a time axis: on a table with an int axis they
//     are rejected, since "7 days" of sequence numbers means nothing.
//   - An input or window column may name a key column; its value is the key's.
//   - A version whose group attribute is null is in no group (store's group
//     index), yet table-wide aggregations count it, as they count inferred
//     placeholders: both are versions of the table in effect at ts.

// ErrAggValue: a value an aggregation cannot take (a SUM or AVG input that is not
// a number, a window column that is not a time, decimals mixed with floats, a
// sum out of range).
var ErrAggValue = errors.New("bitempo: value cannot be aggregated")

// ErrAggOverflow: an exact SUM or AVG whose value its result type cannot hold
// (an integer sum beyond uint64, a decimal sum or average beyond 18 digits).
// Such errors also match ErrAggValue.
var ErrAggOverflow = errors.New("bitempo: aggregate out of range")

// AggValueError describes a value that stopped an aggregation.
type AggValueError struct {
	Feature string
	Table   string
	// Group is the group being aggregated (its GroupBy values); nil for a
	// table-wide aggregation.
	Group store.Key
	// Key is the entity whose value is at fault; nil for a result out of
	// range, or decimals mixed with floats.
	Key    store.Key
	Value  any
	Reason string
	// overflow makes errors.Is(err, ErrAggOverflow) true.
	overflow bool
}

func (e *AggValueError) Error() string {
	where := fmt.Sprintf("bitempo: feature %s of table %q", e.Feature, e.Table)
	if e.Group != nil {
		where += fmt.Sprintf(" group %s", e.Group)
	}
	if e.Key == nil {
		return fmt.Sprintf("%s: %s", where, e.Reason)
	}
	return fmt.Sprintf("%s: key %s value %v (%T): %s", where, e.Key, e.Value, e.Value, e.Reason)
}

// Is makes errors.Is(err, ErrAggValue) true, and errors.Is(err,
// ErrAggOverflow) for a result out of range.
func (e *AggValueError) Is(target error) bool {
	return target == ErrAggValue || (e.overflow && target == ErrAggOverflow)
}

// inGroup names group in err when it is an *AggValueError that names none.
func inGroup(err error, group store.Key) error {
	var bad *AggValueError
	if group != nil && errors.As(err, &bad) && bad.Group == nil {
		bad.Group = group
	}
	return err
}

// Features are the results of one aggregation request: Values[i] is the feature
// named Names[i]. Empty sets give COUNT 0, EXISTS false, COUNT_DISTINCT 0 and nil
// for every other operation.
type Features struct {
	Names  []string
	Values []any
}

// Get returns the feature named name.
func (f Features) Get(name string) (any, bool) {
	for i, n := range f.Names {
		if n == name {
			return f.Values[i], true
		}
	}
	return nil, false
}

func (f Features) String() string {
	parts := make([]string, len(f.Names))
	for i, n := range f.Names {
		parts[i] = fmt.Sprintf("%s=%v", n, f.Values[i])
	}
	return strings.Join(parts, " ")
}

// Aggregate computes the features aggs for the group whose GroupBy attributes
// equal group (one value per attribute, in declaration order), over the group's
// versions active at at.Valid as known at at.Tx. It reads one range of the
// table's group index. A group never seen gives the empty-set results.
func Aggregate(r store.Reader, table string, group store.Key, at AsOf, aggs []Agg) (Features, error) {
	return aggregate(r, table, group, at, aggs, intPath)
}

// aggregate is Aggregate on the given path.
func aggregate(r store.Reader, table string, group store.Key, at AsOf, aggs []Agg, path aggPath) (Features, error) {
	return withPlan(r, table, aggs, path, func(s *store.Snapshot, p *plan) (Features, error) {
		gk, err := p.t.AppendGroupKey(nil, group)
		if err != nil {
			return Features{}, err
		}
		tx := resolveTx(s, at.Tx)
		var buf memberBuf
		scan := s.GroupScan(p.t)
		err = scan.GroupMeeting(gk, tx, tx, at.Valid, at.Valid, func(rec *store.GroupEntry) error {
			return buf.addRecord(p, rec) // its valid period holds at.Valid
		})
		if err = errors.Join(err, scan.Close()); err != nil {
			return Features{}, err
		}
		f, err := p.point(buf.ms, at.Valid)
		return f, inGroup(err, group)
	})
}

// withPlan runs fn with a snapshot of r and the plan of aggs over table.
func withPlan(r store.Reader, table string, aggs []Agg, path aggPath, fn func(*store.Snapshot, *plan) (Features, error)) (Features, error) {
	s, release, err := r.AcquireSnapshot()
	if err != nil {
		return Features{}, err
	}
	defer release()
	t, err := s.Table(table)
	if err != nil {
		return Features{}, err
	}
	p, err := newPlan(s, t, aggs, path)
	if err != nil {
		return Features{}, err
	}
	return fn(s, p)
}

// AggregateTable computes the features aggs over every version of the table
// active at at.Valid as known at at.Tx (a grouping with no group key, e.g. "total
// amount at a reference date"). Each key contributes at most its one version in
// effect, so nothing is counted twice. Any table can be aggregated this way.
func AggregateTable(r store.Reader, table string, at AsOf, aggs []Agg) (Features, error) {
	return aggregateTable(r, table, at, aggs, intPath)
}

// aggregateTable is AggregateTable on the given path.
func aggregateTable(r store.Reader, table string, at AsOf, aggs []Agg, path aggPath) (Features, error) {
	return withPlan(r, table, aggs, path, func(s *store.Snapshot, p *plan) (Features, error) {
		var buf memberBuf
		for v, err := range s.ScanAt(p.readTable(), store.Span{}, at.Valid, resolveTx(s, at.Tx)) {
			if err != nil {
				return Features{}, err
			}
			if err := buf.addVersion(p, &v); err != nil {
				return Features{}, err
			}
		}
		return p.point(buf.ms, at.Valid)
	})
}

// plan is a validated list of aggregations over one table: the features, the
// sets of versions (filters) they aggregate, and the attributes they read.
type plan struct {
	t       *store.Table
	names   []string
	feats   []feature
	filters []filter
	attrs   []string // attributes read from each version
	keyCol  []int    // per attrs entry: the key column it names, or -1
	needKey bool
	path    aggPath // how the plan holds attribute values (aggint.go)
	// walking is the member fillRaw fills, and walk its walkAttr method value
	// (aggint.go).
	walking *member
	walk    func(string, *encoding.Value) error
	scratch encoding.Value        // the value walks report through
	strs    map[string]any        // interned string values (str)
	recent  [recentStrs]recentStr // the strings str found last, by recentSlot
}

// feature is one output column.
type feature struct {
	name   string
	op     AggOp
	input  int // index into plan.attrs; -1 for count and exists
	filter int
}

// filter is a set of active versions: all of them, or those whose window column
// lies in (ts - window, ts].
type filter struct {
	column int   // index into plan.attrs; -1 for valid_from
	window int64 // ticks; 0 for no window
	feats  []int
}

// newPlan validates aggs over table t. The plan's table is t projected
// (store.Snapshot.Project) to the attributes its features read, so reads
// through p.t decode nothing else. path says how the plan holds attribute
// values: every read runs intPath; tests compare it with genericPath.
func newPlan(s *store.Snapshot, t *store.Table, aggs []Agg, path aggPath) (*plan, error) {
	names, err := FeatureNames(aggs)
	if err != nil {
		return nil, err
	}
	p := &plan{t: t, names: names, path: path}
	for _, a := range aggs {
		if a.WindowColumn == "" && len(a.Windows) > 0 && t.Axis == store.AxisInt {
			return nil, &AggError{Spec: a.String(), Reason: fmt.Sprintf("windows on valid_from need a time axis; table %q has an int axis", t.Name)}
		}
		input := -1
		if a.Input != "" {
			input = p.attr(a.Input)
		}
		column := -1
		if a.WindowColumn != "" {
			column = p.attr(a.WindowColumn)
		}
		windows := a.Windows
		if len(windows) == 0 {
			windows = []Window{{}}
		}
		for _, w := range windows {
			var ticks int64
			if w.N != 0 {
				ticks = w.Ticks()
			}
			fi := p.filter(column, ticks)
			p.filters[fi].feats = append(p.filters[fi].feats, len(p.feats))
			p.feats = append(p.feats, feature{name: names[len(p.feats)], op: a.Op, input: input, filter: fi})
		}
	}
	read := []string{} // not nil: no attribute read decodes none
	for i, name := range p.attrs {
		if p.keyCol[i] < 0 {
			read = append(read, name)
		}
	}
	p.t = s.Project(t, read)
	return p, nil
}

// attr returns the index of an attribute read from each version, adding it.
func (p *plan) attr(name string) int {
	for i, a := range p.attrs {
		if a == name {
			return i
		}
	}
	col := -1
	for i, c := range p.t.Key {
		if c.Name == name {
			col = i
			p.needKey = true
		}
	}
	p.attrs = append(p.attrs, name)
	p.keyCol = append(p.keyCol, col)
	return len(p.attrs) - 1
}

func (p *plan) filter(column int, window int64) int {
	for i, f := range p.filters {
		if f.column == column && f.window == window {
			return i
		}
	}
	p.filters = append(p.filters, filter{column: column, window: window})
	return len(p.filters) - 1
}

// member is one version as the aggregations see it.
type member struct {
	tuple        []byte
	from, to     int64
	txFrom, txTo int64
	vals         []any // per plan.attrs
	// ints holds, per plan.attrs, the int64 of a column whose vals entry is
	// intHeld (the integer path, aggint.go).
	ints []int64
}

// fill sets m.vals from decoded attributes; key is the decoded tuple, or nil
// to decode it when the plan reads a key column.
func (p *plan) fill(m *member, attrs store.Attrs, key store.Key) error {
	if p.needKey && key == nil {
		var err error
		if key, err = p.t.DecodeKey(m.tuple); err != nil {
			return err
		}
	}
	for i, name := range p.attrs {
		if c := p.keyCol[i]; c >= 0 {
			m.vals[i] = canonicalKey(key[c])
		} else {
			m.vals[i] = attrs[name]
		}
	}
	return nil
}

// canonicalKey turns a decoded key component into an attribute value.
func canonicalKey(v any) any {
	if u, ok := v.(uint64); ok && u <= math.MaxInt64 {
		return int64(u)
	}
	return v
}

// span returns the request times [a, b) at which m belongs to the filter's set
// (a >= b: never). bad reports a window column value that is not a time: the
// member then spans its whole period, and adding it fails.
func (f *filter) span(p *plan, m *member) (a, b int64, bad bool) {
	a, b = m.from, m.to
	if f.window == 0 {
		return a, b, false
	}
	w := m.from
	if f.column >= 0 {
		switch v := m.vals[f.column].(type) {
		case int64:
			w = v
		case time.Time:
			w = v.UnixMicro()
		case nil, uint64: // null lies in no window; a uint64 is after every time
			return 0, 0, false
		default:
			return a, b, true
		}
	}
	end := w + f.window
	if end < w {
		end = store.Infinity
	}
	return max(a, w), min(b, end), false
}

// badWindow is the error for a member whose window column is not a time.
func (p *plan) badWindow(f *filter, m *member) error {
	key, _ := p.t.DecodeKey(m.tuple)
	v := m.vals[f.column]
	return &AggValueError{Feature: p.feats[f.feats[0]].name, Table: p.t.Name, Key: key, Value: v,
		Reason: fmt.Sprintf("window column %q holds a %s; it must hold a time, or an int64 of microseconds since the epoch",
			p.attrs[f.column], ValueTypeName(v))}
}

// ValueTypeName names the type of an attribute value as messages do
// (store.ValueTypeName).
func ValueTypeName(v any) string { return store.ValueTypeName(v) }

// point evaluates the plan at ts over ms, the versions active at ts, on the
// integer path where their values allow (aggint.go).
func (p *plan) point(ms []member, ts int64) (Features, error) {
	cols := make([]colPath, len(p.attrs))
	p.settleInts(ms, p.boxedCols(), cols)
	accs := p.newAccums(nil, ms, cols, true)
	for fi := range p.filters {
		f := &p.filters[fi]
		state := make([]uint8, len(ms))
		for i := range ms {
			a, b, bad := f.span(p, &ms[i])
			if !(a <= ts && ts < b) {
				continue
			}
			if bad {
				return Features{}, p.badWindow(f, &ms[i])
			}
			state[i] = inSet
			for _, k := range f.feats {
				if err := accs[k].add(int32(i)); err != nil {
					return Features{}, err
				}
			}
		}
		for _, k := range f.feats {
			accs[k].state = state
		}
	}
	out := Features{Names: p.names, Values: make([]any, len(p.feats))}
	for k := range accs {
		v, err := accs[k].result()
		if err != nil {
			return Features{}, err
		}
		out.Values[k] = v.any()
	}
	return out, nil
}

// Membership states of a member in a filter's set during a sweep.
const (
	pending uint8 = iota // not reached yet
	inSet
	gone // left the set, or never entered it
)

// accum is the running state of one feature over a set that grows and shrinks.
type accum struct {
	p     *plan
	feat  *feature
	ms    []member
	state []uint8 // the filter's membership states, for lazy heap deletion
	// n: versions in the set (count, exists, latest, earliest) or non-null
	// values (sum, avg).
	n      int64
	isum   int128    // integer values
	fsum   *exactSum // every value but decimals, once a float arrived
	fbuf   *exactSum // the last fsum, reused by the next one
	floats int64     // float values in the set
	dsum   *decSum   // decimal values, once one arrived
	heap   []int32   // min, max, latest, earliest: members, best on top
	// COUNT_DISTINCT: each member's value id (-1: null), the ids' numbering
	// and their counts in the set (distinct.go).
	dids     []int32
	dict     distinctDict
	distinct distinctSet
	ints     bool // the input column holds int64s (aggint.go)
	decs     bool // the input column holds decimals and int64s (aggint.go)
	// scaled: ints holds the coefficients of decimals all of scale scale
	// (aggint.go, colDecAt).
	scaled bool
	scale  uint8
	// addOnly: the set only grows until restart (a direct evaluation, a
	// point aggregation), so the heap holds just its best member.
	addOnly bool
}

// newAccums returns the running state of every feature over ms. cols, when
// not nil, says which input columns hold unboxed values (aggint.go); addOnly
// says the sets only grow until restart (accum.addOnly). It reuses
// reuse's array, heaps, distinct-value maps, decimal and float sums (nil:
// none), so a backfill's sweeps do not allocate them per group, nor its direct
// evaluation per row.
func (p *plan) newAccums(reuse []accum, ms []member, cols []colPath, addOnly bool) []accum {
	accs := slices.Grow(reuse[:0], len(p.feats))[:len(p.feats)]
	for k := range accs {
		old := accs[k]
		f := &p.feats[k]
		path := colBoxed
		if cols != nil && f.input >= 0 && intOp(f.op) {
			path = cols[f.input]
		}
		accs[k] = accum{p: p, feat: f, ms: ms, ints: path == colInt || path >= colDecAt, decs: path == colDec, heap: old.heap[:0],
			fbuf: cmp.Or(old.fsum, old.fbuf), addOnly: addOnly}
		if path >= colDecAt {
			accs[k].scaled, accs[k].scale = true, uint8(path-colDecAt)
		}
		if accs[k].decs && (f.op == AggSum || f.op == AggAvg) {
			if accs[k].dsum = old.dsum; accs[k].dsum == nil {
				accs[k].dsum = &decSum{}
			}
			*accs[k].dsum = decSum{}
		}
		if f.op == AggCountDistinct {
			accs[k].dids, accs[k].dict, accs[k].distinct = old.dids, old.dict, old.distinct
			accs[k].numberDistinct(accs[:k])
		}
	}
	return accs
}

// numberDistinct gives each member of a COUNT_DISTINCT set its value's id
// (a.dids) and empties the set for those ids. An accumulator in
// before that counts the same column (the same COUNT_DISTINCT over another
// window) has numbered the values already: its ids are copied.
func (a *accum) numberDistinct(before []accum) {
	a.dict.reset()
	for j := range before {
		if b := &before[j]; b.feat.op == AggCountDistinct && b.feat.input == a.feat.input {
			a.dids = append(a.dids[:0], b.dids...)
			a.distinct.resize(int(b.dict.n))
			return
		}
	}
	a.dids = slices.Grow(a.dids[:0], len(a.ms))[:len(a.ms)]
	for i := range a.ms {
		a.dids[i] = -1
		if v := a.value(int32(i)); v != nil {
			a.dids[i] = a.dict.id(keyOf(v))
		}
	}
	a.distinct.resize(int(a.dict.n))
}

// restart empties a's set, keeping how it holds values and its buffers, as
// newAccums would leave it.
func (a *accum) restart() {
	if a.fsum != nil {
		a.fbuf, a.fsum = a.fsum, nil
	}
	if a.dsum != nil {
		*a.dsum = decSum{}
	}
	a.n, a.isum, a.floats, a.heap = 0, int128{}, 0, a.heap[:0]
	a.distinct.reset()
}

func (a *accum) value(id int32) any { return a.ms[id].vals[a.feat.input] }

// add puts member id into the set.
func (a *accum) add(id int32) error {
	if a.ints {
		a.addInt(id)
		return nil
	}
	if a.decs {
		a.addDec(id, 1)
		return nil
	}
	switch a.feat.op {
	case AggCount, AggExists:
		a.n++
	case AggSum, AggAvg:
		v := a.value(id)
		if v != nil && !a.addNumber(v, 1) {
			key, _ := a.p.t.DecodeKey(a.ms[id].tuple)
			return &AggValueError{Feature: a.feat.name, Table: a.p.t.Name, Key: key, Value: v, Reason: a.feat.op.String() + " needs numbers"}
		}
	case AggMin, AggMax:
		if a.value(id) != nil {
			a.push(id)
		}
	case AggLatest, AggEarliest:
		a.n++
		a.push(id)
	case AggCountDistinct:
		if d := a.dids[id]; d >= 0 {
			a.distinct.add(d)
		}
	}
	return nil
}

// addAll puts members ids into the set, as add does for each in turn. The
// features a backfill computes most (COUNT, COUNT_DISTINCT, SUM and AVG of
// int64s) run as one loop over the ids, rather than a call and a switch per
// member; MIN and MAX of int64s in a set that only grows keep their best
// member in a register.
func (a *accum) addAll(ids []int32) error {
	switch op := a.feat.op; {
	case op == AggCount || op == AggExists:
		a.n += int64(len(ids))
	case op == AggCountDistinct:
		for _, id := range ids {
			if d := a.dids[id]; d >= 0 {
				a.distinct.add(d)
			}
		}
	case a.ints && (op == AggSum || op == AggAvg):
		in := a.feat.input
		for _, id := range ids {
			if m := &a.ms[id]; m.vals[in] != nil {
				a.isum.addInt(m.ints[in])
				a.n++
			}
		}
	case a.ints && a.addOnly && (op == AggMin || op == AggMax):
		in, best, bestVal := a.feat.input, int32(-1), int64(0)
		if len(a.heap) > 0 {
			best, bestVal = a.heap[0], a.ms[a.heap[0]].ints[in]
		}
		for _, id := range ids {
			m := &a.ms[id]
			if m.vals[in] == nil {
				continue
			}
			if x := m.ints[in]; best < 0 || (op == AggMin && x < bestVal) || (op == AggMax && x > bestVal) {
				best, bestVal = id, x
			}
		}
		if best >= 0 {
			a.heap = append(a.heap[:0], best)
		}
	default:
		for _, id := range ids {
			if err := a.add(id); err != nil {
				return err
			}
		}
	}
	return nil
}

// remove takes member id, added before, out of the set. Heaps drop it lazily:
// its state is no longer inSet.
func (a *accum) remove(id int32) {
	if a.ints {
		a.removeInt(id)
		return
	}
	if a.decs {
		a.addDec(id, -1)
		return
	}
	switch a.feat.op {
	case AggCount, AggExists, AggLatest, AggEarliest:
		a.n--
	case AggSum, AggAvg:
		if v := a.value(id); v != nil {
			a.addNumber(v, -1)
		}
	case AggCountDistinct:
		if d := a.dids[id]; d >= 0 {
			a.distinct.remove(d)
		}
	}
}

// addNumber adds (sign -1: subtracts) a numeric value; false if v is not a number.
func (a *accum) addNumber(v any, sign int) bool {
	switch x := v.(type) {
	case int64:
		a.isum.addIntSign(x, sign)
		if a.fsum != nil {
			a.fsum.addInt(x, sign)
		}
	case uint64:
		a.isum.addUintSign(x, sign)
		if a.fsum != nil {
			a.fsum.addUint(x, sign)
		}
	case float64:
		if a.fsum == nil {
			if a.fsum = a.fbuf; a.fsum == nil {
				a.fsum = &exactSum{}
			}
			*a.fsum = exactSum{}
			a.fsum.addInt128(a.isum)
		}
		a.fsum.addFloat(x, sign)
		a.floats += int64(sign)
	case encoding.Decimal:
		if a.dsum == nil {
			a.dsum = &decSum{}
		}
		a.dsum.add(x.Coef(), uint8(x.Scale()), sign)
	default:
		return false
	}
	a.n += int64(sign)
	return true
}

// result returns the feature's value for the current set.
func (a *accum) result() (val, error) {
	switch a.feat.op {
	case AggCount:
		return intVal(a.n), nil
	case AggExists:
		return val{kind: valBool, n: uint64(boolInt(a.n > 0))}, nil
	case AggCountDistinct:
		return intVal(int64(a.distinct.len())), nil
	case AggSum, AggAvg:
		if a.n == 0 {
			return val{}, nil
		}
		if a.scaled {
			return a.scaledResult()
		}
		if a.dsum != nil && a.dsum.n > 0 {
			return a.decimalResult()
		}
		if a.feat.op == AggAvg {
			total := a.isum.float64()
			if a.floats > 0 {
				total = a.fsum.float64()
			}
			return floatVal(total / float64(a.n)), nil
		}
		if a.floats > 0 {
			return floatVal(a.fsum.float64()), nil
		}
		if v, ok := a.isum.result(); ok {
			return v, nil
		}
		return val{}, &AggValueError{Feature: a.feat.name, Table: a.p.t.Name, overflow: true, Reason: "integer sum overflows int64 and uint64"}
	}
	top, ok := a.top()
	if !ok {
		return val{}, nil
	}
	if a.scaled {
		return val{kind: valDec + a.scale, n: uint64(a.ms[top].ints[a.feat.input])}, nil
	}
	if a.ints {
		return intVal(a.ms[top].ints[a.feat.input]), nil
	}
	if a.decs {
		return a.heldVal(top), nil
	}
	return valueOf(a.value(top)), nil
}

// decimalResult is SUM or AVG of a set holding decimals (the rules are in the
// package doc).
func (a *accum) decimalResult() (val, error) {
	if a.floats > 0 {
		return val{}, &AggValueError{Feature: a.feat.name, Table: a.p.t.Name,
			Reason: a.feat.op.String() + " mixes decimal and float64 values; an exact result is not possible"}
	}
	var d encoding.Decimal
	var ok bool
	if a.feat.op == AggSum {
		d, ok = a.dsum.sumDecimal(a.isum)
	} else {
		d, ok = a.dsum.avgDecimal(a.isum, a.n)
	}
	if !ok {
		return val{}, a.decimalOverflow()
	}
	return decVal(d), nil
}

// decimalOverflow is the error of a decimal SUM or AVG beyond 18 digits.
func (a *accum) decimalOverflow() error {
	return &AggValueError{Feature: a.feat.name, Table: a.p.t.Name, overflow: true,
		Reason: fmt.Sprintf("decimal %s has more than %d digits", a.feat.op, encoding.MaxDecimalDigits)}
}

// val is a feature value without boxing: scalars in n, anything else (strings,
// byte strings) in ref. A backfill keeps n and kind only, so its result buffer
// holds no pointers for the garbage collector to scan.
type val struct {
	kind uint8
	n    uint64
	ref  any
}

// Kinds of val.
const (
	valNull uint8 = iota
	valBool
	valInt
	valUint
	valFloat
	valTime // n holds microseconds since the epoch
	valRef
	// valDec + s is a decimal of scale s (0-18); n holds its coefficient.
	valDec
)

func intVal(i int64) val     { return val{kind: valInt, n: uint64(i)} }
func floatVal(f float64) val { return val{kind: valFloat, n: math.Float64bits(f)} }
func decVal(d encoding.Decimal) val {
	return val{kind: valDec + uint8(d.Scale()), n: uint64(d.Coef())}
}

// valueOf converts an attribute value.
func valueOf(v any) val {
	switch x := v.(type) {
	case nil:
		return val{}
	case bool:
		return val{kind: valBool, n: uint64(boolInt(x))}
	case int64:
		return intVal(x)
	case uint64:
		return val{kind: valUint, n: x}
	case float64:
		return floatVal(x)
	case time.Time:
		return val{kind: valTime, n: uint64(x.UnixMicro())}
	case encoding.Decimal:
		return decVal(x)
	}
	return val{kind: valRef, ref: v}
}

// any returns the value as an attribute value (nil, bool, int64, uint64, float64,
// time.Time, encoding.Decimal or the referenced value).
func (v val) any() any {
	switch v.kind {
	case valBool:
		return v.n != 0
	case valInt:
		return int64(v.n)
	case valUint:
		return v.n
	case valFloat:
		return math.Float64frombits(v.n)
	case valTime:
		return time.UnixMicro(int64(v.n)).UTC()
	case valRef:
		return v.ref
	case valNull:
		return nil
	}
	return mustDecimal(int64(v.n), int(v.kind-valDec))
}

// The heap keeps the best member on top: the least value for MIN, the greatest
// for MAX, the newest version for LATEST, the oldest for EARLIEST.

func (a *accum) better(i, j int32) bool {
	if a.ints {
		return a.betterInt(i, j)
	}
	if a.decs {
		return a.betterDec(i, j)
	}
	mi, mj := &a.ms[i], &a.ms[j]
	switch a.feat.op {
	case AggMin:
		return compareValues(mi.vals[a.feat.input], mj.vals[a.feat.input]) < 0
	case AggMax:
		return compareValues(mi.vals[a.feat.input], mj.vals[a.feat.input]) > 0
	case AggLatest:
		return compareVersions(mi, mj) > 0
	}
	return compareVersions(mi, mj) < 0
}

func compareVersions(a, b *member) int {
	if c := cmp.Compare(a.from, b.from); c != 0 {
		return c
	}
	return bytes.Compare(a.tuple, b.tuple)
}

func (a *accum) push(id int32) {
	if a.addOnly { // no member leaves: the best one is all the heap needs
		switch {
		case len(a.heap) == 0:
			a.heap = append(a.heap, id)
		case a.better(id, a.heap[0]):
			a.heap[0] = id
		}
		return
	}
	h := append(a.heap, id)
	for i := len(h) - 1; i > 0; {
		parent := (i - 1) / 2
		if !a.better(h[i], h[parent]) {
			break
		}
		h[i], h[parent] = h[parent], h[i]
		i = parent
	}
	a.heap = h
}

// top drops members that left the set and returns the best remaining one.
func (a *accum) top() (int32, bool) {
	for len(a.heap) > 0 {
		if a.state == nil || a.state[a.heap[0]] == inSet {
			return a.heap[0], true
		}
		a.pop()
	}
	return 0, false
}

func (a *accum) pop() {
	h := a.heap
	last := len(h) - 1
	h[0] = h[last]
	h = h[:last]
	for i := 0; ; {
		best, l, r := i, 2*i+1, 2*i+2
		if l < len(h) && a.better(h[l], h[best]) {
			best = l
		}
		if r < len(h) && a.better(h[r], h[best]) {
			best = r
		}
		if best == i {
			break
		}
		h[i], h[best] = h[best], h[i]
		i = best
	}
	a.heap = h
}

// Value order (see the package semantics above): kinds first, then values.
const (
	kindBool = iota
	kindNumber
	kindTime
	kindString
	kindBytes
	kindOther
)

func kindOf(v any) int {
	switch v.(type) {
	case bool:
		return kindBool
	case int64, uint64, float64, encoding.Decimal:
		return kindNumber
	case time.Time:
		return kindTime
	case string:
		return kindString
	case []byte:
		return kindBytes
	}
	return kindOther
}

// compareValues is the total order of MIN and MAX over non-null values.
func compareValues(a, b any) int {
	ka, kb := kindOf(a), kindOf(b)
	if ka != kb {
		return cmp.Compare(ka, kb)
	}
	switch ka {
	case kindBool:
		x, y := a.(bool), b.(bool)
		switch {
		case x == y:
			return 0
		case !x:
			return -1
		}
		return 1
	case kindNumber:
		if c := compareNumbers(a, b); c != 0 {
			return c
		}
		if c := cmp.Compare(numberRank(a), numberRank(b)); c != 0 {
			return c
		}
		switch x := a.(type) {
		case float64: // +0 before -0, NaN payloads apart
			return cmp.Compare(math.Float64bits(x), math.Float64bits(b.(float64)))
		case encoding.Decimal: // 1.5 before 1.50
			return cmp.Compare(x.Scale(), b.(encoding.Decimal).Scale())
		}
		return 0
	case kindTime:
		return cmp.Compare(a.(time.Time).UnixMicro(), b.(time.Time).UnixMicro())
	case kindString:
		return strings.Compare(a.(string), b.(string))
	case kindBytes:
		return bytes.Compare(a.([]byte), b.([]byte))
	}
	return 0
}

func numberRank(v any) int {
	switch v.(type) {
	case int64:
		return 0
	case uint64:
		return 1
	case encoding.Decimal:
		return 2
	}
	return 3
}

// compareNumbers compares two numbers by value, exactly (no rounding to
// float64); NaN is above every number and equal to itself.
func compareNumbers(a, b any) int {
	switch x := a.(type) {
	case int64:
		switch y := b.(type) {
		case int64:
			return cmp.Compare(x, y)
		case uint64:
			return -1 // a uint64 attribute is above math.MaxInt64
		case float64:
			return -compareFloatInt(y, x)
		case encoding.Decimal:
			return cmpScaled(x, 0, y.Coef(), uint8(y.Scale()))
		}
	case uint64:
		switch y := b.(type) {
		case int64:
			return 1
		case uint64:
			return cmp.Compare(x, y)
		case float64:
			return -compareFloatUint(y, x)
		case encoding.Decimal:
			return 1 // a decimal has at most 18 digits
		}
	case float64:
		switch y := b.(type) {
		case int64:
			return compareFloatInt(x, y)
		case uint64:
			return compareFloatUint(x, y)
		case float64:
			xn, yn := math.IsNaN(x), math.IsNaN(y)
			switch {
			case xn || yn:
				return cmp.Compare(boolInt(xn), boolInt(yn))
			case x < y:
				return -1
			case x > y:
				return 1
			}
			return 0
		case encoding.Decimal:
			return -compareDecimalFloat(y, x)
		}
	case encoding.Decimal:
		switch y := b.(type) {
		case int64:
			return cmpScaled(x.Coef(), uint8(x.Scale()), y, 0)
		case uint64:
			return -1
		case float64:
			return compareDecimalFloat(x, y)
		case encoding.Decimal:
			return cmpScaled(x.Coef(), uint8(x.Scale()), y.Coef(), uint8(y.Scale()))
		}
	}
	return 0
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func compareFloatInt(f float64, i int64) int {
	switch {
	case math.IsNaN(f), f >= 0x1p63:
		return 1
	case f < -0x1p63:
		return -1
	}
	t := math.Trunc(f)
	if c := cmp.Compare(int64(t), i); c != 0 {
		return c
	}
	return cmp.Compare(f-t, 0)
}

func compareFloatUint(f float64, u uint64) int {
	switch {
	case math.IsNaN(f), f >= 0x1p64:
		return 1
	case f < 0x1p63:
		return -1
	}
	return cmp.Compare(uint64(f), u) // f >= 2^63 is an integer
}

// distinctKey identifies a value for COUNT_DISTINCT: numbers equal by value
// share a key whatever their type.
type distinctKey struct {
	kind uint8
	n    uint64
	s    string
}

const (
	dkBool uint8 = iota + 1
	dkInt
	dkUint
	dkFloat
	dkString
	dkBytes
	dkTime
	dkDecimal // a decimal no int64 or float64 equals: n its coefficient, s its scale
)

func keyOf(v any) distinctKey {
	switch x := v.(type) {
	case bool:
		return distinctKey{kind: dkBool, n: uint64(boolInt(x))}
	case int64:
		return distinctKey{kind: dkInt, n: uint64(x)}
	case uint64:
		return distinctKey{kind: dkUint, n: x}
	case float64:
		switch {
		case math.IsNaN(x):
			return distinctKey{kind: dkFloat, n: math.Float64bits(math.NaN())}
		case x == math.Trunc(x) && x >= -0x1p63 && x < 0x1p63:
			return distinctKey{kind: dkInt, n: uint64(int64(x))}
		case x == math.Trunc(x) && x >= 0x1p63 && x < 0x1p64:
			return distinctKey{kind: dkUint, n: uint64(x)}
		}
		return distinctKey{kind: dkFloat, n: math.Float64bits(x)}
	case string:
		return distinctKey{kind: dkString, s: x}
	case []byte:
		return distinctKey{kind: dkBytes, s: string(x)}
	case time.Time:
		return distinctKey{kind: dkTime, n: uint64(x.UnixMicro())}
	case encoding.Decimal:
		return decimalKey(x)
	}
	return distinctKey{s: fmt.Sprintf("%T:%v", v, v)}
}
