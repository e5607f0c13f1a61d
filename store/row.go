package store

import (
	"fmt"
	"slices"

	"github.com/bitempo/bitempo/encoding"
)

// This file is the row view: a version as a scan finds it, read in place
// from the stored key and value instead of being decoded into a Version with
// an attribute map. ScanRowsAt hands the same Row to every call of its
// callback, refilled for each key, so a scan allocates per batch, not per
// row; ScanAt is the copying convenience over the same walk (Row.Version).

// Row is one version found by a scan, its key and attributes still in their
// stored form. Its exported fields are decoded; Tuple, the key components and
// the attributes alias the scan's iterator, so a Row and everything read from
// it in place (Text, KeyValue, the values Walk passes) is valid only until
// the callback that received it returns. Version copies it out.
type Row struct {
	ValidFrom int64 // inclusive
	ValidTo   int64 // exclusive; Infinity when open-ended
	TxFrom    int64 // the transaction that asserted the record
	TxTo      int64 // the transaction that retired it; Infinity while current
	SK        uint64
	// Inferred marks a placeholder created for a key that facts referenced
	// before the dimension knew it.
	Inferred bool

	s       *Snapshot
	t       *Table
	names   *attrNames
	name    func(ord uint32) (string, bool) // names.name, bound once per scan
	tuple   []byte
	value   []byte   // the stored record (current index or history), or nil
	from    int64    // the valid_from of value's key
	keyTx   int64    // the tx_from of value's key: 0 in the current index
	attrs   []byte   // its positional attributes (its successor's, when shared)
	past    *Version // at a past transaction time: the version read (raw attributes)
	keyBuf  []byte   // unescaped key components
	attrBuf []byte   // re-encoded shared attributes
	v       encoding.Value
	err     error // the first malformed value an accessor found
}

// AttrRef names one attribute for a Row's typed accessors. It resolves the
// name to the attribute's ordinal at its first use in a scan and keeps it, so
// that every later row reads the attribute by ordinal: make one per attribute
// before the scan and pass it to every row. A Row resolves it in place, so it
// is for one goroutine's scan at a time; query.AttrRow, which reads the same
// attributes with the same accessors, uses only its name and shares it
// between goroutines.
type AttrRef struct {
	name  string
	names *attrNames // the snapshot's names of the table it was resolved in
	ord   uint32
	ok    bool // the table has stored the name
}

// NewAttrRef returns a reference to the attribute called name.
func NewAttrRef(name string) *AttrRef { return &AttrRef{name: name} }

// Name returns the attribute's name.
func (c *AttrRef) Name() string { return c.name }

// resolve points c at the ordinal of its name in the table r reads. A name
// the table never stored is an attribute no row holds.
func (r *Row) resolve(c *AttrRef) {
	a := r.names
	if c.names == a {
		return
	}
	i := slices.Index(a.names, c.name)
	if i < 0 {
		if list, err := readAttrNames(r.s.view, r.t.ID); err == nil && len(list) > len(a.names) {
			a.names = list
			i = slices.Index(list, c.name)
		}
	}
	c.names, c.ord, c.ok = a, uint32(max(i, 0)), i >= 0
}

// Tuple returns the encoded natural key of the row.
func (r *Row) Tuple() []byte { return r.tuple }

// Key decodes the row's natural key (it allocates; KeyValue does not).
func (r *Row) Key() (Key, error) { return r.t.DecodeKey(r.tuple) }

// KeyValue decodes component i of the row's key into v (KindInt, KindUint,
// KindString or KindBytes); strings and byte strings alias the row.
func (r *Row) KeyValue(i int, v *encoding.Value) error {
	b, err := encoding.SkipKey(r.tuple, i)
	if err == nil {
		_, r.keyBuf, err = encoding.DecodeComponentValue(b, v, r.keyBuf)
	}
	if err != nil {
		return fmt.Errorf("%w: table %q key %x component %d: %v", ErrCorrupt, r.t.Name, r.tuple, i, err)
	}
	return nil
}

// Attr decodes the row's value of attribute c into v and reports whether the
// row holds it; v is the zero Value (KindNull) when it does not. v aliases
// the row (copy Bytes to keep them).
func (r *Row) Attr(c *AttrRef, v *encoding.Value) (bool, error) {
	*v = encoding.Value{}
	r.resolve(c)
	if !c.ok {
		return false, nil
	}
	found, err := encoding.FindAttrPositional(r.attrs, c.ord, v)
	if err != nil || !found {
		*v = encoding.Value{} // FindAttrPositional leaves the last value it stepped over
	}
	if err != nil {
		return false, fmt.Errorf("%w: table %q record of key %x: %v", ErrCorrupt, r.t.Name, r.tuple, err)
	}
	return found, nil
}

// attr is Attr for the typed accessors: it keeps the first error in the row,
// which ends the scan once the callback returns.
func (r *Row) attr(c *AttrRef, kind uint8) (*encoding.Value, bool) {
	found, err := r.Attr(c, &r.v)
	if err != nil {
		r.err = firstError(r.err, err)
		return nil, false
	}
	return &r.v, found && r.v.Kind == kind
}

// Int64 returns the row's value of c when it holds an integer that fits an
// int64. A malformed record read here ends the scan with an error wrapping
// ErrCorrupt, as it does for every typed accessor.
func (r *Row) Int64(c *AttrRef) (int64, bool) {
	v, ok := r.attr(c, encoding.KindInt)
	if !ok {
		return 0, false
	}
	return v.Int, true
}

