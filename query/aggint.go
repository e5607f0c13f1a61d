package query

import (
	"cmp"
	"slices"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/store"
)

// This file is the aggregations' integer (and decimal) path, which every plan runs: a
// backfill's group sweep and table-wide sweep, Aggregate and AggregateTable.
// Each version's projected attributes are decoded straight from their stored
// form (store.RawAttrs.Walk; a GroupRecord's RawAttrs, or a version read
// through a WithRawAttrs copy of the plan's table), keeping an int64 unboxed in
// member.ints, and once the versions are loaded (a backfill's group, or every
// version a point aggregation reads) settleInts decides per attribute whether
// every value they hold of it is an int64 (or null). SUM, AVG, MIN and MAX over
// such an attribute then run on int64s: no interface values, no type switches,
// no float state. Any other attribute, or one read by another kind of feature
// (COUNT DISTINCT, LATEST, EARLIEST, a window column, a filter), holds its
// values boxed. A version whose attributes come back decoded (a
// retired record that shares its successor's attributes) has its int64s moved
// to the same form (holdInts), so both kinds of record mix in one set.
//
// Overflow is exact and the same as the generic path's: the running sum is a
// 128-bit integer, so no addition or removal ever overflows (a set of at most
// 2^31 members of int64 values fits in 96 bits), and a SUM whose final value
// lies outside int64 is returned as a uint64 when it fits one, else it is an
// *AggValueError; AVG divides the exact sum, converted to float64 once, by the
// count. MIN and MAX compare int64s.
//
// Decimals take the same road: a decimal is held unboxed as its coefficient in
// member.ints and decHeld(scale) in member.vals, and an attribute whose values
// are decimals, int64s or nulls runs on the decimal path (colDec): SUM and AVG
// add each coefficient to its scale's 128-bit sum (decsum.go), MIN and MAX
// compare coefficients scaled to a common scale in 128 bits. Neither allocates
// per version. When the loaded decimals all have one scale (a declared
// decimal(p, s) column stores every value at s) the attribute runs on the
// integer path itself, over the coefficients (colDecAt), and only a result is
// turned into a Decimal of that scale. Aggregate and AggregateTable build members
// and accumulators exactly as a backfill does and evaluate them at one time
// (plan.point). docs/design/aggregation-int-path.md gives the reasons.

// intHeld is the value of member.vals[i] when the attribute is an int64 held
// unboxed in member.ints[i]; nil stays null.
type intHeld struct{}

// decHeld is the value of member.vals[i] when the attribute is a decimal of
// that scale whose coefficient is held in member.ints[i]. (An interface holding
// a one-byte value points at a static table: setting it allocates nothing.)
type decHeld uint8

// colPath is how the members of a load hold one column's values.
type colPath uint8

const (
	colBoxed colPath = iota // boxed in member.vals
	colInt                  // int64s (and nulls): intHeld
	colDec                  // decimals, and maybe int64s and nulls: decHeld, intHeld
	// colDecAt + s: decimals all of scale s (and nulls), as a declared
	// decimal column holds them. Their coefficients run on the integer path,
	// and only the results are decimals.
	colDecAt
)

// aggPath is how a plan holds attribute values.
type aggPath uint8

const (
	// intPath is the path of this file, which every aggregation runs.
	intPath aggPath = iota
	// genericPath decodes each version's attributes into a map and holds
	// every value boxed: the reference the tests and benchmarks compare
	// intPath with (aggregate, aggregateTable and backfillOn take the path).
	genericPath
)

// ints reports whether p runs on the integer path.
func (p *plan) ints() bool { return p.path == intPath }

// intOp reports whether op runs on the integer path when its input allows.
func intOp(op AggOp) bool {
	return op == AggSum || op == AggAvg || op == AggMin || op == AggMax
}

// boxedCols returns, per plan.attrs entry, whether some feature needs the
// column's values boxed whatever their type.
func (p *plan) boxedCols() []bool {
	boxed := make([]bool, len(p.attrs))
	for _, f := range p.feats {
		if f.input >= 0 && !intOp(f.op) {
			boxed[f.input] = true
		}
	}
	for _, f := range p.filters {
		if f.column >= 0 {
			boxed[f.column] = true
		}
	}
	for i, c := range p.keyCol {
		if c >= 0 {
			boxed[i] = true
		}
	}
	return boxed
}

