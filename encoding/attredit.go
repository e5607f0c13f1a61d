package encoding

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
)

// This file edits positional attributes (positional.go) one attribute at a
// time, in their stored bytes: it removes an attribute whose value is given,
// and adds one the attributes lack. The store's group index leaves out of
// each entry's value the group attributes its key already holds and puts them
// back when the entry is read (store/groupvalues.go); the values it puts back
// come from key components (AppendComponentScalar), so that an entry read back
// is the record's value byte for byte.

// positionalAttr is one attribute of positional attributes: its ordinal and
// the bytes of its value.
type positionalAttr struct {
	ord uint32
	val []byte
}

// eachPositional calls fn with every attribute of positional attributes b in
// stored order, checking the whole input (count, ordinals, values, no trailing
// bytes). It returns the count. Errors wrap ErrCorrupt.
func eachPositional(b []byte, fn func(a positionalAttr)) (int, error) {
	n, b, err := positionalCount(b)
	if err != nil {
		return 0, err
	}
	var skip Value
	next := uint64(0)
	for i := range n {
		gap, w := binary.Uvarint(b)
		if w <= 0 || next+gap > 1<<32-1 {
			return 0, fmt.Errorf("%w: attribute %d ordinal", ErrCorrupt, i)
		}
		ord := uint32(next + gap)
		next = uint64(ord) + 1
		rest, err := scanValue(b[w:], &skip)
		if err != nil {
			return 0, fmt.Errorf("%w: attribute ordinal %d: %v", ErrCorrupt, ord, err)
		}
		fn(positionalAttr{ord: ord, val: b[w : len(b)-len(rest)]})
		b = rest
	}
	if len(b) != 0 {
		return 0, fmt.Errorf("%w: %d trailing bytes after attributes", ErrCorrupt, len(b))
	}
	return int(n), nil
}

// AppendAttrsWithout appends positional attributes b without the attribute of
// ordinal ord when b holds it with stored value val, and reports whether it
// did; otherwise it appends b as it is. dst is returned unchanged on error.
// Errors wrap ErrCorrupt.
func AppendAttrsWithout(dst, b []byte, ord uint32, val []byte) (out []byte, removed bool, err error) {
	return editPositional(dst, b, ord, val, false)
}

// AppendAttrsWith appends positional attributes b with an attribute of
// ordinal ord whose stored value is val (one scalar in the form
// AppendAttrsPositional writes, such as AppendComponentScalar's) when b does
// not hold ord, and reports whether it added it; otherwise it appends b as it
// is. dst is returned unchanged on error. Errors wrap ErrCorrupt.
func AppendAttrsWith(dst, b []byte, ord uint32, val []byte) (out []byte, added bool, err error) {
	if len(val) == 0 {
		return dst, false, fmt.Errorf("%w: attribute ordinal %d: empty value", ErrCorrupt, ord)
	}
	return editPositional(dst, b, ord, val, true)
}

// editPositional appends b with the attribute of ordinal ord added with value
// val (add) or removed when its value is val. The first pass checks b and
// finds ord, so that the second, which writes, cannot fail half way.
func editPositional(dst, b []byte, ord uint32, val []byte, add bool) ([]byte, bool, error) {
	held, same := false, false
	n, err := eachPositional(b, func(a positionalAttr) {
		if a.ord == ord {
			held, same = true, bytes.Equal(a.val, val)
		}
	})
	switch {
	case err != nil:
		return dst, false, err
	case add && held, !add && !same:
		return append(dst, b...), false, nil
	case add && n >= MaxAttrs:
		return dst, false, fmt.Errorf("%w: %d attributes, at most %d", ErrCorrupt, n+1, MaxAttrs)
	}
	count := n - 1
	if add {
		count = n + 1
	}
	dst = binary.AppendUvarint(dst, uint64(count))
	next := uint32(0)
	put := func(a positionalAttr) {
		dst = binary.AppendUvarint(dst, uint64(a.ord-next))
		dst = append(dst, a.val...)
		next = a.ord + 1
	}
	added := !add
	_, _ = eachPositional(b, func(a positionalAttr) {
		if !added && a.ord > ord {
			put(positionalAttr{ord: ord, val: val})
			added = true
		}
		if a.ord != ord {
			put(a)
		}
	})
	if !added {
		put(positionalAttr{ord: ord, val: val})
	}
	return dst, true, nil
}

