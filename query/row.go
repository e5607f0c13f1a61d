package query

import (
	"slices"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/store"
)

// This file is the row view of batch reads: a version's attributes read
// straight from their stored bytes into values the view reuses, so a batch
// builds no map and allocates nothing per row. The map APIs (Resolution.Attrs)
// are built from it.

// AttrRow is the attributes of one version as a batch read delivers them: a
// view over the stored record, valid only until the batch moves on. They are
// read as a store.Row's are: by a store.AttrRef per attribute with the typed
// accessors (Int64, Float64, Bool, Text, String) or Attr, or all of them with
// Walk; Map copies them into a map.
//
// The first accessor call of a row walks the record once and keeps the value
// of every attribute a reference has asked for in this view, so later reads of
// the row cost a comparison of pointers. An AttrRow only reads a reference's
// name, never resolves it in place as a store.Row does, so one set of
// references made before a batch serves every goroutine of it.
type AttrRow struct {
	raw   store.RawAttrs // the stored attributes, or
	attrs store.Attrs    // the decoded ones (a retired record sharing its successor's)

	refs   []*store.AttrRef // every reference asked for, in the order first asked,
	slotOf []int            // and the slot of each
	slots  []attrSlot       // one per name asked for
	next   int              // the reference after the last one read
	done   bool             // slots hold this row's values
	err    error            // the first malformed record a typed accessor met

	fillNext int            // the slot after the last one filled
	none     encoding.Value // what a typed accessor reads when the kind differs
	scratch  encoding.Value
	fillFn   func(string, *encoding.Value) error // r.fill, made once
}

// attrSlot is the value of one attribute asked for in the current row.
type attrSlot struct {
	name string
	v    encoding.Value
	held bool // the record holds the attribute
}

// newAttrRow returns an empty row view.
func newAttrRow() *AttrRow {
	r := &AttrRow{}
	r.fillFn = r.fill
	return r
}

// reset points the view at a version's attributes.
func (r *AttrRow) reset(raw store.RawAttrs, attrs store.Attrs) {
	r.raw, r.attrs, r.done = raw, attrs, false
}

// slot returns the slot of c, filled for the current row. A caller that reads
// the same references in the same order in every row finds each at its first
// comparison. A malformed record is an error wrapping store.ErrCorrupt.
func (r *AttrRow) slot(c *store.AttrRef) (*attrSlot, error) {
	i := r.next
	if i >= len(r.refs) || r.refs[i] != c {
		if i = slices.Index(r.refs, c); i < 0 {
			i = r.add(c)
		}
	}
	r.next = i + 1
	if !r.done {
		for k := range r.slots {
			r.slots[k].v, r.slots[k].held = encoding.Value{}, false
		}
		r.fillNext = 0
		if err := r.Walk(r.fillFn); err != nil {
			return nil, err
		}
		r.done = true
	}
	return &r.slots[r.slotOf[i]], nil
}

// add adds reference c, with a slot of its own unless another reference
// names the same attribute, and returns its index.
func (r *AttrRow) add(c *store.AttrRef) int {
	k := slices.IndexFunc(r.slots, func(s attrSlot) bool { return s.name == c.Name() })
	if k < 0 {
		k = len(r.slots)
		r.slots = append(r.slots, attrSlot{name: c.Name()})
		r.done = false // fill the new slot too
	}
	r.refs, r.slotOf = append(r.refs, c), append(r.slotOf, k)
	return len(r.refs) - 1
}

// fill keeps a walked value in the slot of its name. Records hold their
// attributes in one order, so the slot after the last one filled is most
// often the next one's.
func (r *AttrRow) fill(name string, v *encoding.Value) error {
	k := r.fillNext
	if k >= len(r.slots) || r.slots[k].name != name {
		if k = slices.IndexFunc(r.slots, func(s attrSlot) bool { return s.name == name }); k < 0 {
			return nil
		}
	}
	r.slots[k].v, r.slots[k].held = *v, true
	r.fillNext = k + 1
	return nil
}

