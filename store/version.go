package store

import (
	"bytes"
	"errors"
	"fmt"
	"math"

	"github.com/bitempo/bitempo/encoding"
)

// Attrs is a record of named attribute values; see encoding.Attrs for the value
// types.
type Attrs = encoding.Attrs

// Infinity is the open end of an interval (+∞); NegInfinity its open start (-∞).
const (
	Infinity    int64 = math.MaxInt64
	NegInfinity int64 = math.MinInt64
)

// Version is one record of one entity: a version (key, attributes, valid period,
// surrogate key) as asserted by one transaction, with its transaction period.
type Version struct {
	Key       Key
	ValidFrom int64 // inclusive
	ValidTo   int64 // exclusive; Infinity when open-ended
	TxFrom    int64 // the transaction that asserted the record
	TxTo      int64 // the transaction that retired it; Infinity while current
	SK        uint64
	Attrs     Attrs
	// Inferred marks a placeholder created for a key that facts referenced before
	// the dimension knew it.
	Inferred bool

	tuple []byte   // encoded Key
	raw   RawAttrs // encoded attributes, from reads of a WithRawAttrs table
}

// RawAttrs are a version's attributes still in their stored, positional form,
// with the table's attribute names to read them by. The zero value holds none.
type RawAttrs struct {
	b    []byte
	name func(ord uint32) (string, bool)
	proj *encoding.Projection // walk only these attributes (Snapshot.Project)
}

// NewRawAttrs wraps attributes in positional form
// (encoding.AppendAttrsPositional) with the name of each ordinal, for code that
// holds attributes it read elsewhere.
func NewRawAttrs(b []byte, name func(ord uint32) (string, bool)) RawAttrs {
	return RawAttrs{b: b, name: name}
}

// IsZero reports whether r holds no attributes (the version was not read
// through a WithRawAttrs table, or its attributes were decoded into Attrs).
func (r RawAttrs) IsZero() bool { return r.name == nil }