// AppendComponentScalar appends the stored value (the scalar of
// AppendAttrsPositional) of the tuple component at the front of c (string,
// bytes, int64 or uint64, as AppendComponent writes them) and returns the
// bytes of c after the component: the attribute value whose key component
// is c, byte for byte, for the canonical values the store writes. It
// allocates nothing but dst's growth. Errors wrap ErrCorrupt.
func AppendComponentScalar(dst, c []byte) (out, rest []byte, err error) {
	var v Value
	if rest, _, err = DecodeComponentValue(c, &v, nil); err != nil {
		return dst, nil, err
	}
	switch v.Kind {
	case KindInt:
		return appendScalarInt(dst, v.Int), rest, nil
	case KindUint:
		return appendScalarUint(dst, v.Uint), rest, nil
	case KindString, KindBytes:
		return appendScalarBytes(dst, v.Kind == KindString, v.Bytes), rest, nil
	}
	return dst, nil, fmt.Errorf("%w: key component of kind %d has no attribute value", ErrCorrupt, v.Kind)
}

// appendScalarUint appends n as encodeScalar writes a uint64 (msgpack's
// EncodeUint: the smallest of fixint, uint8, uint16, uint32, uint64).
func appendScalarUint(dst []byte, n uint64) []byte {
	switch {
	case n <= math.MaxInt8:
		return append(dst, byte(n))
	case n <= math.MaxUint8:
		return append(dst, 0xcc, byte(n))
	case n <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(dst, 0xcd), uint16(n))
	case n <= math.MaxUint32:
		return binary.BigEndian.AppendUint32(append(dst, 0xce), uint32(n))
	}
	return binary.BigEndian.AppendUint64(append(dst, 0xcf), n)
}

// appendScalarInt appends n as encodeScalar writes an int64 (msgpack's
// EncodeInt: a non-negative n as EncodeUint, a negative one in the smallest
// of negative fixint, int8, int16, int32, int64).
func appendScalarInt(dst []byte, n int64) []byte {
	switch {
	case n >= 0:
		return appendScalarUint(dst, uint64(n))
	case n >= -32:
		return append(dst, byte(n))
	case n >= math.MinInt8:
		return append(dst, 0xd0, byte(n))
	case n >= math.MinInt16:
		return binary.BigEndian.AppendUint16(append(dst, 0xd1), uint16(n))
	case n >= math.MinInt32:
		return binary.BigEndian.AppendUint32(append(dst, 0xd2), uint32(n))
	}
	return binary.BigEndian.AppendUint64(append(dst, 0xd3), uint64(n))
}

// appendScalarBytes appends a string (str) or byte string as encodeScalar
// writes them (msgpack's fixstr, str8, str16, str32; bin8, bin16, bin32).
func appendScalarBytes(dst []byte, str bool, b []byte) []byte {
	code8, code16, code32 := byte(0xc4), byte(0xc5), byte(0xc6)
	if str {
		code8, code16, code32 = 0xd9, 0xda, 0xdb
	}
	switch n := len(b); {
	case str && n < 32:
		dst = append(dst, 0xa0|byte(n))
	case n <= math.MaxUint8:
		dst = append(dst, code8, byte(n))
	case n <= math.MaxUint16:
		dst = binary.BigEndian.AppendUint16(append(dst, code16), uint16(n))
	default:
		dst = binary.BigEndian.AppendUint32(append(dst, code32), uint32(n))
	}
	return append(dst, b...)
}
