package encoding

import (
	"encoding/binary"
	"fmt"

	"github.com/vmihailenco/msgpack/v5"
)

// maxDepth bounds the nesting of arrays and maps CheckMsgpack accepts.
const maxDepth = 32

// UnmarshalBounded is msgpack.Unmarshal for bytes read from a store, which may be
// corrupt or hostile: it first checks that every length and count in the value's
// headers fits in the bytes that follow (msgpack's decoder allocates what a
// header claims, up to 4 GiB for a 30-byte value), then decodes. Errors wrap
// ErrCorrupt.
func UnmarshalBounded(b []byte, v any) error {
	if len(b) > MaxValueSize {
		return fmt.Errorf("%w: value of %d bytes exceeds %d", ErrCorrupt, len(b), MaxValueSize)
	}
	if _, err := skipMsgpack(b, 0, 0); err != nil {
		return err
	}
	if err := msgpack.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return nil
}

// skipMsgpack checks the msgpack value at b[i:] and returns the index after it.
func skipMsgpack(b []byte, i, depth int) (int, error) {
	if depth > maxDepth {
		return 0, fmt.Errorf("%w: msgpack nested deeper than %d", ErrCorrupt, maxDepth)
	}
	if i >= len(b) {
		return 0, fmt.Errorf("%w: truncated msgpack value", ErrCorrupt)
	}
	c := b[i]
	i++
	uintN := func(n int) (int, bool) {
		if len(b)-i < n {
			return 0, false
		}
		var v uint64
		switch n {
		case 1:
			v = uint64(b[i])
		case 2:
			v = uint64(binary.BigEndian.Uint16(b[i:]))
		case 4:
			v = uint64(binary.BigEndian.Uint32(b[i:]))
		}
		i += n
		return int(v), v <= uint64(len(b))
	}
	skip := func(n int) (int, error) {
		if n < 0 || n > len(b)-i {
			return 0, fmt.Errorf("%w: msgpack length %d with %d bytes left", ErrCorrupt, n, len(b)-i)
		}
		return i + n, nil
	}
	items := func(n int) (int, error) {
		if n < 0 || n > len(b)-i {
			return 0, fmt.Errorf("%w: msgpack count %d with %d bytes left", ErrCorrupt, n, len(b)-i)
		}
		var err error
		for range n {
			if i, err = skipMsgpack(b, i, depth+1); err != nil {
				return 0, err
			}
		}
		return i, nil
	}
	bad := fmt.Errorf("%w: truncated msgpack header", ErrCorrupt)
	switch {
	case c <= 0x7f || c >= 0xe0 || c == 0xc0 || c == 0xc2 || c == 0xc3:
		return i, nil
	case c >= 0x80 && c <= 0x8f:
		return items(2 * int(c&0x0f))
	case c >= 0x90 && c <= 0x9f:
		return items(int(c & 0x0f))
	case c >= 0xa0 && c <= 0xbf:
		return skip(int(c & 0x1f))
	}
	switch c {
	case 0xc4, 0xd9: // bin8, str8
		n, ok := uintN(1)
		if !ok {
			return 0, bad
		}
		return skip(n)
	case 0xc5, 0xda:
		n, ok := uintN(2)
		if !ok {
			return 0, bad
		}
		return skip(n)
	case 0xc6, 0xdb:
		n, ok := uintN(4)
		if !ok {
			return 0, fmt.Errorf("%w: msgpack length beyond the value", ErrCorrupt)
		}
		return skip(n)
	case 0xc7, 0xc8, 0xc9: // ext8/16/32: length, type, data
		n, ok := uintN(1 << (c - 0xc7))
		if !ok {
			return 0, bad
		}
		return skip(n + 1)
	case 0xca, 0xce, 0xd2:
		return skip(4)
	case 0xcb, 0xcf, 0xd3:
		return skip(8)
	case 0xcc, 0xd0:
		return skip(1)
	case 0xcd, 0xd1:
		return skip(2)
	case 0xd4, 0xd5, 0xd6, 0xd7, 0xd8: // fixext 1, 2, 4, 8, 16
		return skip(1 + 1<<(c-0xd4))
	case 0xdc, 0xde:
		n, ok := uintN(2)
		if !ok {
			return 0, bad
		}
		if c == 0xde {
			n *= 2
		}
		return items(n)
	case 0xdd, 0xdf:
		n, ok := uintN(4)
		if !ok {
			return 0, fmt.Errorf("%w: msgpack count beyond the value", ErrCorrupt)
		}
		if c == 0xdf {
			n *= 2
		}
		return items(n)
	}
	return 0, fmt.Errorf("%w: msgpack code 0x%02x", ErrCorrupt, c)
}
