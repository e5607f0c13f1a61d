package encoding

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/vmihailenco/msgpack/v5"
)

// This file is the positional form of attributes and the record value that
// holds it (store formats 2 and 3). A table numbers its attribute names (ordinals, in
// the order its writes first used them); a record stores ordinals instead of
// names:
//
//	attrs  = uvarint count | per attribute, by ascending ordinal:
//	         uvarint (ordinal - previous ordinal - 1; the first: ordinal) | value
//	record = head byte | [zigzag varint (valid_to - base)]
//	         | [uvarint commit number (current) or zigzag varint tx_from]
//	         | [uvarint (tx_to - tx_from)] | uvarint sk | attrs
//	head   = the record's flags (FlagInferred, ...) in its low four bits, then
//	         headOpenValid (0x80): valid_to is +∞ and absent,
//	         headOpenTx (0x40): tx_to is +∞ and absent,
//	         headSharedAttrs (0x20): the attributes are absent, being those of
//	         another record that the store knows how to find (AppendRecordShared),
//	         headKeyedTx (0x10): tx_from is absent, being in the record's key
//	         (AppendRecordRetired; decoders take it as keyTxFrom)
//
// A current record (headOpenTx) holds the number of the commit that asserted
// it (RecordValue.TxCommit, at least 1) where a retired record not keyed by
// its tx_from would hold that time (store format 3): commit numbers take 1-3
// bytes where times take 8, and the store maps a number to its time.
//
// Integers are varints: values are never compared as bytes (keys keep fixed
// widths). valid_to is a distance from a base the caller passes and the
// decoder is given again: a stored record's valid_from, which its key holds
// (the *At functions); the functions without At take base 0, which stores
// valid_to itself. The difference is taken modulo 2^64, so every pair of times
// has one. docs/design/positional-records.md gives the reasons for the layout.
//
// A value is one scalar in exactly the form AppendAttrs gives it (encodeScalar
// and parseScalar), so every attribute type flows into both forms.

// Bits of a positional record's head byte above its flags.
const (
	headOpenValid   byte = 0x80
	headOpenTx      byte = 0x40
	headSharedAttrs byte = 0x20
	headKeyedTx     byte = 0x10
	headFlags       byte = 0x0f
)

// AppendAttrsPositional appends the positional form of a to dst. ordinal gives
// the ordinal of a name; a name without one is an error (the caller assigns
// ordinals before encoding).
func AppendAttrsPositional(dst []byte, a Attrs, ordinal func(name string) (uint32, bool)) ([]byte, error) {
	if len(a) > MaxAttrs {
		return dst, fmt.Errorf("%w: %d attributes, at most %d", ErrUnsupportedType, len(a), MaxAttrs)
	}
	type slot struct {
		ord  uint32
		name string
	}
	slots := make([]slot, 0, len(a))
	for name := range a {
		ord, ok := ordinal(name)
		if !ok {
			return dst, fmt.Errorf("bitempo: attribute %q has no ordinal", name)
		}
		slots = append(slots, slot{ord, name})
	}
	slices.SortFunc(slots, func(x, y slot) int { return cmp.Compare(x.ord, y.ord) })
	w := bytes.NewBuffer(binary.AppendUvarint(dst, uint64(len(slots))))
	enc := msgpack.GetEncoder()
	defer msgpack.PutEncoder(enc)
	enc.Reset(w)
	next := uint32(0)
	for i, s := range slots {
		if i > 0 && s.ord == slots[i-1].ord {
			return dst, fmt.Errorf("bitempo: attributes %q and %q share ordinal %d", slots[i-1].name, s.name, s.ord)
		}
		w.Write(binary.AppendUvarint(nil, uint64(s.ord-next)))
		next = s.ord + 1
		v, err := Canonical(a[s.name])
		if err != nil {
			return dst, fmt.Errorf("attribute %q: %w", s.name, err)
		}
		if err := encodeScalar(enc, v); err != nil {
			return dst, err
		}
	}
	return w.Bytes(), nil
}

// positionalCount reads the attribute count at the front of positional
// attributes b, bounded by MaxAttrs and by b's length (each attribute takes
// at least two bytes), and returns it with the bytes after it.
func positionalCount(b []byte) (uint64, []byte, error) {
	n, w := binary.Uvarint(b)
	if w <= 0 || n > MaxAttrs || n > uint64(len(b)/2) {
		return 0, nil, fmt.Errorf("%w: positional attribute count", ErrCorrupt)
	}
	return n, b[w:], nil
}

