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
// view over the stored record, valid only until the batch moves on. Value
// reads one of the projected attributes by position, decoding the record the
// first time per row into values the view reuses; Walk visits every attribute
// it holds; Map copies them into a map.
type AttrRow struct {
	names []string // the projection; nil when every attribute is read
	vals  []encoding.Value
	done  bool // vals holds this row's values

	raw   store.RawAttrs // the stored attributes, or
	attrs store.Attrs    // the decoded ones (a retired record sharing its successor's)

	scratch encoding.Value
	fillFn  func(string, *encoding.Value) error // r.fill, made once
}

// newAttrRow returns a row view of the attributes in names (all when names is
// empty).
func newAttrRow(names []string) *AttrRow {
	r := &AttrRow{}
	if len(names) > 0 {
		r.names, r.vals = names, make([]encoding.Value, len(names))
	}
	r.fillFn = r.fill
	return r
}

// reset points the view at a version's attributes.
func (r *AttrRow) reset(raw store.RawAttrs, attrs store.Attrs) {
	r.raw, r.attrs, r.done = raw, attrs, false
}

// Len returns the number of projected attributes Value reads (0 without a
// projection).
func (r *AttrRow) Len() int { return len(r.names) }

// Value returns the i-th projected attribute (ResolveOptions.Project[i]); its
// Kind is encoding.KindNull when the version does not hold it. The value
// aliases the stored record: copy Bytes to keep it. A malformed record is an
// error wrapping store.ErrCorrupt.
func (r *AttrRow) Value(i int) (*encoding.Value, error) {
	if !r.done {
		for k := range r.vals {
			r.vals[k] = encoding.Value{}
		}
		if err := r.Walk(r.fillFn); err != nil {
			return nil, err
		}
		r.done = true
	}
	return &r.vals[i], nil
}

// fill keeps a walked value in the slot of its name.
func (r *AttrRow) fill(name string, v *encoding.Value) error {
	if i := slices.Index(r.names, name); i >= 0 {
		r.vals[i] = *v
	}
	return nil
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
// of fn that receives it.
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
	// Attrs are the version's attributes, with ResolveOptions.Attrs; Value(i)
	// reads ResolveOptions.Project[i].
	Attrs *AttrRow
}

// Found reports whether the fact resolved to a version.
func (r *ResolvedRow) Found() bool { return r.Reason == store.Found }
