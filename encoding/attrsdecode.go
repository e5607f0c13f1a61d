package encoding

import (
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"math"
	"sync/atomic"
	"time"
)

// This file decodes attribute records by hand. Reads decode one record per
// returned version, so this is on the hot path of every Get: walking the bytes in
// place costs a fraction of a general msgpack decoder (no reader, no interface
// dispatch per value). It accepts exactly the canonical scalar forms that
// AppendAttrs writes, plus the other integer and string widths (never float32, which
// AppendAttrs does not write) and the three forms of msgpack's timestamp extension
// (a time at microsecond precision within [MinTime, MaxTime]) and the decimal
// extension (decimal.go), and checks every
// length against the bytes present before slicing.

// parseAttrs decodes a msgpack map of scalars from the front of b.
func parseAttrs(b []byte) (Attrs, []byte, error) {
	n, b, err := mapHeader(b)
	if err != nil {
		return nil, nil, err
	}
	// Each entry takes at least two bytes, which bounds n by the input's own size.
	if n > MaxAttrs || n > len(b)/2 {
		return nil, nil, fmt.Errorf("%w: attribute count %d", ErrCorrupt, n)
	}
	a := make(Attrs, n)
	for i := 0; i < n; i++ {
		var raw []byte
		raw, b, err = strBytes(b)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: attribute %d name: %v", ErrCorrupt, i, err)
		}
		var v any
		v, b, err = parseScalar(b)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: attribute %q: %v", ErrCorrupt, raw, err)
		}
		name := internName(raw)
		if _, dup := a[name]; dup {
			return nil, nil, fmt.Errorf("%w: attribute %q appears twice", ErrCorrupt, name)
		}
		a[name] = v
	}
	return a, b, nil
}

// internedNames holds attribute names decoded before, so that records, which
// repeat their table's few names, do not allocate each name again: a lossy,
// lock-free table in which a slot keeps the last name that hashed to it. Names
// longer than maxInternedName are not kept.
var internedNames [1024]atomic.Pointer[string]

const maxInternedName = 64

var internSeed = maphash.MakeSeed()

// internName returns raw as a string, shared with earlier decodes of the same
// name where the table still holds it.
func internName(raw []byte) string {
	if len(raw) > maxInternedName {
		return string(raw)
	}
	slot := &internedNames[maphash.Bytes(internSeed, raw)%uint64(len(internedNames))]
	if p := slot.Load(); p != nil && *p == string(raw) {
		return *p
	}
	s := string(raw)
	slot.Store(&s)
	return s
}

func mapHeader(b []byte) (int, []byte, error) {
	if len(b) == 0 {
		return 0, nil, fmt.Errorf("%w: attribute map: empty value", ErrCorrupt)
	}
	switch c := b[0]; {
	case c >= 0x80 && c <= 0x8f:
		return int(c & 0x0f), b[1:], nil
	case c == 0xde && len(b) >= 3:
		return int(binary.BigEndian.Uint16(b[1:])), b[3:], nil
	case c == 0xdf && len(b) >= 5:
		return int(binary.BigEndian.Uint32(b[1:])), b[5:], nil
	}
	return 0, nil, fmt.Errorf("%w: attribute map: code 0x%02x is not a map header", ErrCorrupt, b[0])
}

// lengthPrefixed reads a payload whose length follows code c in w bytes.
func lengthPrefixed(b []byte, w int) ([]byte, []byte, error) {
	if len(b) < 1+w {
		return nil, nil, fmt.Errorf("truncated length")
	}
	var n uint64
	switch w {
	case 1:
		n = uint64(b[1])
	case 2:
		n = uint64(binary.BigEndian.Uint16(b[1:]))
	case 4:
		n = uint64(binary.BigEndian.Uint32(b[1:]))
	}
	b = b[1+w:]
	if n > uint64(len(b)) {
		return nil, nil, fmt.Errorf("length %d exceeds the %d bytes left", n, len(b))
	}
	return b[:n], b[n:], nil
}

// strBytes reads a msgpack str (fixstr, str8/16/32) in place.
func strBytes(b []byte) ([]byte, []byte, error) {
	if len(b) == 0 {
		return nil, nil, fmt.Errorf("truncated string")
	}
	switch c := b[0]; {
	case c >= 0xa0 && c <= 0xbf:
		n := int(c & 0x1f)
		if n > len(b)-1 {
			return nil, nil, fmt.Errorf("length %d exceeds the %d bytes left", n, len(b)-1)
		}
		return b[1 : 1+n], b[1+n:], nil
	case c == 0xd9:
		return lengthPrefixed(b, 1)
	case c == 0xda:
		return lengthPrefixed(b, 2)
	case c == 0xdb:
		return lengthPrefixed(b, 4)
	}
	return nil, nil, fmt.Errorf("code 0x%02x is not a string", b[0])
}