// parseAttrsPositional decodes positional attributes from the front of b. name
// gives the name of an ordinal; an ordinal without one is corruption.
func parseAttrsPositional(b []byte, name func(ord uint32) (string, bool)) (Attrs, []byte, error) {
	n, b, err := positionalCount(b)
	if err != nil {
		return nil, nil, err
	}
	a := make(Attrs, n)
	next := uint64(0)
	for i := range n {
		gap, w := binary.Uvarint(b)
		if w <= 0 || next+gap > 1<<32-1 {
			return nil, nil, fmt.Errorf("%w: attribute %d ordinal", ErrCorrupt, i)
		}
		ord := uint32(next + gap)
		next = uint64(ord) + 1
		nm, ok := name(ord)
		if !ok {
			return nil, nil, fmt.Errorf("%w: attribute ordinal %d has no name", ErrCorrupt, ord)
		}
		var v any
		var err error
		if v, b, err = parseScalar(b[w:]); err != nil {
			return nil, nil, fmt.Errorf("%w: attribute %q: %v", ErrCorrupt, nm, err)
		}
		if _, dup := a[nm]; dup {
			return nil, nil, fmt.Errorf("%w: attribute %q appears twice", ErrCorrupt, nm)
		}
		a[nm] = v
	}
	return a, b, nil
}

// AppendRecordPositional appends r with positional attributes (see above),
// valid_to from base 0.
func AppendRecordPositional(dst []byte, r *RecordValue, ordinal func(name string) (uint32, bool)) ([]byte, error) {
	return AppendRecordPositionalAt(dst, r, 0, ordinal)
}

// AppendRecordPositionalAt is AppendRecordPositional storing valid_to as its
// distance from validFrom, which decoders must be given again.
func AppendRecordPositionalAt(dst []byte, r *RecordValue, validFrom int64, ordinal func(name string) (uint32, bool)) ([]byte, error) {
	return appendRecordWithHead(dst, r, 0, validFrom, ordinal)
}

// appendRecordWithHead appends r's head (with the extra head bits) and its
// attributes by ordinal, leaving dst as it was on error.
func appendRecordWithHead(dst []byte, r *RecordValue, extra byte, validFrom int64, ordinal func(name string) (uint32, bool)) ([]byte, error) {
	n := len(dst)
	dst, err := appendPositionalHead(dst, r, extra, validFrom)
	if err != nil {
		return dst[:n], err
	}
	out, err := AppendAttrsPositional(dst, r.Attrs, ordinal)
	if err != nil {
		return dst[:n], err
	}
	return out, nil
}

// AppendRecordRetired is AppendRecordPositional for a retired record (tx_to
// set) whose key holds its tx_from: the value leaves tx_from out.
func AppendRecordRetired(dst []byte, r *RecordValue, ordinal func(name string) (uint32, bool)) ([]byte, error) {
	return AppendRecordRetiredAt(dst, r, 0, ordinal)
}

// AppendRecordRetiredAt is AppendRecordRetired storing valid_to as its
// distance from validFrom.
func AppendRecordRetiredAt(dst []byte, r *RecordValue, validFrom int64, ordinal func(name string) (uint32, bool)) ([]byte, error) {
	if r.TxTo == math.MaxInt64 {
		return dst, fmt.Errorf("bitempo: a current record (tx_to +inf) stored as retired")
	}
	return appendRecordWithHead(dst, r, headKeyedTx, validFrom, ordinal)
}

// AppendRecordShared appends retired record r (tx_to set, tx_from in its key)
// without its attributes, marked as sharing them with another record (r.Attrs
// is ignored). Decoders return such a record with nil attributes and
// SharesAttrs reports it; the store decides which record holds them.
func AppendRecordShared(dst []byte, r *RecordValue) ([]byte, error) {
	return AppendRecordSharedAt(dst, r, 0)
}

