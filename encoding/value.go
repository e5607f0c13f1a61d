package encoding

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/vmihailenco/msgpack/v5"
)

// Limits enforced by the value decoders. A value that claims more is corrupt.
const (
	// MaxAttrs is the largest number of attributes one record may hold.
	MaxAttrs = 1 << 12
	// MaxValueSize is the largest encoded value, in bytes, that decoders accept.
	MaxValueSize = 64 << 20
)

// Attrs is a record of named attribute values. A value is nil (null), bool, int64,
// uint64 (only above math.MaxInt64), float64, string, []byte, time.Time (UTC, at
// microsecond precision, between MinTime and MaxTime) or Decimal. Encoders also accept the
// other Go integer and float widths and store them as int64 / float64, and any
// time.Time in that range, stored as its instant truncated to the microsecond, so
// a decoded record holds only the canonical types.
type Attrs map[string]any

// Clone returns a shallow copy of a (values are immutable scalars).
func (a Attrs) Clone() Attrs {
	if a == nil {
		return nil
	}
	out := make(Attrs, len(a))
	for k, v := range a {
		out[k] = v
	}
	return out
}

// Names returns the attribute names in sorted order.
func (a Attrs) Names() []string {
	names := make([]string, 0, len(a))
	for k := range a {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

// Canonical returns v converted to its canonical attribute type, or an error
// wrapping ErrUnsupportedType.
func Canonical(v any) (any, error) {
	switch x := v.(type) {
	case nil, bool, int64, float64, string, Decimal:
		return v, nil
	case []byte:
		return bytes.Clone(x), nil
	case int:
		return int64(x), nil
	case int8:
		return int64(x), nil
	case int16:
		return int64(x), nil
	case int32:
		return int64(x), nil
	case uint8:
		return int64(x), nil
	case uint16:
		return int64(x), nil
	case uint32:
		return int64(x), nil
	case uint:
		return canonicalUint(uint64(x)), nil
	case uint64:
		return canonicalUint(x), nil
	case float32:
		return float64(x), nil
	case time.Time:
		return CanonicalTime(x)
	default:
		return nil, fmt.Errorf("%w: attribute value of type %T", ErrUnsupportedType, v)
	}
}

// The range of time attribute values: the instants whose microseconds since the
// Unix epoch fit in an int64 with whole seconds to spare (years -290307 to
// 294246), so that a time attribute and a valid-time tick convert into each other
// exactly.
var (
	MinTime = time.Unix(minTimeSec, 0).UTC()
	MaxTime = time.Unix(maxTimeSec, 999_999_000).UTC()
)

const (
	minTimeSec = math.MinInt64/1_000_000 + 1
	maxTimeSec = math.MaxInt64/1_000_000 - 1
)

// CanonicalTime returns t as a time attribute value: in UTC, without a monotonic
// clock reading, truncated to the microsecond (towards the past, so 1969 instants
// keep their order). A time outside [MinTime, MaxTime] is an error wrapping
// ErrUnsupportedType.
func CanonicalTime(t time.Time) (time.Time, error) {
	if sec := t.Unix(); sec < minTimeSec || sec > maxTimeSec {
		return time.Time{}, fmt.Errorf("%w: time %s is outside the attribute range [%s, %s]",
			ErrUnsupportedType, t.Format(time.RFC3339Nano), MinTime.Format(time.RFC3339), MaxTime.Format(time.RFC3339Nano))
	}
	return time.UnixMicro(t.UnixMicro()).UTC(), nil
}

func canonicalUint(u uint64) any {
	if u <= math.MaxInt64 {
		return int64(u)
	}
	return u
}

// AppendAttrs appends the deterministic msgpack encoding of a to dst: a map with
// names in sorted order and each value in its canonical type.
func AppendAttrs(dst []byte, a Attrs) ([]byte, error) {
	w := bytes.NewBuffer(dst)
	enc := msgpack.GetEncoder()
	defer msgpack.PutEncoder(enc)
	enc.Reset(w)
	if err := encodeAttrs(enc, a); err != nil {
		return dst, err
	}
	return w.Bytes(), nil
}

func encodeAttrs(enc *msgpack.Encoder, a Attrs) error {
	if len(a) > MaxAttrs {
		return fmt.Errorf("%w: %d attributes, at most %d", ErrUnsupportedType, len(a), MaxAttrs)
	}
	if err := enc.EncodeMapLen(len(a)); err != nil {
		return err
	}
	for _, name := range a.Names() {
		v, err := Canonical(a[name])
		if err != nil {
			return fmt.Errorf("attribute %q: %w", name, err)
		}
		if err := enc.EncodeString(name); err != nil {
			return err
		}
		if err := encodeScalar(enc, v); err != nil {
			return err
		}
	}
	return nil
}

func encodeScalar(enc *msgpack.Encoder, v any) error {
	switch x := v.(type) {
	case nil:
		return enc.EncodeNil()
	case bool:
		return enc.EncodeBool(x)
	case int64:
		return enc.EncodeInt(x)
	case uint64:
		return enc.EncodeUint(x)
	case float64:
		return enc.EncodeFloat64(x)
	case string:
		return enc.EncodeString(x)
	case time.Time:
		// msgpack's timestamp extension (type -1) in its smallest form: 4 bytes
		// (whole seconds in [0, 2^32)), 8 bytes (seconds in [0, 2^34)) or 12.
		return enc.EncodeTime(x)
	case Decimal:
		var buf [12]byte
		_, err := enc.Writer().Write(appendDecimal(buf[:0], x))
		return err
	case []byte:
		if x == nil {
			// msgpack writes a nil slice as nil; an empty bytes value is not a null.
			x = []byte{}
		}
		return enc.EncodeBytes(x)
	}
	return fmt.Errorf("%w: %T", ErrUnsupportedType, v)
}

// DecodeAttrs decodes a record written by AppendAttrs.
func DecodeAttrs(b []byte) (Attrs, error) {
	if len(b) > MaxValueSize {
		return nil, fmt.Errorf("%w: value of %d bytes exceeds %d", ErrCorrupt, len(b), MaxValueSize)
	}
	a, rest, err := parseAttrs(b)
	if err != nil {
		return nil, err
	}
	if len(rest) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes after attributes", ErrCorrupt, len(rest))
	}
	return a, nil
}

// Equal reports whether a and o encode to the same bytes, without encoding them
// when their values are canonical (what decoders and the write paths produce):
// the same names, and for each a value of the same type and the same content
// (floats by bit pattern, as the encoding compares them). Non-canonical values are
// compared through their encodings.
func (a Attrs) Equal(o Attrs) bool {
	if len(a) != len(o) {
		return false
	}
	for name, x := range a {
		y, ok := o[name]
		if !ok {
			return false
		}
		same, canonical := canonicalEqual(x, y)
		if !canonical {
			return encodedEqual(a, o)
		}
		if !same {
			return false
		}
	}
	return true
}

// canonicalEqual compares two values of canonical types; canonical is false when
// either is of another type.
func canonicalEqual(x, y any) (same, canonical bool) {
	switch xv := x.(type) {
	case nil:
		return y == nil, isCanonical(y)
	case bool:
		yv, ok := y.(bool)
		return ok && xv == yv, ok || isCanonical(y)
	case int64:
		yv, ok := y.(int64)
		return ok && xv == yv, ok || isCanonical(y)
	case uint64:
		yv, ok := y.(uint64)
		return ok && xv == yv, xv > math.MaxInt64 && (ok || isCanonical(y))
	case float64:
		yv, ok := y.(float64)
		return ok && math.Float64bits(xv) == math.Float64bits(yv), ok || isCanonical(y)
	case string:
		yv, ok := y.(string)
		return ok && xv == yv, ok || isCanonical(y)
	case []byte:
		yv, ok := y.([]byte)
		return ok && bytes.Equal(xv, yv), ok || isCanonical(y)
	case Decimal:
		yv, ok := y.(Decimal)
		return ok && xv == yv, ok || isCanonical(y)
	case time.Time:
		yv, ok := y.(time.Time)
		if !inTimeRange(xv) || (ok && !inTimeRange(yv)) {
			return false, false
		}
		return ok && xv.UnixMicro() == yv.UnixMicro(), ok || isCanonical(y)
	}
	return false, false
}

// inTimeRange reports whether t can be a time attribute value.
func inTimeRange(t time.Time) bool {
	sec := t.Unix()
	return sec >= minTimeSec && sec <= maxTimeSec
}

func isCanonical(v any) bool {
	switch x := v.(type) {
	case nil, bool, int64, float64, string, []byte, Decimal:
		return true
	case uint64:
		return x > math.MaxInt64
	case time.Time:
		return inTimeRange(x)
	}
	return false
}

func encodedEqual(a, o Attrs) bool {
	x, err1 := AppendAttrs(nil, a)
	y, err2 := AppendAttrs(nil, o)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}