// fillRaw sets m.vals (and m.ints) from a record's projected stored
// attributes; key columns are set from key, or from the tuple when key is nil.
// m.vals must be cleared.
func (p *plan) fillRaw(m *member, raw store.RawAttrs, key store.Key) error {
	if p.needKey {
		if err := p.fill(m, nil, key); err != nil { // key columns; attributes are nil here
			return err
		}
	}
	if p.walk == nil {
		p.walk = p.walkAttr // one method value per plan, not a closure per record
	}
	p.walking = m
	return raw.WalkInto(&p.scratch, p.walk)
}

// clone returns a copy of p for another goroutine: the same features and
// projected table, with walk state and interned strings of its own.
func (p *plan) clone() *plan {
	c := *p
	c.walking, c.walk, c.scratch, c.strs = nil, nil, encoding.Value{}, nil
	return &c
}

// maxInterned bounds the distinct strings a plan interns.
const maxInterned = 1 << 12

// str returns the attribute value of string b, boxed: the same value for equal
// contents while the plan has interned fewer than maxInterned, so a column of
// few distinct strings (a status) costs no allocation per version. The last
// strings found sit in a small table indexed by their length and end bytes,
// looked at before the map: a column of few distinct values then costs one
// comparison per version rather than a hash.
func (p *plan) str(b []byte) any {
	slot := &p.recent[recentSlot(b)]
	if slot.v != nil && slot.s == string(b) {
		return slot.v
	}
	v, ok := p.strs[string(b)]
	if !ok {
		v = string(b)
		if len(p.strs) < maxInterned {
			if p.strs == nil {
				p.strs = map[string]any{}
			}
			p.strs[string(b)] = v
		}
	}
	*slot = recentStr{s: v.(string), v: v}
	return v
}

// recentStrs is how many strings a plan keeps where str looks first.
const recentStrs = 8

// recentStr is a string str returned, and its boxed value.
type recentStr struct {
	s string
	v any
}

// recentSlot is the index in plan.recent where str looks for b first.
func recentSlot(b []byte) int {
	if len(b) == 0 {
		return 0
	}
	return (len(b) ^ int(b[0]) ^ int(b[len(b)-1])<<2) % recentStrs
}

// walkAttr sets the attribute name of p.walking from its stored value v.
func (p *plan) walkAttr(name string, v *encoding.Value) error {
	i := slices.Index(p.attrs, name)
	if i < 0 || p.keyCol[i] >= 0 {
		return nil
	}
	m := p.walking
	switch {
	case v.Kind == encoding.KindInt && p.ints():
		m.ints[i], m.vals[i] = v.Int, intHeld{}
	case v.Kind == encoding.KindDecimal && p.ints():
		m.ints[i], m.vals[i] = v.Int, decHeld(v.Scale)
	case v.Kind == encoding.KindString:
		m.vals[i] = p.str(v.Bytes)
	default:
		m.vals[i] = v.Any()
	}
	return nil
}

// fillVersion sets m from a version's attributes: raw when it holds them (the
// version was read through readTable), else the decoded attrs. key is the
// decoded tuple, or nil to decode it when the plan reads a key column.
func (p *plan) fillVersion(m *member, raw store.RawAttrs, attrs store.Attrs, key store.Key) error {
	if !raw.IsZero() {
		return p.fillRaw(m, raw, key)
	}
	if err := p.fill(m, attrs, key); err != nil {
		return err
	}
	p.holdInts(m)
	return nil
}

// fillRecord sets m from a group index entry's attributes: their stored form
// on the integer path, a decoded map when the record shares its successor's
// attributes or on the generic path.
func (p *plan) fillRecord(m *member, rec *store.GroupEntry) error {
	if p.ints() {
		raw, ok, err := rec.RawAttrs()
		if err != nil {
			return err
		}
		if ok {
			return p.fillRaw(m, raw, nil)
		}
	}
	attrs, err := rec.Attrs()
	if err != nil {
		return err
	}
	return p.fillVersion(m, store.RawAttrs{}, attrs, nil)
}