// AppendRecordSharedAt is AppendRecordShared storing valid_to as its distance
// from validFrom.
func AppendRecordSharedAt(dst []byte, r *RecordValue, validFrom int64) ([]byte, error) {
	if r.TxTo == math.MaxInt64 {
		return dst, fmt.Errorf("bitempo: a current record (tx_to +inf) stored as sharing attributes")
	}
	n := len(dst)
	dst, err := appendPositionalHead(dst, r, headSharedAttrs|headKeyedTx, validFrom)
	if err != nil {
		return dst[:n], err
	}
	return dst, nil
}

// KeyedTxFrom reports whether a positional record value leaves its tx_from to
// its key (AppendRecordRetired, AppendRecordShared).
func KeyedTxFrom(b []byte) bool { return len(b) > 0 && b[0]&headKeyedTx != 0 }

// SharesAttrs reports whether a value written by AppendRecordPositional or
// AppendRecordShared is of the latter kind.
func SharesAttrs(b []byte) bool { return len(b) > 0 && b[0]&headSharedAttrs != 0 }

// PositionalAttrs returns the attribute bytes of a value written by
// AppendRecordPositional or AppendRecordRetired, for comparing two records'
// attributes exactly.
func PositionalAttrs(b []byte) ([]byte, error) {
	_, rest, err := positionalHead(b, 0, 0)
	return rest, err
}

// appendPositionalHead appends the fields of r before its attributes, with
// extra bits in the head byte and valid_to from base.
func appendPositionalHead(dst []byte, r *RecordValue, extra byte, base int64) ([]byte, error) {
	if r.Flags&^headFlags != 0 {
		return dst, fmt.Errorf("bitempo: record flags %#x do not fit a positional record", r.Flags)
	}
	if r.TxTo != math.MaxInt64 && r.TxTo <= r.TxFrom {
		return dst, fmt.Errorf("bitempo: record tx_to %d is not after tx_from %d", r.TxTo, r.TxFrom)
	}
	if r.TxTo == math.MaxInt64 && r.TxCommit == 0 {
		return dst, fmt.Errorf("bitempo: current record without a commit number")
	}
	head := r.Flags | extra
	if r.ValidTo == math.MaxInt64 {
		head |= headOpenValid
	}
	if r.TxTo == math.MaxInt64 {
		head |= headOpenTx
	}
	dst = append(dst, head)
	if head&headOpenValid == 0 {
		dst = binary.AppendVarint(dst, int64(uint64(r.ValidTo)-uint64(base)))
	}
	switch {
	case head&headOpenTx != 0:
		dst = binary.AppendUvarint(dst, r.TxCommit)
	case head&headKeyedTx == 0:
		dst = binary.AppendVarint(dst, r.TxFrom)
	}
	if head&headOpenTx == 0 {
		dst = binary.AppendUvarint(dst, uint64(r.TxTo-r.TxFrom))
	}
	return binary.AppendUvarint(dst, r.SK), nil
}

// DecodeRecordHeadPositional decodes a value written by AppendRecordPositional,
// AppendRecordRetired or AppendRecordShared except its attributes, which it
// leaves nil and does not check. keyTxFrom is the tx_from its key holds, used
// when the value leaves it out.
func DecodeRecordHeadPositional(b []byte, keyTxFrom int64) (RecordValue, error) {
	return DecodeRecordHeadAt(b, 0, keyTxFrom)
}

// DecodeRecordHeadAt is DecodeRecordHeadPositional for a value whose valid_to
// is a distance from validFrom (the *At encoders).
func DecodeRecordHeadAt(b []byte, validFrom, keyTxFrom int64) (RecordValue, error) {
	r, _, err := positionalHead(b, validFrom, keyTxFrom)
	return r, err
}

// DecodeRecordHeadSplitAt is DecodeRecordHeadAt also returning the bytes after
// the head: the attributes, unchecked, that PositionalAttrs returns (none for a
// record that shares its attributes). A reader that needs both decodes the
// head once.
func DecodeRecordHeadSplitAt(b []byte, validFrom, keyTxFrom int64) (RecordValue, []byte, error) {
	return positionalHead(b, validFrom, keyTxFrom)
}

