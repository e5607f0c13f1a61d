package query

import (
	"slices"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/store"
)

// This file is the backfill's integer path. A backfill decodes each record's
// projected attributes straight from their stored form (store.RawAttrs.Walk),
// keeping an int64 unboxed in member.ints, and after loading a group it decides
// per attribute whether every value the group holds of it is an int64 (or
// null). SUM, AVG, MIN and MAX over such an attribute then run on int64s: no
// interface values, no type switches, no float state. Any other attribute, or
// one read by another kind of feature (COUNT DISTINCT, LATEST, EARLIEST, a
// window column), holds its values boxed as before.
//
// Overflow is exact and the same as the generic path's: the running sum is a
// 128-bit integer, so no addition or removal ever overflows (a set of at most
// 2^31 members of int64 values fits in 96 bits), and a SUM whose final value
// lies outside int64 is returned as a uint64 when it fits one, else it is an
// *AggValueError; AVG divides the exact sum, converted to float64 once, by the
// count. MIN and MAX compare int64s. Rejected: an int64 running sum that fails
// on the first overflowing addition, which would make a result depend on the
// order the sweep adds and removes members in.

// intHeld is the value of member.vals[i] when the attribute is an int64 held
// unboxed in member.ints[i]; nil stays null.
type intHeld struct{}

// useIntPath is false only in benchmarks and tests of the generic path.
var useIntPath = true

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
// attributes; key columns are set from the tuple. m.vals must be cleared.
func (p *plan) fillRaw(m *member, raw store.RawAttrs) error {
	if p.needKey {
		if err := p.fill(m, nil, nil); err != nil { // key columns; attributes are nil here
			return err
		}
	}
	return raw.Walk(func(name string, v *encoding.Value) error {
		i := slices.Index(p.attrs, name)
		if i < 0 || p.keyCol[i] >= 0 {
			return nil
		}
		if v.Kind == encoding.KindInt && useIntPath {
			m.ints[i], m.vals[i] = v.Int, intHeld{}
		} else {
			m.vals[i] = v.Any()
		}
		return nil
	})
}

// holdInts moves the int64 attribute values of m, filled from a map, to the
// integer path's form (as fillRaw leaves them).
func (p *plan) holdInts(m *member) {
	for i, v := range m.vals {
		if x, ok := v.(int64); ok && p.keyCol[i] < 0 && useIntPath {
			m.ints[i], m.vals[i] = x, intHeld{}
		}
	}
}

// settleInts decides, after a group's members are loaded, which columns run on
// the integer path (intCols[i]): those no feature needs boxed whose every
// value is an int64 or null. The other columns get their int64s boxed.
func (p *plan) settleInts(ms []member, boxed, intCols []bool) {
	for i := range p.attrs {
		ints := !boxed[i] && useIntPath
		for k := 0; ints && k < len(ms); k++ {
			switch ms[k].vals[i].(type) {
			case nil, intHeld:
			default:
				ints = false
			}
		}
		intCols[i] = ints
		if ints {
			continue
		}
		for k := range ms {
			if _, ok := ms[k].vals[i].(intHeld); ok {
				ms[k].vals[i] = ms[k].ints[i]
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