// readTable is the table to read versions through (ScanAt, ScanHistory): the
// plan's projected table, leaving attributes encoded on the integer path.
func (p *plan) readTable() *store.Table {
	if p.ints() {
		return p.t.WithRawAttrs()
	}
	return p.t
}

// memberBuf builds members in buffers that grow and are reused by the next
// load: one backing array each for the members' tuples, values and ints, not
// one allocation per member.
type memberBuf struct {
	ms     []member
	vals   []any
	ints   []int64
	tuples []byte
}

// reset empties b for the next load; members built before must not be used
// any more.
func (b *memberBuf) reset() {
	b.ms, b.vals, b.ints, b.tuples = b.ms[:0], b.vals[:0], b.ints[:0], b.tuples[:0]
}

// add appends a member with a copy of tuple and the given periods, its values
// cleared, and returns it for the caller to fill.
func (b *memberBuf) add(na int, tuple []byte, from, to, txFrom, txTo int64) *member {
	// A buffer that grows moves on to a new array; members already built keep
	// pointing at the old one, which nothing writes any more.
	t0, v0 := len(b.tuples), len(b.vals)
	b.tuples = append(b.tuples, tuple...)
	b.vals = slices.Grow(b.vals, na)[:v0+na]
	b.ints = slices.Grow(b.ints, na)[:v0+na]
	b.ms = append(b.ms, member{tuple: b.tuples[t0:len(b.tuples):len(b.tuples)], from: from, to: to,
		txFrom: txFrom, txTo: txTo, vals: b.vals[v0 : v0+na : v0+na], ints: b.ints[v0 : v0+na : v0+na]})
	m := &b.ms[len(b.ms)-1]
	clear(m.vals)
	return m
}

// addVersion appends a member for a version read through p.readTable().
func (b *memberBuf) addVersion(p *plan, v *store.Version) error {
	m := b.add(len(p.attrs), v.Tuple(), v.ValidFrom, v.ValidTo, v.TxFrom, v.TxTo)
	return p.fillVersion(m, v.RawAttrs(), v.Attrs, v.Key)
}

// addRecord appends a member for a group index entry read through p.t.
func (b *memberBuf) addRecord(p *plan, rec *store.GroupEntry) error {
	m := b.add(len(p.attrs), rec.Tuple, rec.ValidFrom, rec.ValidTo, rec.TxFrom, rec.TxTo)
	return p.fillRecord(m, rec)
}

// holdInts moves the int64 and decimal attribute values of m, filled from a
// map, to the integer path's form (as fillRaw leaves them).
func (p *plan) holdInts(m *member) {
	if !p.ints() {
		return
	}
	for i, v := range m.vals {
		if p.keyCol[i] >= 0 {
			continue
		}
		switch x := v.(type) {
		case int64:
			m.ints[i], m.vals[i] = x, intHeld{}
		case encoding.Decimal:
			m.ints[i], m.vals[i] = x.Coef(), decHeld(x.Scale())
		}
	}
}

// settleInts decides, after a group's members are loaded, how each column's
// values are held (cols[i]): a column no feature needs boxed runs on the
// integer path when every value is an int64 or null, on the decimal path when
// they are decimals, int64s or nulls and one is a decimal. The other columns
// get their int64s and decimals boxed.
func (p *plan) settleInts(ms []member, boxed []bool, cols []colPath) {
	for i := range p.attrs {
		path := colBoxed
		if !boxed[i] && p.ints() {
			path = colInt
		}
		scale, scales := decHeld(0), 0 // scales: 1 while every decimal has scale, 2 once one has not
		for k := 0; path != colBoxed && k < len(ms); k++ {
			switch h := ms[k].vals[i].(type) {
			case nil:
			case intHeld:
				scales = 2
			case decHeld:
				path = colDec
				if scales == 0 {
					scale, scales = h, 1
				} else if h != scale {
					scales = 2
				}
			default:
				path = colBoxed
			}
		}
		if path == colDec && scales == 1 {
			path = colDecAt + colPath(scale)
		}
		cols[i] = path
		if path != colBoxed {
			continue
		}
		for k := range ms {
			switch h := ms[k].vals[i].(type) {
			case intHeld:
				ms[k].vals[i] = ms[k].ints[i]
			case decHeld:
				ms[k].vals[i] = mustDecimal(ms[k].ints[i], int(h))
			}
		}
	}
}