// positionalHead decodes the fields of a positional record before its
// attributes, valid_to from base, and returns the bytes after them.
func positionalHead(b []byte, base, keyTxFrom int64) (RecordValue, []byte, error) {
	var r RecordValue
	bad := func(field string) (RecordValue, []byte, error) {
		return RecordValue{}, nil, fmt.Errorf("%w: positional record %s", ErrCorrupt, field)
	}
	if len(b) > MaxValueSize {
		return bad(fmt.Sprintf("of %d bytes exceeds %d", len(b), MaxValueSize))
	}
	if len(b) == 0 {
		return bad("is empty")
	}
	head := b[0]
	b = b[1:]
	if head&(headSharedAttrs|headKeyedTx) != 0 && head&headOpenTx != 0 {
		return bad("is current but shares its attributes or leaves tx_from to its key")
	}
	if head&headSharedAttrs != 0 && head&headKeyedTx == 0 {
		return bad("shares its attributes but holds its tx_from") // AppendRecordShared never writes it
	}
	r.Flags, r.ValidTo, r.TxTo = head&headFlags, math.MaxInt64, math.MaxInt64
	var n int
	if head&headOpenValid == 0 {
		var d int64
		if d, n = binary.Varint(b); n <= 0 {
			return bad("valid_to")
		}
		if r.ValidTo = int64(uint64(base) + uint64(d)); r.ValidTo == math.MaxInt64 {
			return bad("valid_to")
		}
		b = b[n:]
	}
	switch {
	case head&headOpenTx != 0:
		if r.TxCommit, n = binary.Uvarint(b); n <= 0 || r.TxCommit == 0 {
			return bad("commit number")
		}
		b = b[n:]
	case head&headKeyedTx == 0:
		if r.TxFrom, n = binary.Varint(b); n <= 0 {
			return bad("tx_from")
		}
		b = b[n:]
	default:
		r.TxFrom = keyTxFrom
	}
	if head&headOpenTx == 0 {
		d, n := binary.Uvarint(b)
		if n <= 0 || d == 0 || d >= uint64(math.MaxInt64-r.TxFrom) {
			return bad("tx_to")
		}
		r.TxTo, b = r.TxFrom+int64(d), b[n:]
	}
	if r.SK, n = binary.Uvarint(b); n <= 0 {
		return bad("sk")
	}
	return r, b[n:], nil
}

// DecodeRecordPositional decodes a value written by AppendRecordPositional,
// AppendRecordRetired or AppendRecordShared; keyTxFrom is the tx_from its key
// holds (used when the value leaves it out) and name gives the name of an
// attribute ordinal.
func DecodeRecordPositional(b []byte, keyTxFrom int64, name func(ord uint32) (string, bool)) (RecordValue, error) {
	return DecodeRecordAt(b, 0, keyTxFrom, name)
}

// recordHead decodes the head of a stored record and returns what follows it;
// shared reports a record that shares its attributes (and so must end there).
func recordHead(b []byte, validFrom, keyTxFrom int64) (r RecordValue, rest []byte, shared bool, err error) {
	r, rest, err = positionalHead(b, validFrom, keyTxFrom)
	if err != nil || !SharesAttrs(b) {
		return r, rest, false, err
	}
	if len(rest) != 0 {
		return r, nil, true, fmt.Errorf("%w: %d bytes after a record that shares its attributes", ErrCorrupt, len(rest))
	}
	return r, nil, true, nil
}

// DecodeRecordAt is DecodeRecordPositional for a value whose valid_to is a
// distance from validFrom (the *At encoders).
func DecodeRecordAt(b []byte, validFrom, keyTxFrom int64, name func(ord uint32) (string, bool)) (RecordValue, error) {
	r, rest, shared, err := recordHead(b, validFrom, keyTxFrom)
	if err != nil || shared {
		return r, err
	}
	if r.Attrs, rest, err = parseAttrsPositional(rest, name); err != nil {
		return r, err
	}
	if len(rest) != 0 {
		return r, fmt.Errorf("%w: %d trailing bytes after record", ErrCorrupt, len(rest))
	}
	return r, nil
}

// WalkAttrsPositional decodes positional attributes (the bytes PositionalAttrs
// returns) and calls fn for each attribute in ordinal order, with its name and
// its value aliasing b. It allocates nothing itself, which is what decoding a
// record straight into a Go struct needs. name gives the name of an ordinal; an
// ordinal without one is corruption. The walk may call fn before it finds an
// error later in the record; an error from fn stops it and is returned as is.
func WalkAttrsPositional(b []byte, name func(ord uint32) (string, bool), fn func(name string, v *Value) error) error {
	return WalkAttrsProjected(b, name, nil, fn)
}
