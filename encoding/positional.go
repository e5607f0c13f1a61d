package encoding

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/vmihailenco/msgpack/v5"
)

// This file is the positional form of attributes and the record value that
// holds it (store format 2). A table numbers its attribute names (ordinals, in
// the order its writes first used them); a record stores ordinals instead of
// names:
//
//	attrs  = uvarint count | per attribute, by ascending ordinal:
//	         uvarint (ordinal - previous ordinal - 1; the first: ordinal) | value
//	record = msgpack [2, valid_to, tx_from, tx_to, sk, flags] header, as AppendRecord
//	         writes it but for the format number, then attrs
//
// A value is one scalar in exactly the form AppendAttrs gives it (encodeScalar
// and parseScalar), so every attribute type flows into both forms. The gaps
// between ordinals are almost always zero, so an attribute costs one byte plus
// its value, where a named map repeats the name in every record.

// recordPositional is the format number of a record with positional attributes.
const recordPositional = 2

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

// parseAttrsPositional decodes positional attributes from the front of b. name
// gives the name of an ordinal; an ordinal without one is corruption.
func parseAttrsPositional(b []byte, name func(ord uint32) (string, bool)) (Attrs, []byte, error) {
	n, w := binary.Uvarint(b)
	// Each attribute takes at least two bytes, which bounds n by the input's size.
	if w <= 0 || n > MaxAttrs || n > uint64(len(b)/2) {
		return nil, nil, fmt.Errorf("%w: positional attribute count", ErrCorrupt)
	}
	b = b[w:]
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

// AppendRecordPositional appends r with positional attributes (see above).
func AppendRecordPositional(dst []byte, r *RecordValue, ordinal func(name string) (uint32, bool)) ([]byte, error) {
	n := len(dst)
	dst, err := appendRecordHead(dst, recordPositional, r)
	if err != nil {
		return dst[:n], err
	}
	out, err := AppendAttrsPositional(dst, r.Attrs, ordinal)
	if err != nil {
		return dst[:n], err
	}
	return out, nil
}

// DecodeRecordPositional decodes a value written by AppendRecordPositional; name
// gives the name of an attribute ordinal.
func DecodeRecordPositional(b []byte, name func(ord uint32) (string, bool)) (RecordValue, error) {
	r, rest, err := recordHead(b, recordPositional)
	if err != nil {
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
