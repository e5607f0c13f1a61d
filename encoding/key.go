package encoding

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"strings"
)

// Type tags of tuple components. They order components of different types against
// each other; within a table every key has the same schema, so that order only
// matters for keys of different tables, which never share a prefix.
const (
	tagInt64  byte = 0x20
	tagUint64 byte = 0x21
	tagString byte = 0x30
	tagBytes  byte = 0x31
)

const (
	escape     byte = 0x00 // starts an escape sequence inside strings and bytes
	escaped00  byte = 0xFF // escape, escaped00 encodes a literal 0x00
	terminator byte = 0x01 // escape, terminator ends a string or bytes component
)

// AppendKey appends the tuple encoding of key to dst. Components must be string,
// []byte, int64 or uint64; int, int32 and uint32 are widened for convenience.
func AppendKey(dst []byte, key []any) ([]byte, error) {
	for i, c := range key {
		var err error
		dst, err = AppendComponent(dst, c)
		if err != nil {
			return dst, fmt.Errorf("key component %d: %w", i, err)
		}
	}
	return dst, nil
}

// AppendComponent appends the encoding of one tuple component to dst.
func AppendComponent(dst []byte, c any) ([]byte, error) {
	switch v := c.(type) {
	case string:
		dst = append(dst, tagString)
		return appendEscaped(dst, v, strings.IndexByte), nil
	case []byte:
		dst = append(dst, tagBytes)
		return appendEscaped(dst, v, bytes.IndexByte), nil
	case int64:
		dst = append(dst, tagInt64)
		return binary.BigEndian.AppendUint64(dst, uint64(v)^(1<<63)), nil
	case int:
		return AppendComponent(dst, int64(v))
	case int32:
		return AppendComponent(dst, int64(v))
	case uint64:
		dst = append(dst, tagUint64)
		return binary.BigEndian.AppendUint64(dst, v), nil
	case uint32:
		return AppendComponent(dst, uint64(v))
	default:
		return dst, fmt.Errorf("%w: %T in a key", ErrUnsupportedType, c)
	}
}

// AppendComponentPrefix appends the encoding of a string or []byte component
// without its terminator: the bytes that the encoding of every component
// starting with c (c itself, c+"x", ...) of the same type begins with, and no
// other's, so that PrefixSpan-style scans over it select exactly the keys whose
// component has c as a string prefix. Escapes keep that exact: an escaped
// prefix never ends inside an escape sequence. Other types have no partial
// form and encode whole, as AppendComponent does.
func AppendComponentPrefix(dst []byte, c any) ([]byte, error) {
	dst, err := AppendComponent(dst, c)
	switch c.(type) {
	case string, []byte:
		dst = dst[:len(dst)-2] // drop the escape, terminator pair that appendEscaped closes it with
	}
	return dst, err
}

// appendEscaped appends s escaped and closed by the escape, terminator pair
// (see appendEscapedOpen for index).
func appendEscaped[T string | []byte](dst []byte, s T, index func(T, byte) int) []byte {
	dst = appendEscapedOpen(dst, s, index)
	return append(dst, escape, terminator)
}

// appendEscapedOpen appends s escaped, without the terminator. index is
// strings.IndexByte or bytes.IndexByte: a conversion of a string to a []byte
// to search it would copy the string first (a sixth of a batch resolve's key
// encoding went to that copy).
func appendEscapedOpen[T string | []byte](dst []byte, s T, index func(T, byte) int) []byte {
	for {
		i := index(s, escape)
		if i < 0 {
			break
		}
		dst = append(dst, s[:i]...)
		dst = append(dst, escape, escaped00)
		s = s[i+1:]
	}
	return append(dst, s...)
}

// DecodeKey decodes a whole tuple: every byte of b must belong to a component.
func DecodeKey(b []byte) ([]any, error) {
	var key []any
	for len(b) > 0 {
		c, rest, err := DecodeComponent(b)
		if err != nil {
			return nil, err
		}
		key = append(key, c)
		b = rest
	}
	return key, nil
}

// DecodeKeyPrefix decodes the first n components of b and returns them with the
// bytes that follow.
func DecodeKeyPrefix(b []byte, n int) (key []any, rest []byte, err error) {
	key = make([]any, 0, min(max(n, 0), 64)) // a negative n decodes nothing, as in SkipKey
	for i := 0; i < n; i++ {
		var c any
		c, b, err = DecodeComponent(b)
		if err != nil {
			return nil, nil, err
		}
		key = append(key, c)
	}
	return key, b, nil
}