// parseScalar reads one canonical attribute value.
func parseScalar(b []byte) (any, []byte, error) {
	if len(b) == 0 {
		return nil, nil, fmt.Errorf("truncated value")
	}
	switch c := b[0]; {
	case c == 0xc0:
		return nil, b[1:], nil
	case c == 0xc2, c == 0xc3:
		return c == 0xc3, b[1:], nil
	case c <= 0x7f || c >= 0xe0 || (c >= 0xcc && c <= 0xd3):
		bits, signed, rest, err := headNumber(b)
		if err != nil {
			return nil, nil, err
		}
		if !signed && bits > math.MaxInt64 {
			return bits, rest, nil
		}
		return int64(bits), rest, nil
	case c == 0xcb:
		if len(b) < 9 {
			return nil, nil, fmt.Errorf("truncated float")
		}
		return math.Float64frombits(binary.BigEndian.Uint64(b[1:])), b[9:], nil
	case (c >= 0xa0 && c <= 0xbf) || c == 0xd9 || c == 0xda || c == 0xdb:
		s, rest, err := strBytes(b)
		return string(s), rest, err
	case c == 0xc4, c == 0xc5, c == 0xc6:
		p, rest, err := lengthPrefixed(b, 1<<(c-0xc4))
		if err != nil {
			return nil, nil, err
		}
		return append([]byte{}, p...), rest, nil // a fresh, non-nil slice: empty bytes are not null
	case c == 0xc7 && len(b) > 2 && b[2] == decimalExt:
		return parseDecimal(b)
	case c == 0xd6, c == 0xd7, c == 0xc7:
		return parseTime(b)
	}
	return nil, nil, fmt.Errorf("value with msgpack code 0x%02x is not a scalar", b[0])
}

// timestampExt is the msgpack extension type of timestamps.
const timestampExt = 0xff // -1

// parseTime reads a msgpack timestamp: fixext4 (seconds as uint32), fixext8
// (nanoseconds in the top 30 bits, seconds in the low 34) or ext8 of 12 bytes
// (nanoseconds as uint32, seconds as int64). The value must be a canonical time
// attribute: whole microseconds, within [MinTime, MaxTime].
func parseTime(b []byte) (any, []byte, error) {
	var payload []byte
	switch {
	case b[0] == 0xd6 && len(b) >= 6:
		payload, b = b[1:6], b[6:]
	case b[0] == 0xd7 && len(b) >= 10:
		payload, b = b[1:10], b[10:]
	case b[0] == 0xc7 && len(b) >= 15 && b[1] == 12:
		payload, b = b[2:15], b[15:]
	case b[0] == 0xc7 && len(b) >= 2 && b[1] != 12:
		return nil, nil, fmt.Errorf("extension of %d bytes is not a timestamp", b[1])
	default:
		return nil, nil, fmt.Errorf("truncated timestamp")
	}
	if payload[0] != timestampExt {
		return nil, nil, fmt.Errorf("extension type %d is not a timestamp", int8(payload[0]))
	}
	var sec, nsec int64
	switch p := payload[1:]; len(p) {
	case 4:
		sec = int64(binary.BigEndian.Uint32(p))
	case 8:
		w := binary.BigEndian.Uint64(p)
		sec, nsec = int64(w&(1<<34-1)), int64(w>>34)
	default:
		nsec, sec = int64(binary.BigEndian.Uint32(p)), int64(binary.BigEndian.Uint64(p[4:]))
	}
	switch {
	case nsec >= 1e9:
		return nil, nil, fmt.Errorf("timestamp with %d nanoseconds", nsec)
	case nsec%1000 != 0:
		return nil, nil, fmt.Errorf("timestamp with %d nanoseconds is not a whole microsecond", nsec)
	case sec < minTimeSec || sec > maxTimeSec:
		return nil, nil, fmt.Errorf("timestamp of %d seconds is outside the attribute range", sec)
	}
	return time.UnixMicro(sec*1e6 + nsec/1e3).UTC(), b, nil
}

// Kinds of an attribute value as WalkAttrs reports it.
const (
	KindNull uint8 = iota
	KindBool
	KindInt   // int64
	KindUint  // uint64 above math.MaxInt64
	KindFloat // float64
	KindString
	KindBytes
	KindTime
	KindDecimal // Int holds the coefficient, Scale the scale
)

// Value is one attribute value as WalkAttrs reports it, without boxing: Kind
// says which field holds it. Bytes holds the content of a string or byte
// string and aliases the input: copy it to keep it.
type Value struct {
	Kind  uint8
	Bool  bool
	Int   int64
	Uint  uint64
	Float float64
	Bytes []byte
	Time  time.Time
	Scale uint8
}

// Any returns v as a canonical attribute value (what DecodeAttrs would hold).
func (v *Value) Any() any {
	switch v.Kind {
	case KindBool:
		return v.Bool
	case KindInt:
		return v.Int
	case KindUint:
		return v.Uint
	case KindFloat:
		return v.Float
	case KindString:
		return string(v.Bytes)
	case KindBytes:
		return append([]byte{}, v.Bytes...)
	case KindTime:
		return v.Time
	case KindDecimal:
		return Decimal{coef: v.Int, scale: v.Scale}
	}
	return nil
}

