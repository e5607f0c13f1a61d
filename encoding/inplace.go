package encoding

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// This file reads single values of stored records in place, for row views that
// hand a scan's rows to the caller without decoding them: one attribute of
// positional attributes by its ordinal, one component of a tuple. Neither
// allocates: values alias the input, as WalkAttrs's do.

// FindAttrPositional finds the attribute of ordinal ord in positional
// attributes b (the bytes PositionalAttrs returns) and decodes its value into
// v, aliasing b. It reports false when the record does not hold ord. Ordinals
// ascend within a record, so it reads b only up to ord; like a projected
// decode it checks what it reads, not the bytes after it. Errors wrap
// ErrCorrupt.
func FindAttrPositional(b []byte, ord uint32, v *Value) (bool, error) {
	n, b, err := positionalCount(b)
	if err != nil {
		return false, err
	}
	next := uint64(0)
	for i := range n {
		gap, w := binary.Uvarint(b)
		if w <= 0 || next+gap > 1<<32-1 {
			return false, fmt.Errorf("%w: attribute %d ordinal", ErrCorrupt, i)
		}
		at := uint32(next + gap)
		if at > ord {
			return false, nil
		}
		next = uint64(at) + 1
		var err error
		if b, err = scanValue(b[w:], v); err != nil {
			return false, fmt.Errorf("%w: attribute ordinal %d: %v", ErrCorrupt, at, err)
		}
		if at == ord {
			return true, nil
		}
	}
	*v = Value{}
	return false, nil
}

// DecodeComponentValue decodes the component at the front of tuple b into v
// (KindInt, KindUint, KindString or KindBytes) and returns the bytes after it.
// A string or byte string's content aliases b when it holds no escaped 0x00;
// otherwise it is unescaped into scratch, which is returned (grown) for reuse.
// Errors wrap ErrCorrupt.
func DecodeComponentValue(b []byte, v *Value, scratch []byte) (rest, scratchOut []byte, err error) {
	*v = Value{}
	if len(b) == 0 {
		return nil, scratch, fmt.Errorf("%w: empty key component", ErrCorrupt)
	}
	switch b[0] {
	case tagInt64, tagUint64:
		if len(b) < 9 {
			return nil, scratch, fmt.Errorf("%w: truncated integer component", ErrCorrupt)
		}
		u := binary.BigEndian.Uint64(b[1:9])
		if b[0] == tagInt64 {
			v.Kind, v.Int = KindInt, int64(u^(1<<63))
		} else {
			v.Kind, v.Uint = KindUint, u
		}
		return b[9:], scratch, nil
	case tagString, tagBytes:
		end, err := escapedEnd(b[1:])
		if err != nil {
			return nil, scratch, err
		}
		payload := b[1 : end-1]
		if bytes.IndexByte(payload, escape) >= 0 {
			scratch = append(scratch[:0], payload...)
			scratch = unescapeInPlace(scratch)
			payload = scratch
		}
		v.Kind, v.Bytes = KindString, payload
		if b[0] == tagBytes {
			v.Kind = KindBytes
		}
		return b[1+end:], scratch, nil
	}
	return nil, scratch, fmt.Errorf("%w: unknown key tag 0x%02x", ErrCorrupt, b[0])
}

// unescapeInPlace undoes the escapes of a validated payload in its own bytes.
func unescapeInPlace(b []byte) []byte {
	out := b[:0]
	for i := 0; i < len(b); i++ {
		out = append(out, b[i])
		if b[i] == escape {
			i++ // escaped00 follows
		}
	}
	return out
}