// Attr decodes the version's value of attribute c into v and reports whether
// the version holds it; v is the zero Value (KindNull) when it does not. v
// aliases the stored record (copy Bytes to keep them). A malformed record is
// an error wrapping store.ErrCorrupt.
func (r *AttrRow) Attr(c *store.AttrRef, v *encoding.Value) (bool, error) {
	s, err := r.slot(c)
	if err != nil {
		*v = encoding.Value{}
		return false, err
	}
	*v = s.v
	return s.held, nil
}

// typed returns the value of c when the version holds one of kind, else the
// zero Value and false. A malformed record is kept in the row, and the batch
// ends with its error once the callback returns, as a store.Row's scan does.
func (r *AttrRow) typed(c *store.AttrRef, kind uint8) (*encoding.Value, bool) {
	s, err := r.slot(c)
	if err != nil {
		if r.err == nil {
			r.err = err
		}
		return &r.none, false
	}
	if !s.held || s.v.Kind != kind {
		return &r.none, false
	}
	return &s.v, true
}

// Int64 returns the version's value of c when it holds an integer that fits
// an int64.
func (r *AttrRow) Int64(c *store.AttrRef) (int64, bool) {
	v, ok := r.typed(c, encoding.KindInt)
	return v.Int, ok
}

// Float64 returns the version's value of c when it holds a float.
func (r *AttrRow) Float64(c *store.AttrRef) (float64, bool) {
	v, ok := r.typed(c, encoding.KindFloat)
	return v.Float, ok
}

// Bool returns the version's value of c when it holds a boolean.
func (r *AttrRow) Bool(c *store.AttrRef) (bool, bool) {
	v, ok := r.typed(c, encoding.KindBool)
	return v.Bool, ok
}

// Text returns the bytes of the version's value of c when it holds a string,
// aliasing the stored record.
func (r *AttrRow) Text(c *store.AttrRef) ([]byte, bool) {
	v, ok := r.typed(c, encoding.KindString)
	return v.Bytes, ok
}

// String returns a copy of the version's value of c when it holds a string.
func (r *AttrRow) String(c *store.AttrRef) (string, bool) {
	b, ok := r.Text(c)
	return string(b), ok
}

// Walk calls fn for each attribute of the version (each projected one it
// holds), with a value that aliases the stored record and is reused by the
// next call; see store.RawAttrs.Walk.
func (r *AttrRow) Walk(fn func(name string, v *encoding.Value) error) error {
	if r.attrs == nil {
		return r.raw.WalkInto(&r.scratch, fn)
	}
	for _, name := range r.attrs.Names() {
		r.scratch = encoding.ValueOf(r.attrs[name])
		if err := fn(name, &r.scratch); err != nil {
			return err
		}
	}
	return nil
}

// Map returns the attributes as a fresh map, as a read that decodes them does.
func (r *AttrRow) Map() (store.Attrs, error) {
	if r.attrs != nil {
		return r.attrs, nil
	}
	m := store.Attrs{}
	err := r.raw.WalkInto(&r.scratch, func(name string, v *encoding.Value) error {
		m[name] = v.Any()
		return nil
	})
	return m, err
}

// ResolvedRow is one answer of ResolveRows: a view valid only during the call
// of fn that receives it. With ResolveOptions.Attrs its attributes are read
// through the embedded AttrRow, with the accessors a store.Row has
// (row.Int64(ref), row.Text(ref), row.Walk(fn)); a miss holds none.
type ResolvedRow struct {
	// Index is the fact's position in the input.
	Index int
	// SK is the surrogate key of the version the fact resolved to, or
	// ResolveOptions.Default or 0 for a miss.
	SK uint64
	// Reason is store.Found when the fact resolved, otherwise why it missed.
	Reason store.MissReason
	// Inferred is set when the version is an inferred member.
	Inferred bool
	// Default is set when SK is ResolveOptions.Default standing in for a miss.
	Default bool
	// ValidFrom and ValidTo are the version's valid period; zero for a miss.
	ValidFrom, ValidTo int64
	*AttrRow
}

// Found reports whether the fact resolved to a version.
func (r *ResolvedRow) Found() bool { return r.Reason == store.Found }