// SkipKey returns the bytes after the first n components of b without decoding
// them; it is how a reader finds the suffix of a record key cheaply.
func SkipKey(b []byte, n int) ([]byte, error) {
	for i := 0; i < n; i++ {
		if len(b) == 0 {
			return nil, fmt.Errorf("%w: key has %d components, want %d", ErrCorrupt, i, n)
		}
		switch b[0] {
		case tagInt64, tagUint64:
			if len(b) < 9 {
				return nil, fmt.Errorf("%w: truncated integer component", ErrCorrupt)
			}
			b = b[9:]
		case tagString, tagBytes:
			end, err := escapedEnd(b[1:])
			if err != nil {
				return nil, err
			}
			b = b[1+end:]
		default:
			return nil, fmt.Errorf("%w: unknown key tag 0x%02x", ErrCorrupt, b[0])
		}
	}
	return b, nil
}

// escapedEnd returns the length of the escaped component at the start of b,
// terminator included, after checking every escape sequence.
func escapedEnd(b []byte) (int, error) {
	for i := 0; ; {
		j := bytes.IndexByte(b[i:], escape)
		if j < 0 || i+j+1 >= len(b) {
			return 0, fmt.Errorf("%w: unterminated string component", ErrCorrupt)
		}
		i += j + 1
		switch b[i] {
		case terminator:
			return i + 1, nil
		case escaped00:
			i++
		default:
			return 0, fmt.Errorf("%w: bad escape 0x00 0x%02x", ErrCorrupt, b[i])
		}
	}
}

// DecodeComponent decodes one component from the front of b.
func DecodeComponent(b []byte) (c any, rest []byte, err error) {
	var v Value
	rest, fresh, err := DecodeComponentValue(b, &v, nil)
	if err != nil {
		return nil, nil, err
	}
	switch v.Kind {
	case KindInt:
		return v.Int, rest, nil
	case KindUint:
		return v.Uint, rest, nil
	case KindString:
		return string(v.Bytes), rest, nil
	}
	if fresh == nil { // v.Bytes aliases b
		return bytes.Clone(v.Bytes), rest, nil
	}
	return v.Bytes, rest, nil
}

// AppendTimeAsc appends t so that byte order equals signed integer order.
func AppendTimeAsc(dst []byte, t int64) []byte {
	return binary.BigEndian.AppendUint64(dst, uint64(t)^(1<<63))
}

// AppendTimeDesc appends t so that byte order is the reverse of integer order
// (newest first).
func AppendTimeDesc(dst []byte, t int64) []byte {
	return binary.BigEndian.AppendUint64(dst, ^(uint64(t) ^ (1 << 63)))
}

// DecodeTimeAsc decodes a time written by AppendTimeAsc from the front of b.
func DecodeTimeAsc(b []byte) (int64, []byte, error) {
	if len(b) < 8 {
		return 0, nil, fmt.Errorf("%w: truncated time", ErrCorrupt)
	}
	return int64(binary.BigEndian.Uint64(b) ^ (1 << 63)), b[8:], nil
}

// DecodeTimeDesc decodes a time written by AppendTimeDesc from the front of b.
func DecodeTimeDesc(b []byte) (int64, []byte, error) {
	if len(b) < 8 {
		return 0, nil, fmt.Errorf("%w: truncated time", ErrCorrupt)
	}
	return int64(^binary.BigEndian.Uint64(b) ^ (1 << 63)), b[8:], nil
}

// AppendUint32 appends v as 4 big-endian bytes.
func AppendUint32(dst []byte, v uint32) []byte { return binary.BigEndian.AppendUint32(dst, v) }

// AppendUint64 appends v as 8 big-endian bytes.
func AppendUint64(dst []byte, v uint64) []byte { return binary.BigEndian.AppendUint64(dst, v) }

// DecodeUint32 decodes 4 big-endian bytes from the front of b.
func DecodeUint32(b []byte) (uint32, []byte, error) {
	if len(b) < 4 {
		return 0, nil, fmt.Errorf("%w: truncated uint32", ErrCorrupt)
	}
	return binary.BigEndian.Uint32(b), b[4:], nil
}

// DecodeUint64 decodes 8 big-endian bytes from the front of b.
func DecodeUint64(b []byte) (uint64, []byte, error) {
	if len(b) < 8 {
		return 0, nil, fmt.Errorf("%w: truncated uint64", ErrCorrupt)
	}
	return binary.BigEndian.Uint64(b), b[8:], nil
}

// PrefixEnd returns the smallest key greater than every key that starts with
// prefix, or nil if there is none (prefix is empty or all 0xFF). It is the exclusive
// upper bound of a prefix scan.
func PrefixEnd(prefix []byte) []byte {
	if end := PrefixEndInPlace(bytes.Clone(prefix)); len(end) > 0 {
		return end
	}
	return nil
}

// PrefixEndInPlace is PrefixEnd turning b itself into the end, without a
// copy (for a loop that reuses one buffer); b of only 0xff bytes, which has no
// end, comes back empty.
func PrefixEndInPlace(b []byte) []byte {
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] != math.MaxUint8 {
			b[i]++
			return b[:i+1]
		}
	}
	return b[:0]
}
