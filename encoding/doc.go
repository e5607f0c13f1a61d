// Package encoding holds bitempo's key and value codecs: pure functions over byte
// slices, with no knowledge of Pebble or of the store's layout.
//
// Keys are built from three pieces, each order-preserving under bytes.Compare:
//
//  1. Tuples (AppendKey): a natural key of typed components (string, []byte, int64,
//     uint64). Each component is a one-byte type tag followed by its payload:
//     integers as fixed 8-byte big-endian words (int64 with the sign bit flipped),
//     strings and bytes escaped (0x00 becomes 0x00 0xFF) and terminated by 0x00 0x01.
//     The encoding is self-delimiting, so a tuple can be followed by more key bytes,
//     and a shorter tuple sorts before each of its extensions.
//  2. Times (AppendTimeAsc, AppendTimeDesc): int64 ticks as 8-byte big-endian words
//     with the sign bit flipped, and bit-inverted for newest-first order. Both keep
//     math.MinInt64 and math.MaxInt64 (the ±∞ of an interval) in order.
//  3. Fixed-width unsigned integers (AppendUint32, AppendUint64) for table ids and
//     surrogate keys.
//
// Values are msgpack. AppendAttrs writes an attribute record deterministically (names
// sorted, integers in their smallest form), so equal records give equal bytes and
// values can be compared as bytes. Decoders check every length against the bytes
// actually present and against fixed limits (MaxAttrs, MaxValueSize), so a corrupt
// or hostile value returns ErrCorrupt instead of panicking or allocating beyond its
// own size. A stored record (RecordValue) is written in a positional form
// (AppendRecordPositional and its retired and shared variants): a varint head and
// the attributes by per-table ordinal, not by name. The store writes them with
// the *At variants, which hold valid_to as its distance from the valid_from of
// the record's key (docs/design/positional-records.md). There is no codec for
// format 1's named msgpack records: a format-1 store is refused when it is
// opened, never read.
//
// # Time values
//
// A time.Time attribute is stored as msgpack's timestamp extension (type -1), in
// the smallest of its three forms (4, 8 or 12 bytes of payload), as an instant at
// microsecond precision in UTC. The zone and any monotonic clock reading are
// dropped and sub-microsecond digits truncated towards the past (Canonical), so a
// decoded time is always UTC and equal instants have equal bytes. Microseconds
// are the unit of valid-time ticks, so a time attribute converts to a tick and
// back exactly (a window on a time column and one on an int64 column of
// microseconds agree); the range is the instants whose microseconds fit an
// int64 (MinTime, MaxTime). Stored values keep their type, so readers, dumps
// and other msgpack tools see a time as a time, not as an integer
// (docs/design/time-attribute-encoding.md). Decoders accept any of the three
// forms but only whole microseconds within the range; anything else is corrupt.
//
// # Decimal values
//
// A Decimal (decimal.go) is an exact number: an int64 coefficient of at most
// 18 digits and a scale of 0 to 18, stored as msgpack ext8 of type 1 with the
// scale byte and the coefficient in its fewest bytes of two's complement. It
// keeps its scale (232.10 prints as 232.10); decoders accept only that one
// form (docs/design/decimal-values.md).
//
// Every decoder returns an error wrapping ErrCorrupt on malformed input and never
// panics; every encoder returns an error wrapping ErrUnsupportedType for a value it
// cannot represent.
package encoding

import "errors"

// ErrCorrupt is returned (wrapped) by every decoder when its input is malformed.
var ErrCorrupt = errors.New("bitempo: corrupt encoding")

// ErrUnsupportedType is returned (wrapped) by encoders given a value whose Go type
// has no encoding.
var ErrUnsupportedType = errors.New("bitempo: unsupported type")
