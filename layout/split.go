package layout

import (
	"bytes"

	"github.com/bitempo/bitempo/encoding"
)

// This file says where a stored key's version suffix starts: the engine's
// key prefix, which bloom filters hold and a read of one key stays within
// (SeekPrefixGE). The rule is per keyspace (keyspace.split in layout.go).

// ComparerName is the name Pebble records in a store's MANIFEST and OPTIONS
// files. It names the key layout, not only the order: a store written with
// another comparer is refused before Pebble opens it (the Pebble engine's check), whether Pebble's default (the development builds of format 2
// before the split existed) or an earlier layout of bitempo's own
// (DevComparerNames). Pebble would refuse it anyway, with a message that says
// nothing about how to move the data.
const ComparerName = "bitempo.layout.v5"

// DevComparerNames are the comparers of development builds of format 2 whose
// keys and values this build would misread: bitempo.layout.v2 wrote 4-byte
// table ids, 8-byte surrogate keys and 4-byte log ordinals, transaction-log
// changes without re-asserts or valid_from deltas, and record values with an
// absolute valid_to, under the same format marker; bitempo.layout.v3 wrote
// this layout without the newest-version keyspace (0x14), so its stores have
// none, and a build of it writing into a store of this one would leave the
// keyspace stale; bitempo.layout.v4 wrote each group index entry (0x30) with
// the record's whole value, group attributes included, where this layout
// leaves them to the entry's key, so its entries would fail Verify here and
// this layout's would read back without their group attributes there.
var DevComparerNames = []string{"bitempo.layout.v2", "bitempo.layout.v3", "bitempo.layout.v4"}

// Split returns the length of the prefix of key k: the part that names one
// key of one table (keyspace, table id, and the key's identity as
// keyspace.split decides), before the version suffix. A key without a suffix
// is all prefix.
//
// Pebble requires that the bytewise order of keys is the order of their
// (prefix, suffix) pairs, and that a prefix splits as itself. Both hold for
// every byte string because the split point is found reading from the front:
// whether a key splits at i depends only on its first i bytes and on whether
// more follow, so every longer key that starts with the same i bytes splits at
// i too, and a key of exactly those i bytes is all prefix. (A split
// found from the end, at the fixed-width times, would agree only for keys of
// the same table schema; a planted key of another shape would then make
// Pebble's table writer fail its order check on flush.)
//
// The table id is an ordered uvarint, read from the front too: a key whose
// bytes after its keyspace are not one in its only form is all prefix.
func Split(k []byte) int {
	if len(k) == 0 {
		return 0
	}
	rule := keyspaceSplit(k[0])
	if rule == splitNone {
		return len(k)
	}
	t := TableIDEnd(k)
	if t == 0 || t >= len(k) {
		return len(k)
	}
	var n int
	switch rule {
	case splitFirstComponent:
		n = firstComponentEnd(k[t:])
	case splitSK:
		_, n = DecodeOrdered(k[t:])
	}
	if n <= 0 || t+n >= len(k) {
		return len(k)
	}
	return t + n
}

// ImmediateSuccessor appends the smallest prefix key greater than the prefix
// key a (Pebble's NextPrefix seeks there). Every key that extends a prefix that
// Split ends at a key's tuple component splits there too, so the smallest
// greater prefix key is past all of them: a with its last byte incremented
// (encoding.PrefixEnd), which ends the component early or breaks its escape,
// and so splits as itself. (Pebble's default, a | 0x00, would be a key of
// prefix a, sorting before a's versions: NextPrefix would stay on the key.)
// For any other prefix key, a | 0x00 is one.
// It builds both candidates in dst, allocating nothing when dst has room
// (NextPrefix passes the same buffer every time).
func ImmediateSuccessor(dst, a []byte) []byte {
	n := len(dst)
	dst = append(append(dst, a...), 0x00)
	if t := TableIDEnd(a); t > 0 && len(a) > t && Split(dst[n:]) == len(a) {
		if end := encoding.PrefixEndInPlace(dst[n : n+len(a)]); len(end) > 0 {
			return dst[:n+len(end)]
		}
	}
	return dst
}

// Tags of key components and the escape bytes of string components, as
// encoding/key.go writes them. The split reads them without decoding the
// component; TestSplitKey checks them against encoding.AppendKey.
const (
	splitTagInt64  = 0x20
	splitTagUint64 = 0x21
	splitTagString = 0x30
	splitTagBytes  = 0x31
	splitEscape    = 0x00
	splitEscaped00 = 0xFF
	splitTerm      = 0x01
)

// firstComponentEnd returns the length of the well-formed tuple component at
// the front of b, or 0 if there is none.
func firstComponentEnd(b []byte) int {
	if len(b) == 0 {
		return 0
	}
	switch b[0] {
	case splitTagInt64, splitTagUint64:
		if len(b) < 9 {
			return 0
		}
		return 9
	case splitTagString, splitTagBytes:
		for i := 1; ; {
			j := bytes.IndexByte(b[i:], splitEscape)
			if j < 0 || i+j+1 >= len(b) {
				return 0
			}
			i += j + 1
			switch b[i] {
			case splitTerm:
				return i + 1
			case splitEscaped00:
				i++
			default:
				return 0
			}
		}
	}
	return 0
}
