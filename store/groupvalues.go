package store

import (
	"fmt"
	"slices"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/layout"
)

// This file keeps a group index entry's group attributes in its key only.
// Every record in the group index (groups.go) has each GroupBy attribute set
// (a record with a null or absent one is in no group), and the entry's key
// holds those values as the group tuple; the entry's value is the record's
// value without them:
//
//	entry value = record value, less each GroupBy attribute whose stored value
//	              equals the one its group tuple component gives
//	              (encoding.AppendComponentScalar)
//
// A reader puts back every GroupBy attribute the value does not hold, from the
// key, and gets the record's value byte for byte: a group attribute an entry
// lacks can only have been left out, since an indexed record holds them all.
// The comparison makes the rule exact whatever a value's type: an attribute
// the key would not give back identically stays in the value. Shared values
// (a retired record that shares its successor's attributes) hold no
// attributes and are stored as they are.
//
// A group key is typically an id of 10 to 40 bytes, repeated by every version
// of every member of the group; leaving it out shrinks what a group scan
// reads by as much per entry, which decides whether the index of a backfill's
// table stays in the block cache (docs/design/group-entries-without-group-values.md).

// groupAttr is a GroupBy attribute of one group: its ordinal and the stored
// value its group tuple component gives.
type groupAttr struct {
	name string
	ord  uint32
	val  []byte
}

// appendGroupAttrs appends to dst the GroupBy attributes of the group tuple
// group that have an ordinal (ordinal; one without can be in no record), with
// their values appended to buf, which it returns.
func appendGroupAttrs(dst []groupAttr, buf []byte, t *Table, group []byte, ordinal func(name string) (uint32, bool)) ([]groupAttr, []byte, error) {
	n, start := len(dst), len(buf)
	for _, name := range t.GroupBy {
		var err error
		from := len(buf)
		if buf, group, err = encoding.AppendComponentScalar(buf, group); err != nil {
			return dst[:n], buf[:start], fmt.Errorf("%w: table %q group tuple: %v", ErrCorrupt, t.Name, err)
		}
		ord, ok := ordinal(name)
		if !ok {
			buf = buf[:from]
			continue
		}
		dst = append(dst, groupAttr{name: name, ord: ord, val: buf[from:len(buf):len(buf)]})
	}
	// buf may have moved as it grew: point the values at where they are now.
	from := start
	for i := n; i < len(dst); i++ {
		end := from + len(dst[i].val)
		dst[i].val = buf[from:end:end]
		from = end
	}
	return dst, buf, nil
}

// groupEntryValue returns the value of the group index entry of a record
// whose stored value is value and whose group's attributes are gas: value
// without the group attributes, a new slice when it leaves any out.
func groupEntryValue(value []byte, gas []groupAttr) ([]byte, error) {
	if encoding.SharesAttrs(value) {
		return value, nil
	}
	attrs, err := encoding.PositionalAttrs(value)
	if err != nil {
		return nil, err
	}
	out := attrs
	for _, ga := range gas {
		if out, _, err = encoding.AppendAttrsWithout(nil, out, ga.ord, ga.val); err != nil {
			return nil, err
		}
	}
	if len(out) == len(attrs) {
		return value, nil
	}
	head := value[:len(value)-len(attrs)]
	return append(slices.Clip(head), out...), nil
}

// restoreGroupAttrs appends to dst the positional attributes attrs of a group
// index entry with the group attributes gas it leaves out put back: the
// attributes of the record's value.
func restoreGroupAttrs(dst, attrs []byte, gas []groupAttr) ([]byte, error) {
	out := attrs
	for i, ga := range gas {
		var into []byte
		if i == len(gas)-1 {
			into = dst
		}
		edited, added, err := encoding.AppendAttrsWith(into, out, ga.ord, ga.val)
		switch {
		case err != nil:
			return dst, err
		case added && i == len(gas)-1:
			return edited, nil
		case added:
			out = edited
		}
	}
	return append(dst, out...), nil
}

// groupValues puts a group's attributes back into the values of its entries,
// for the reads of one group at a time. Its group attributes are worked out
// from the group tuple the first time an entry needs them.
type groupValues struct {
	t     *Table
	names *attrNames
	group []byte      // the group tuple
	gas   []groupAttr // its attributes, once made
	vals  []byte      // their values
	made  bool
	walks bool // a read through t walks one of them (rawAttrs puts them back)
	// The last entry's attributes (rawAttrs) and value (value), put back
	// together; apart, so that one does not overwrite the other.
	attrsBuf, valueBuf []byte
}

// reset readies v for the entries of group tuple group of table t, read
// with the names of a snapshot.
func (v *groupValues) reset(t *Table, names *attrNames, group []byte) {
	v.t, v.names, v.group, v.made = t, names, group, false
}

// attrs returns the group's attributes.
func (v *groupValues) attrs() ([]groupAttr, error) {
	if !v.made {
		gas, vals, err := appendGroupAttrs(v.gas[:0], v.vals[:0], v.t, v.group, v.names.ordinal)
		if err != nil {
			return nil, err
		}
		p := v.t.proj
		v.gas, v.vals, v.made = gas, vals, true
		v.walks = p == nil || slices.ContainsFunc(gas, func(ga groupAttr) bool { return p.Keeps(ga.ord, ga.name) })
	}
	return v.gas, nil
}

// rawAttrs returns an entry's positional attributes attrs as a read through
// v.t walks them: with the group attributes put back when the read keeps
// any of them (every read but a projection that leaves them out), in a
// buffer the next entry reuses.
func (v *groupValues) rawAttrs(attrs []byte) ([]byte, error) {
	gas, err := v.attrs()
	if err != nil {
		return nil, err
	}
	if !v.walks {
		return attrs, nil
	}
	if v.attrsBuf, err = restoreGroupAttrs(v.attrsBuf[:0], attrs, gas); err != nil {
		return nil, fmt.Errorf("%w: table %q group index entry: %v", ErrCorrupt, v.t.Name, err)
	}
	return v.attrsBuf, nil
}

// value returns the record value of an entry whose stored value is value
// (groupEntryValue's inverse), in a buffer the next entry reuses.
func (v *groupValues) value(value []byte) ([]byte, error) {
	if encoding.SharesAttrs(value) {
		return value, nil
	}
	gas, err := v.attrs()
	if err != nil {
		return nil, err
	}
	attrs, err := encoding.PositionalAttrs(value)
	if err == nil {
		head := value[:len(value)-len(attrs)]
		v.valueBuf, err = restoreGroupAttrs(append(v.valueBuf[:0], head...), attrs, gas)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: table %q group index entry: %v", ErrCorrupt, v.t.Name, err)
	}
	return v.valueBuf, nil
}

// ordinal returns the ordinal of name in a snapshot's names, reading its
// own view when the DB's names lack it.
func (a *attrNames) ordinal(name string) (uint32, bool) {
	i := slices.Index(a.names, name)
	if i < 0 && a.reload() {
		i = slices.Index(a.names, name)
	}
	return uint32(i), i >= 0
}

// groupTupleOf returns the group tuple of a group index key of t (the bytes
// after 0x30 | tid).
func groupTupleOf(t *Table, key []byte) ([]byte, error) {
	b := key[len(layout.AppendTablePrefix(nil, layout.Groups, t.ID)):]
	rest, err := encoding.SkipKey(b, len(t.GroupBy))
	if err != nil {
		return nil, fmt.Errorf("%w: table %q group index key: %v", ErrCorrupt, t.Name, err)
	}
	return b[:len(b)-len(rest)], nil
}