// Float64 returns the row's value of c when it holds a float.
func (r *Row) Float64(c *AttrRef) (float64, bool) {
	v, ok := r.attr(c, encoding.KindFloat)
	if !ok {
		return 0, false
	}
	return v.Float, true
}

// Bool returns the row's value of c when it holds a boolean.
func (r *Row) Bool(c *AttrRef) (bool, bool) {
	v, ok := r.attr(c, encoding.KindBool)
	if !ok {
		return false, false
	}
	return v.Bool, true
}

// Text returns the bytes of the row's value of c when it holds a string,
// aliasing the row.
func (r *Row) Text(c *AttrRef) ([]byte, bool) {
	v, ok := r.attr(c, encoding.KindString)
	if !ok {
		return nil, false
	}
	return v.Bytes, true
}

// String returns a copy of the row's value of c when it holds a string.
func (r *Row) String(c *AttrRef) (string, bool) {
	b, ok := r.Text(c)
	return string(b), ok
}

// RawAttrs returns the row's attributes in their stored form, projected as
// its table is (Snapshot.Project), aliasing the row.
func (r *Row) RawAttrs() RawAttrs {
	return RawAttrs{b: r.attrs, name: r.name, proj: r.t.proj}
}

// Walk calls fn for each attribute of the row (RawAttrs.Walk).
func (r *Row) Walk(fn func(name string, v *encoding.Value) error) error {
	return r.RawAttrs().Walk(fn)
}

// Version returns the row as a Version that owns its bytes: its key and
// attributes decoded as every read through the row's table decodes them
// (attributes as a map, or as RawAttrs for a WithRawAttrs table, projected by
// Project), its periods, surrogate key and flags as the row's fields hold
// them (a read that clips the valid period sets the fields, and the Version
// says the same).
func (r *Row) Version() (Version, error) {
	v, err := r.stored()
	if err != nil {
		return Version{}, err
	}
	v.ValidFrom, v.ValidTo, v.TxFrom, v.TxTo, v.SK, v.Inferred = r.ValidFrom, r.ValidTo, r.TxFrom, r.TxTo, r.SK, r.Inferred
	return v, nil
}

// stored decodes the version the row was filled from.
func (r *Row) stored() (Version, error) {
	if r.past == nil {
		return r.s.decodeVersion(r.t, r.tuple, r.from, r.keyTx, r.value)
	}
	v := *r.past
	if r.t.rawAttrs || v.raw.IsZero() {
		return v, nil // read through a WithRawAttrs copy of r.t: decoded only if shared
	}
	v.raw, v.Attrs = RawAttrs{}, Attrs{}
	err := r.Walk(func(name string, val *encoding.Value) error {
		v.Attrs[name] = val.Any()
		return nil
	})
	return v, err
}

// newRow returns the row a scan of table t fills.
func (s *Snapshot) newRow(t *Table) *Row {
	a := s.attrNames(t)
	return &Row{s: s, t: t, names: a, name: a.name}
}

// fillCurrent points r at a record of the current index.
func (r *Row) fillCurrent(tuple, value []byte, validFrom int64) error {
	return r.fillRecord(tuple, value, validFrom, 0, nil)
}

// fillRecord points r at a stored record whose key holds validFrom and
// keyTx (0 in the current index). A retired record that shares its
// successor's attributes (Writer.shareAttrs) gets the successor's, as
// stored: those of succ, the successor's stored value in the current index,
// when the caller has it at hand, else read from the store.
func (r *Row) fillRecord(tuple, value []byte, validFrom, keyTx int64, succ []byte) error {
	rv, attrs, err := r.s.decodeHeadSplit(r.t, value, validFrom, keyTx)
	if err != nil {
		return err
	}
	switch {
	case !encoding.SharesAttrs(value):
	case succ != nil:
		if _, attrs, err = r.s.decodeHeadSplit(r.t, succ, validFrom, 0); err != nil {
			return err
		}
	default:
		if attrs, err = r.s.sharedRawAttrs(r.t, tuple, validFrom, rv.SK, rv.TxTo); err != nil {
			return err
		}
	}
	r.setHead(validFrom, &rv)
	r.tuple, r.value, r.attrs, r.past = tuple, value, attrs, nil
	r.from, r.keyTx = validFrom, keyTx
	return nil
}

// fillPast points r at a version read at a past transaction time through a
// WithRawAttrs copy of its table: its raw attributes, or, for a retired
// record that shares its successor's, those decoded, encoded again.
func (r *Row) fillPast(v *Version) error {
	r.ValidFrom, r.ValidTo, r.TxFrom, r.TxTo, r.SK, r.Inferred = v.ValidFrom, v.ValidTo, v.TxFrom, v.TxTo, v.SK, v.Inferred
	r.tuple, r.value, r.past = v.tuple, nil, v
	if !v.raw.IsZero() {
		r.attrs = v.raw.b
		return nil
	}
	names := r.names
	var err error
	r.attrBuf, err = encoding.AppendAttrsPositional(r.attrBuf[:0], v.Attrs, func(name string) (uint32, bool) {
		i := slices.Index(names.names, name)
		return uint32(max(i, 0)), i >= 0
	})
	r.attrs = r.attrBuf
	return err
}

func (r *Row) setHead(validFrom int64, rv *encoding.RecordValue) {
	r.ValidFrom, r.ValidTo, r.TxFrom, r.TxTo, r.SK = validFrom, rv.ValidTo, rv.TxFrom, rv.TxTo, rv.SK
	r.Inferred = rv.Flags&encoding.FlagInferred != 0
}