// The integer path of accum: its feature's input column holds int64s in
// member.ints (member.vals says null or intHeld).

func (a *accum) intValue(id int32) (int64, bool) {
	m := &a.ms[id]
	if m.vals[a.feat.input] == nil {
		return 0, false
	}
	return m.ints[a.feat.input], true
}

func (a *accum) addInt(id int32) {
	x, ok := a.intValue(id)
	if !ok {
		return
	}
	switch a.feat.op {
	case AggSum, AggAvg:
		a.isum.addInt(x)
		a.n++
	case AggMin, AggMax:
		a.push(id)
	}
}

func (a *accum) removeInt(id int32) {
	if x, ok := a.intValue(id); ok && (a.feat.op == AggSum || a.feat.op == AggAvg) {
		a.isum.subInt(x)
		a.n--
	}
}

func (a *accum) betterInt(i, j int32) bool {
	x, y := a.ms[i].ints[a.feat.input], a.ms[j].ints[a.feat.input]
	if a.feat.op == AggMin {
		return x < y
	}
	return x > y
}

// The decimal path of accum: its feature's input column holds decimals and
// int64s in member.ints (member.vals says null, intHeld or decHeld and the
// scale). An int64 is a decimal of scale 0 that stays an int64 as a MIN or MAX.

// addDec adds member id to the set (sign -1: removes it).
func (a *accum) addDec(id int32, sign int) {
	m := &a.ms[id]
	in := a.feat.input
	var scale uint8
	switch h := m.vals[in].(type) {
	case decHeld:
		scale = uint8(h)
	case intHeld:
		if a.feat.op == AggSum || a.feat.op == AggAvg {
			a.isum.addIntSign(m.ints[in], sign)
			a.n += int64(sign)
		} else if sign > 0 {
			a.push(id)
		}
		return
	default:
		return
	}
	switch a.feat.op {
	case AggSum, AggAvg:
		a.dsum.add(m.ints[in], scale, sign)
		a.n += int64(sign)
	case AggMin, AggMax:
		if sign > 0 {
			a.push(id)
		}
	}
}

// scaledResult is SUM or AVG on the integer path of decimals all of scale
// a.scale (colDecAt): the sum of their coefficients, at that scale.
func (a *accum) scaledResult() (val, error) {
	var d encoding.Decimal
	ok := false
	if a.feat.op == AggSum {
		var c int64
		if c, ok = a.isum.decCoef(); ok {
			d = mustDecimal(c, int(a.scale))
		}
	} else {
		d, ok = avgAt(a.isum, int(a.scale), a.n)
	}
	if !ok {
		return val{}, a.decimalOverflow()
	}
	return decVal(d), nil
}

// held returns the coefficient, scale and number rank (compareValues' order
// of equal numbers: int64 before decimal) of member id's value.
func (a *accum) held(id int32) (coef int64, scale uint8, rank int) {
	m := &a.ms[id]
	if h, ok := m.vals[a.feat.input].(decHeld); ok {
		return m.ints[a.feat.input], uint8(h), 2
	}
	return m.ints[a.feat.input], 0, 0
}

// betterDec orders members as compareValues orders their values.
func (a *accum) betterDec(i, j int32) bool {
	ci, si, ri := a.held(i)
	cj, sj, rj := a.held(j)
	c := cmpScaled(ci, si, cj, sj)
	if c == 0 {
		c = cmp.Compare(ri, rj)
	}
	if c == 0 {
		c = cmp.Compare(si, sj)
	}
	if a.feat.op == AggMin {
		return c < 0
	}
	return c > 0
}

// heldVal returns member id's value as a result.
func (a *accum) heldVal(id int32) val {
	coef, scale, rank := a.held(id)
	if rank == 0 {
		return intVal(coef)
	}
	return val{kind: valDec + scale, n: uint64(coef)}
}