// Walk calls fn for each attribute in stored order, with its name and a value
// that aliases r's bytes (copy Bytes to keep them); see
// encoding.WalkAttrsPositional. A malformed record is an error wrapping
// ErrCorrupt, found as the walk reaches it.
func (r RawAttrs) Walk(fn func(name string, v *encoding.Value) error) error {
	if r.IsZero() {
		return nil
	}
	// A nil r.proj walks every attribute (WalkAttrsPositional).
	if err := encoding.WalkAttrsProjected(r.b, r.name, r.proj, fn); err != nil {
		if errors.Is(err, encoding.ErrCorrupt) {
			return fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
		return err
	}
	return nil
}

// Clone returns a copy of r that does not alias the bytes it was read from.
func (r RawAttrs) Clone() RawAttrs { return RawAttrs{b: bytes.Clone(r.b), name: r.name, proj: r.proj} }

// RawAttrs returns the version's attributes in their stored form when it was
// read through a table returned by WithRawAttrs, whose reads leave Attrs nil;
// otherwise the zero RawAttrs. A retired record whose attributes are stored
// with its successor may come back decoded, in Attrs, even through such a table.
func (v *Version) RawAttrs() RawAttrs { return v.raw }

// WithRawAttrs returns a copy of t for reads that decode attributes themselves:
// every read given the copy (Snapshot.VersionAt, ScanAt, ScanHistory,
// LookupSorted, ...) returns versions whose Attrs are nil and whose RawAttrs
// hold the encoded record, unchecked until the caller walks it, which is how
// package typed decodes straight into Go structs without building a map. Use
// the copy for reads only.
func (t *Table) WithRawAttrs() *Table {
	c := *t
	c.rawAttrs = true
	return &c
}

// Tuple returns the encoded natural key of the version.
func (v *Version) Tuple() []byte { return v.tuple }

// AliveAt reports whether the record was part of the table's state at transaction
// time tx.
func (v *Version) AliveAt(tx int64) bool { return v.TxFrom <= tx && tx < v.TxTo }

// Covers reports whether valid time t lies in the version's valid period.
func (v *Version) Covers(t int64) bool { return v.ValidFrom <= t && t < v.ValidTo }

// SameContent reports whether two versions are the same version content (valid
// period, sk, attributes, flags), ignoring transaction times: a commit rewrites a
// record only when its content changes.
func (v *Version) SameContent(o *Version) bool {
	if v.ValidFrom != o.ValidFrom || v.ValidTo != o.ValidTo || v.SK != o.SK || v.Inferred != o.Inferred {
		return false
	}
	return v.Attrs.Equal(o.Attrs)
}

func (v *Version) String() string {
	return fmt.Sprintf("%s valid [%s, %s) tx [%s, %s) sk %d %v", v.Key, fmtTick(v.ValidFrom), fmtTick(v.ValidTo),
		fmtTick(v.TxFrom), fmtTick(v.TxTo), v.SK, v.Attrs)
}

func fmtTick(t int64) string {
	switch t {
	case Infinity:
		return "+inf"
	case NegInfinity:
		return "-inf"
	}
	return fmt.Sprint(t)
}

func (v *Version) recordValue() *encoding.RecordValue {
	var flags uint8
	if v.Inferred {
		flags |= encoding.FlagInferred
	}
	return &encoding.RecordValue{ValidTo: v.ValidTo, TxFrom: v.TxFrom, TxTo: v.TxTo, SK: v.SK, Flags: flags, Attrs: v.Attrs}
}

// NewVersion builds a version of key with its encoded tuple, for writers.
func (t *Table) NewVersion(key Key, tuple []byte, from, to int64, sk uint64, attrs Attrs) Version {
	return Version{Key: key, tuple: tuple, ValidFrom: from, ValidTo: to, TxFrom: Infinity, TxTo: Infinity, SK: sk, Attrs: attrs}
}

// decodeVersion builds a version of table t from a stored record; keyTxFrom is
// the tx_from of its key (history) or 0 (current index).
func (s *Snapshot) decodeVersion(t *Table, tuple []byte, validFrom, keyTxFrom int64, value []byte) (Version, error) {
	if t.rawAttrs && !encoding.SharesAttrs(value) {
		return s.decodeVersionRaw(t, tuple, validFrom, keyTxFrom, value)
	}
	rv, err := s.decodeRecord(t, value, validFrom, keyTxFrom)
	if err != nil {
		return Version{}, err
	}
	if encoding.SharesAttrs(value) {
		if rv.Attrs, err = s.sharedAttrs(t, tuple, validFrom, rv.SK, rv.TxTo); err != nil {
			return Version{}, err
		}
	}
	key, err := t.DecodeKey(tuple)
	if err != nil {
		return Version{}, err
	}
	return recordVersion(key, tuple, validFrom, &rv), nil
}

// recordVersion builds the version of a decoded record of key (encoded as
// tuple, which it copies) that starts at validFrom.
func recordVersion(key Key, tuple []byte, validFrom int64, rv *encoding.RecordValue) Version {
	return Version{
		Key: key, tuple: bytes.Clone(tuple), ValidFrom: validFrom, ValidTo: rv.ValidTo,
		TxFrom: rv.TxFrom, TxTo: rv.TxTo, SK: rv.SK, Attrs: rv.Attrs,
		Inferred: rv.Flags&encoding.FlagInferred != 0,
	}
}

// decodeVersionRaw builds a version from a stored record, its attributes left
// encoded (a copy, since value belongs to an iterator).
func (s *Snapshot) decodeVersionRaw(t *Table, tuple []byte, validFrom, keyTxFrom int64, value []byte) (Version, error) {
	rv, attrs, err := s.decodeHeadSplit(t, value, validFrom, keyTxFrom)
	if err != nil {
		return Version{}, err
	}
	key, err := t.DecodeKey(tuple)
	if err != nil {
		return Version{}, err
	}
	v := recordVersion(key, tuple, validFrom, &rv)
	v.raw = RawAttrs{b: bytes.Clone(attrs), name: s.attrNames(t).name, proj: t.proj}
	return v, nil
}
