package encoding

import (
	"encoding/binary"
	"fmt"
	"math"
)

// DecodeRecordHead decodes a value written by AppendRecord except its attributes,
// which it leaves nil and does not check. Merges and scans that step over many
// records and need only their periods, surrogate key and flags use it: it reads a
// few bytes in place, where DecodeRecord builds the attribute map. It accepts
// exactly the header encodings DecodeRecord accepts and decodes them to the same
// values.
func DecodeRecordHead(b []byte) (RecordValue, error) {
	r, _, err := recordHead(b)
	return r, err
}

// recordHead decodes the header of a record and returns the bytes after it (the
// attributes).
func recordHead(b []byte) (RecordValue, []byte, error) {
	var r RecordValue
	if len(b) > MaxValueSize {
		return r, nil, fmt.Errorf("%w: record of %d bytes exceeds %d", ErrCorrupt, len(b), MaxValueSize)
	}
	n, b, err := headArrayLen(b)
	if err != nil || n != 7 {
		return r, nil, fmt.Errorf("%w: record header (array of %d, %v)", ErrCorrupt, n, err)
	}
	var fields [6]uint64
	for i := range fields {
		var signed bool
		if (i == 1 || i == 3) && len(b) > 0 && b[0] == msgpackNil {
			fields[i], b = math.MaxInt64, b[1:] // an open end
			continue
		}
		fields[i], signed, b, err = headNumber(b)
		switch {
		case err != nil:
		case i >= 1 && i <= 3 && !signed && fields[i] > math.MaxInt64:
			err = fmt.Errorf("integer %d overflows int64", fields[i])
		case i >= 4 && signed && int64(fields[i]) < 0:
			err = fmt.Errorf("negative integer %d where an unsigned one belongs", int64(fields[i]))
		}
		if err != nil {
			return r, nil, fmt.Errorf("%w: record header: %v", ErrCorrupt, err)
		}
	}
	if int64(fields[0]) != recordFormat {
		return r, nil, fmt.Errorf("%w: record format %d", ErrCorrupt, int64(fields[0]))
	}
	if fields[5] > 0xFF {
		return r, nil, fmt.Errorf("%w: record flags %d", ErrCorrupt, fields[5])
	}
	r.ValidTo, r.TxFrom, r.TxTo = int64(fields[1]), int64(fields[2]), int64(fields[3])
	r.SK, r.Flags = fields[4], uint8(fields[5])
	return r, b, nil
}

// msgpackNil is msgpack's nil code, which AppendRecord writes for an open end.
const msgpackNil = 0xc0

// headArrayLen reads a msgpack array header (fixarray, array16 or array32).
func headArrayLen(b []byte) (int, []byte, error) {
	if len(b) == 0 {
		return 0, nil, fmt.Errorf("empty value")
	}
	switch c := b[0]; {
	case c >= 0x90 && c <= 0x9f:
		return int(c & 0x0f), b[1:], nil
	case c == 0xdc && len(b) >= 3:
		return int(binary.BigEndian.Uint16(b[1:])), b[3:], nil
	case c == 0xdd && len(b) >= 5:
		return int(binary.BigEndian.Uint32(b[1:])), b[5:], nil
	}
	return 0, nil, fmt.Errorf("code 0x%02x is not an array header", b[0])
}

// headNumber reads a msgpack integer of any width and returns its two's
// complement bits (signed widths sign-extended) and whether its code is a signed
// one (fixint or intN) rather than uintN. Unlike msgpack's own decoders it refuses
// nil, as DecodeRecord does.
func headNumber(b []byte) (bits uint64, signed bool, rest []byte, err error) {
	if len(b) == 0 {
		return 0, false, nil, fmt.Errorf("truncated integer")
	}
	c := b[0]
	if c <= 0x7f || c >= 0xe0 { // positive and negative fixint
		return uint64(int64(int8(c))), true, b[1:], nil
	}
	var w int
	switch c {
	case 0xcc, 0xd0:
		w = 1
	case 0xcd, 0xd1:
		w = 2
	case 0xce, 0xd2:
		w = 4
	case 0xcf, 0xd3:
		w = 8
	default:
		return 0, false, nil, fmt.Errorf("msgpack code 0x%02x where an integer belongs", c)
	}
	if len(b) < 1+w {
		return 0, false, nil, fmt.Errorf("truncated integer")
	}
	p := b[1 : 1+w]
	var v uint64
	switch c {
	case 0xcc:
		v = uint64(p[0])
	case 0xd0:
		v = uint64(int64(int8(p[0])))
	case 0xcd:
		v = uint64(binary.BigEndian.Uint16(p))
	case 0xd1:
		v = uint64(int64(int16(binary.BigEndian.Uint16(p))))
	case 0xce:
		v = uint64(binary.BigEndian.Uint32(p))
	case 0xd2:
		v = uint64(int64(int32(binary.BigEndian.Uint32(p))))
	case 0xcf, 0xd3:
		v = binary.BigEndian.Uint64(p)
	}
	return v, c >= 0xd0, b[1+w:], nil
}
