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
// own size.
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