// ValueOf returns canonical attribute value x as a Value, the inverse of Any:
// KindNull for nil or a value of no attribute type. The Bytes of a []byte
// alias it; a string is copied.
func ValueOf(x any) Value {
	switch x := x.(type) {
	case bool:
		return Value{Kind: KindBool, Bool: x}
	case int64:
		return Value{Kind: KindInt, Int: x}
	case uint64:
		return Value{Kind: KindUint, Uint: x}
	case float64:
		return Value{Kind: KindFloat, Float: x}
	case string:
		return Value{Kind: KindString, Bytes: []byte(x)}
	case []byte:
		return Value{Kind: KindBytes, Bytes: x}
	case time.Time:
		return Value{Kind: KindTime, Time: x}
	case Decimal:
		return Value{Kind: KindDecimal, Int: x.coef, Scale: x.scale}
	}
	return Value{}
}

// WalkAttrs decodes an attribute record written by AppendAttrs and calls fn for
// each attribute in stored order, with the name and the value aliasing b. It
// allocates nothing itself, which is what decoding a record straight into a Go
// struct needs. It accepts what DecodeAttrs accepts, with one more check: names
// must be strictly ascending (byte order), as AppendAttrs writes them, so that a
// repeated name is seen where it occurs; a record out of order is corrupt. The
// walk may call fn before it finds an error later in the record. An error from
// fn stops the walk and is returned as is.
func WalkAttrs(b []byte, fn func(name []byte, v *Value) error) error {
	if len(b) > MaxValueSize {
		return fmt.Errorf("%w: value of %d bytes exceeds %d", ErrCorrupt, len(b), MaxValueSize)
	}
	n, b, err := mapHeader(b)
	if err != nil {
		return err
	}
	if n > MaxAttrs || n > len(b)/2 {
		return fmt.Errorf("%w: attribute count %d", ErrCorrupt, n)
	}
	var prev []byte
	var v Value
	for i := 0; i < n; i++ {
		var name []byte
		name, b, err = strBytes(b)
		if err != nil {
			return fmt.Errorf("%w: attribute %d name: %v", ErrCorrupt, i, err)
		}
		if i > 0 && string(name) <= string(prev) {
			return fmt.Errorf("%w: attribute %q repeats or is out of order after %q", ErrCorrupt, name, prev)
		}
		if b, err = scanValue(b, &v); err != nil {
			return fmt.Errorf("%w: attribute %q: %v", ErrCorrupt, name, err)
		}
		if err := fn(name, &v); err != nil {
			return err
		}
		prev = name
	}
	if len(b) != 0 {
		return fmt.Errorf("%w: %d trailing bytes after attributes", ErrCorrupt, len(b))
	}
	return nil
}

// scanValue reads one attribute value into v, as parseScalar does without boxing it.
func scanValue(b []byte, v *Value) ([]byte, error) {
	if len(b) == 0 {
		return nil, fmt.Errorf("truncated value")
	}
	*v = Value{}
	switch c := b[0]; {
	case c == 0xc0:
		return b[1:], nil
	case c == 0xc2, c == 0xc3:
		v.Kind, v.Bool = KindBool, c == 0xc3
		return b[1:], nil
	case c <= 0x7f || c >= 0xe0 || (c >= 0xcc && c <= 0xd3):
		bits, signed, rest, err := headNumber(b)
		if err != nil {
			return nil, err
		}
		if !signed && bits > math.MaxInt64 {
			v.Kind, v.Uint = KindUint, bits
		} else {
			v.Kind, v.Int = KindInt, int64(bits)
		}
		return rest, nil
	case c == 0xcb:
		if len(b) < 9 {
			return nil, fmt.Errorf("truncated float")
		}
		v.Kind, v.Float = KindFloat, math.Float64frombits(binary.BigEndian.Uint64(b[1:]))
		return b[9:], nil
	case (c >= 0xa0 && c <= 0xbf) || c == 0xd9 || c == 0xda || c == 0xdb:
		s, rest, err := strBytes(b)
		v.Kind, v.Bytes = KindString, s
		return rest, err
	case c == 0xc4, c == 0xc5, c == 0xc6:
		p, rest, err := lengthPrefixed(b, 1<<(c-0xc4))
		v.Kind, v.Bytes = KindBytes, p
		return rest, err
	case c == 0xc7 && len(b) > 2 && b[2] == decimalExt:
		d, rest, err := parseDecimal(b)
		if err != nil {
			return nil, err
		}
		v.Kind, v.Int, v.Scale = KindDecimal, d.coef, d.scale
		return rest, nil
	case c == 0xd6, c == 0xd7, c == 0xc7:
		t, rest, err := parseTime(b)
		if err != nil {
			return nil, err
		}
		v.Kind, v.Time = KindTime, t.(time.Time)
		return rest, nil
	}
	return nil, fmt.Errorf("value with msgpack code 0x%02x is not a scalar", b[0])
}

// headNumber reads a msgpack integer of any width and returns its two's
// complement bits (signed widths sign-extended) and whether its code is a signed
// one (fixint or intN) rather than uintN. Unlike msgpack's own decoders it refuses
// nil, which no integer field of an attribute record may be.
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
