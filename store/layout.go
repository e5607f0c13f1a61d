package store

import (
	"encoding/binary"
	"fmt"
	"math/bits"

	"github.com/bitempo/bitempo/encoding"
)

// This file is the one owner of the key layout that the package doc maps: the
// table of keyspaces and, for every kind of key, the type that builds it, splits
// it and knows its lengths. No other file slices a stored key by a number of
// bytes; they ask the codec of the key's kind.

// Keyspace prefixes; the package doc describes each.
const (
	ksMeta        byte = 0x01
	ksCatalog     byte = 0x02
	ksSK          byte = 0x03
	ksAttrs       byte = 0x04
	ksCurrent     byte = 0x10
	ksHistory     byte = 0x11
	ksSKIndex     byte = 0x12
	ksTxLog       byte = 0x13
	ksEvents      byte = 0x20
	ksBatches     byte = 0x21
	ksCheckpoints byte = 0x22
	ksGroups      byte = 0x30
	ksErasedSK    byte = 0x40
	ksErasedKey   byte = 0x41
	ksHorizon     byte = 0x42
)

// keyspace is one row of the keyspace table.
type keyspace struct {
	prefix byte
	name   string
	// perTable: the keys continue with a table id (an ordered uvarint, see
	// appendOrdered), so a table is one contiguous range of the keyspace.
	perTable bool
	// split: where the engine's key prefix ends (comparer.go), the part its
	// bloom filters hold and a read of one key seeks with SeekPrefixGE.
	split splitRule
}

// splitRule says where the prefix of a key of one keyspace ends: what a
// bloom filter of key prefixes holds and what SeekPrefixGE stays within.
type splitRule uint8

const (
	// splitNone: the whole key is the prefix (no per-key reads, or no
	// versions: a filter of whole keys is what point gets want).
	splitNone splitRule = iota
	// splitFirstComponent: ks | tid | the tuple's first component; the rest
	// (further components, then the version's times) is the suffix. For a
	// table with a one-column key that is exactly "one key, every version".
	// Decision: the first component, not the whole tuple. A tuple does not
	// say how many components it has (the table's schema does), and the
	// split must be found from the key's front for Pebble's contract to hold
	// for every byte string (comparer.go); a composite key's filter then
	// tells keys apart by their first column only, which is correct, only
	// less selective. (Rejected: a tuple terminator byte, one more byte in
	// every record key; and a split at the fixed-width times from the key's
	// end, which a planted key of another shape breaks.)
	splitFirstComponent
	// splitSK: ks | tid | ord(sk); the suffix is the entry's tx_from.
	splitSK
)

// keyspaceSplit returns the split rule of keyspace ks.
func keyspaceSplit(ks byte) splitRule {
	switch ks { // the keyspace table below, unrolled: splitKey runs on every key
	case ksCurrent, ksHistory, ksEvents:
		return splitFirstComponent
	case ksSKIndex:
		return splitSK
	}
	return splitNone
}

// keyspaces is every keyspace of the store, in prefix order. Dumps, Verify,
// stats and the fuzzers walk this table, so a new keyspace cannot be missed.
var keyspaces = []keyspace{
	{ksMeta, "meta", false, splitNone},
	{ksCatalog, "catalog", false, splitNone},
	{ksSK, "sk-counter", true, splitNone},
	{ksAttrs, "attr-names", true, splitNone},
	{ksCurrent, "current", true, splitFirstComponent},
	{ksHistory, "history", true, splitFirstComponent},
	{ksSKIndex, "sk-index", true, splitSK},
	{ksTxLog, "txlog", true, splitNone}, // read by ranges of transaction time
	{ksEvents, "events", true, splitFirstComponent},
	{ksBatches, "batches", true, splitNone},
	{ksCheckpoints, "checkpoints", true, splitNone},
	{ksGroups, "groups", true, splitNone}, // read by ranges of one group
	{ksErasedSK, "erased-sk", true, splitNone},
	{ksErasedKey, "erased-key", true, splitNone},
	{ksHorizon, "horizon", true, splitNone},
}

// Keyspaces returns the prefix byte of every keyspace of the store, in order,
// for tools and fuzzers that must cover them all.
func Keyspaces() []byte {
	out := make([]byte, len(keyspaces))
	for i, ks := range keyspaces {
		out[i] = ks.prefix
	}
	return out
}

// KeyspaceName names a keyspace prefix byte for dumps and reports ("unknown"
// for a byte that is no keyspace).
func KeyspaceName(ks byte) string {
	for _, k := range keyspaces {
		if k.prefix == ks {
			return k.name
		}
	}
	return "unknown"
}

// perTableKeyspaces returns the prefixes of the keyspaces whose keys start with
// a table id.
func perTableKeyspaces() []byte {
	var out []byte
	for _, k := range keyspaces {
		if k.perTable {
			out = append(out, k.prefix)
		}
	}
	return out
}

// Lengths of the fixed-width parts of keys.
const (
	timeLen    = 8 // encoding.AppendTimeAsc / AppendTimeDesc
	ordinalLen = 4 // an attribute-name ordinal
)

// The ordered uvarint: the form of the integers of keys whose order matters
// but whose values are mostly small (table ids; the package doc lists the
// others). A value below orderedOneByte is one byte, itself; a larger one is
// a length byte orderedOneByte-1+n (n = 1..8) and then its n bytes big-endian,
// with no leading zero byte (and, for n = 1, at least orderedOneByte), so each
// value has exactly one form. Bytewise order of the forms is the order of the
// values (a longer form has a greater first byte, and more bytes means a
// greater value), and no form is a prefix of another, so a key that holds one
// sorts by it and the keys of one value are one contiguous range, ended by
// the form of the next value. In the style of CockroachDB's
// EncodeUvarintAscending, with the one-byte range at the bottom of the byte
// (rather than CockroachDB's 136+v, which keeps room for negative values that
// no key here holds).
//
// Decision: a variable width rather than the fixed 4 bytes (table ids,
// log ordinals) and 8 (surrogate keys) of the first layout: a store has a
// handful of tables, so its ids take one byte in every key instead of four; a
// surrogate key of a table of a million keys takes four bytes instead of
// eight; most log ordinals take one to four. Rejected: a LEB128 varint, whose
// byte order is not its numeric order.
const orderedOneByte = 0xf8

// appendOrdered appends the ordered-uvarint form of v.
func appendOrdered(dst []byte, v uint64) []byte {
	if v < orderedOneByte {
		return append(dst, byte(v))
	}
	n := (bits.Len64(v) + 7) / 8
	dst = append(dst, byte(orderedOneByte-1+n))
	for i := n - 1; i >= 0; i-- {
		dst = append(dst, byte(v>>(8*i)))
	}
	return dst
}

// decodeOrdered decodes the ordered uvarint at the front of b and returns its
// length, or 0 when b does not start with one in its only form (truncated, a
// leading zero byte, or a short value in a long form).
func decodeOrdered(b []byte) (v uint64, n int) {
	if len(b) == 0 {
		return 0, 0
	}
	if b[0] < orderedOneByte {
		return uint64(b[0]), 1
	}
	n = int(b[0]) - (orderedOneByte - 1)
	if len(b) < 1+n || (n > 1 && b[1] == 0) {
		return 0, 0
	}
	for _, c := range b[1 : 1+n] {
		v = v<<8 | uint64(c)
	}
	if v < orderedOneByte {
		return 0, 0
	}
	return v, 1 + n
}

// tableIDEnd returns the length of ks | tid at the front of key k, or 0 when
// k holds no well-formed table id after its keyspace byte.
func tableIDEnd(k []byte) int {
	if len(k) < 2 {
		return 0
	}
	v, n := decodeOrdered(k[1:])
	if n == 0 || v > 1<<32-1 {
		return 0
	}
	return 1 + n
}

// formatVersion is the layout version written to meta "format". Open refuses a
// store with another one (format.go).
const formatVersion = 2

var (
	metaFormat    = []byte{ksMeta, 'f', 'o', 'r', 'm', 'a', 't'}
	metaLastTx    = []byte{ksMeta, 'l', 'a', 's', 't', '_', 't', 'x'}
	metaNextTable = []byte{ksMeta, 'n', 'e', 'x', 't', '_', 't', 'a', 'b', 'l', 'e'}
	// metaLayout names the key layout within format 2 (comparerName), for
	// engines that record no comparer (format.go's layoutOK).
	metaLayout = []byte("\x01layout")
	// metaEraseSecret and metaPurgePending are described in erase.go.
	metaEraseSecret  = []byte("\x01erase_secret")
	metaPurgePending = []byte("\x01purge_pending")
)

// tablePrefix returns ks | tid: every key of the table in keyspace ks, and
// nothing else, starts with it; tablePrefix(ks, tid+1) ends that range.
func tablePrefix(dst []byte, ks byte, tid uint32) []byte {
	return appendOrdered(append(dst, ks), uint64(tid))
}

// TablePrefix returns the first bytes of every key of table tid in keyspace
// ks (one of Keyspaces' per-table keyspaces), for tools and tests that scan a
// table's raw keys (Snapshot.RawScan).
func TablePrefix(ks byte, tid uint32) []byte { return tablePrefix(nil, ks, tid) }

// splitTableID splits ks | tid | rest, for the keyspaces that are per table.
func splitTableID(k []byte) (tid uint32, rest []byte, err error) {
	n := tableIDEnd(k)
	if n == 0 {
		return 0, nil, fmt.Errorf("%w: key %x has no table id", ErrCorrupt, k)
	}
	v, _ := decodeOrdered(k[1:])
	return uint32(v), k[n:], nil
}

// recordKeys is the codec of the keys of one record keyspace:
//
//	current: 0x10 | tid | tuple | desc(valid_from)
//	history: 0x11 | tid | tuple | desc(valid_from) | desc(tx_from)
//
// The "key prefix" of a natural key is ks | tid | tuple: every record of the key
// and nothing else starts with it (tuples are self-delimiting). The times after
// it are fixed width, so a key splits from its end.
type recordKeys struct {
	ks     byte
	suffix int // bytes after the tuple
}

var (
	currentKeys = recordKeys{ks: ksCurrent, suffix: timeLen}
	historyKeys = recordKeys{ks: ksHistory, suffix: 2 * timeLen}
)

// tablePrefix returns ks | tid: every record of the table in this keyspace.
func (r recordKeys) tablePrefix(dst []byte, tid uint32) []byte { return tablePrefix(dst, r.ks, tid) }

// keyPrefix returns ks | tid | tuple.
func (r recordKeys) keyPrefix(dst []byte, tid uint32, tuple []byte) []byte {
	return append(tablePrefix(dst, r.ks, tid), tuple...)
}

// appendValid appends desc(valid) to a key prefix: the seek key of the first
// record of the key whose valid_from is at or before valid (records of a key
// are newest first). In history it also leads every record of one valid_from.
func (r recordKeys) appendValid(keyPfx []byte, valid int64) []byte {
	return encoding.AppendTimeDesc(keyPfx, valid)
}

// key returns the key of the record of tuple starting at validFrom and, in
// history, asserted at txFrom (ignored in the current index).
func (r recordKeys) key(dst []byte, tid uint32, tuple []byte, validFrom, txFrom int64) []byte {
	return r.appendRecordSuffix(tablePrefix(dst, r.ks, tid), tuple, validFrom, txFrom)
}

// appendRecordSuffix appends tuple | desc(validFrom) [| desc(txFrom)]: the
// part of a record key after ks | tid, which the group index repeats.
func (r recordKeys) appendRecordSuffix(dst, tuple []byte, validFrom, txFrom int64) []byte {
	dst = encoding.AppendTimeDesc(append(dst, tuple...), validFrom)
	if r.ks == ksHistory {
		dst = encoding.AppendTimeDesc(dst, txFrom)
	}
	return dst
}

// split splits a record key into its key prefix and its valid_from. pfxLen is
// the length of ks | tid; the tuple must not be empty.
func (r recordKeys) split(k []byte, pfxLen int) (keyPfx []byte, validFrom int64, err error) {
	if len(k) <= pfxLen+r.suffix {
		return nil, 0, fmt.Errorf("%w: %s key %x is too short", ErrCorrupt, KeyspaceName(r.ks), k)
	}
	end := len(k) - r.suffix
	validFrom, _, err = encoding.DecodeTimeDesc(k[end:])
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %s key %x: %v", ErrCorrupt, KeyspaceName(r.ks), k, err)
	}
	return k[:end], validFrom, nil
}

// validFrom decodes the valid_from of a record key whose key prefix is
// keyPfxLen bytes long.
func (r recordKeys) validFrom(k []byte, keyPfxLen int) (int64, error) {
	if len(k) != keyPfxLen+r.suffix {
		return 0, fmt.Errorf("%w: %s key %x has the wrong length", ErrCorrupt, KeyspaceName(r.ks), k)
	}
	v, _, err := encoding.DecodeTimeDesc(k[keyPfxLen:])
	return v, err
}

// txFrom decodes the tx_from at the end of a history key (0 in the current
// index, whose keys do not hold one).
func (r recordKeys) txFrom(k []byte) (int64, error) {
	if r.ks != ksHistory {
		return 0, nil
	}
	if len(k) < r.suffix {
		return 0, fmt.Errorf("%w: %s key %x is too short", ErrCorrupt, KeyspaceName(r.ks), k)
	}
	tx, _, err := encoding.DecodeTimeDesc(k[len(k)-timeLen:])
	return tx, err
}

// decode parses the part of a record key after ks | tid with the table's key
// schema, checking that nothing trails: the tuple, valid_from and, in history,
// tx_from.
func (r recordKeys) decode(t *Table, b []byte) (tuple []byte, validFrom, txFrom int64, err error) {
	tuple, rest, err := t.splitTuple(b)
	if err != nil {
		return nil, 0, 0, err
	}
	if len(rest) != r.suffix {
		return nil, 0, 0, fmt.Errorf("%w: %s key: %d bytes after the key, want %d", ErrCorrupt, KeyspaceName(r.ks), len(rest), r.suffix)
	}
	validFrom, rest, _ = encoding.DecodeTimeDesc(rest)
	if r.ks == ksHistory {
		txFrom, _, _ = encoding.DecodeTimeDesc(rest)
	}
	return tuple, validFrom, txFrom, nil
}

// skIndexKeys is the codec of the sk index (0x12):
//
//	0x12 | tid | ord(sk) | desc(tx_from) -> tuple | varint(valid_from)
type skIndexKeys struct{}

var skIndex skIndexKeys

// prefix returns 0x12 | tid | sk: every entry of one surrogate key.
func (skIndexKeys) prefix(dst []byte, tid uint32, sk uint64) []byte {
	return appendOrdered(tablePrefix(dst, ksSKIndex, tid), sk)
}

// key returns the key of the entry of sk asserted at txFrom; as a seek key it
// finds the newest entry asserted at or before txFrom.
func (c skIndexKeys) key(dst []byte, tid uint32, sk uint64, txFrom int64) []byte {
	return encoding.AppendTimeDesc(c.prefix(dst, tid, sk), txFrom)
}

// decodeKey parses the part of a key after 0x12 | tid.
func (c skIndexKeys) decodeKey(b []byte) (sk uint64, txFrom int64, err error) {
	sk, n := decodeOrdered(b)
	if n == 0 {
		return 0, 0, fmt.Errorf("%w: sk index key %x: no surrogate key after the table id", ErrCorrupt, b)
	}
	txFrom, err = c.decodeTxFrom(b[n:])
	return sk, txFrom, err
}

// decodeTxFrom parses the part of a key after its prefix (0x12 | tid | sk).
func (skIndexKeys) decodeTxFrom(b []byte) (int64, error) {
	if len(b) != timeLen {
		return 0, fmt.Errorf("%w: sk index key: %d bytes after the surrogate key, want %d", ErrCorrupt, len(b), timeLen)
	}
	txFrom, _, err := encoding.DecodeTimeDesc(b)
	return txFrom, err
}

// value returns the entry's value: the record's tuple and its valid_from as a
// signed varint (nothing orders values, so the time needs no fixed width).
func (skIndexKeys) value(dst, tuple []byte, validFrom int64) []byte {
	return binary.AppendVarint(append(dst, tuple...), validFrom)
}

// decodeValue parses an entry's value.
func (skIndexKeys) decodeValue(t *Table, b []byte) (tuple []byte, validFrom int64, err error) {
	tuple, rest, err := t.splitTuple(b)
	if err != nil {
		return nil, 0, err
	}
	validFrom, n := binary.Varint(rest)
	if n <= 0 || n != len(rest) {
		return nil, 0, fmt.Errorf("%w: sk index value %x", ErrCorrupt, b)
	}
	return tuple, validFrom, nil
}

// txLogKeys is the codec of transaction-log keys (0x13):
//
//	0x13 | tid | asc(tx) | ord(ordinal)
type txLogKeys struct{}

var txLogKey txLogKeys

// tablePrefix returns 0x13 | tid.
func (txLogKeys) tablePrefix(tid uint32) []byte { return tablePrefix(nil, ksTxLog, tid) }

// key returns the key of entry ordinal of transaction tx.
func (txLogKeys) key(dst []byte, tid uint32, tx int64, ordinal uint32) []byte {
	dst = encoding.AppendTimeAsc(tablePrefix(dst, ksTxLog, tid), tx)
	return appendOrdered(dst, uint64(ordinal))
}

// decode parses the part of a key after 0x13 | tid.
func (txLogKeys) decode(b []byte) (tx int64, ordinal uint32, err error) {
	if len(b) <= timeLen {
		return 0, 0, fmt.Errorf("%w: txlog key of %d bytes after the table id", ErrCorrupt, len(b))
	}
	tx, b, _ = encoding.DecodeTimeAsc(b)
	ord, n := decodeOrdered(b)
	if n == 0 || n != len(b) || ord > 1<<32-1 {
		return 0, 0, fmt.Errorf("%w: txlog key: ordinal %x", ErrCorrupt, b)
	}
	return tx, uint32(ord), nil
}

// eventKeys is the codec of the event-log keys of changes tables (0x20):
//
//	0x20 | tid | tuple | asc(at) | asc(seq)
type eventKeys struct{}

var eventKey eventKeys

// keyPrefix returns 0x20 | tid | tuple: the key's whole event log.
func (eventKeys) keyPrefix(dst []byte, tid uint32, tuple []byte) []byte {
	return append(tablePrefix(dst, ksEvents, tid), tuple...)
}

// appendPos appends asc(at) | asc(seq) to a key prefix.
func (eventKeys) appendPos(keyPfx []byte, at, seq int64) []byte {
	return encoding.AppendTimeAsc(encoding.AppendTimeAsc(keyPfx, at), seq)
}

// key returns the key of the event of tuple at (at, seq).
func (c eventKeys) key(dst []byte, tid uint32, tuple []byte, at, seq int64) []byte {
	return c.appendPos(c.keyPrefix(dst, tid, tuple), at, seq)
}

// decodePos parses the part of a key after its key prefix.
func (eventKeys) decodePos(b []byte) (at, seq int64, err error) {
	if len(b) != 2*timeLen {
		return 0, 0, fmt.Errorf("%w: event key suffix %x", ErrCorrupt, b)
	}
	at, b, _ = encoding.DecodeTimeAsc(b)
	seq, _, _ = encoding.DecodeTimeAsc(b)
	return at, seq, nil
}

// batchKey returns 0x21 | tid | batch id.
func batchKey(tid uint32, id string) []byte {
	return append(tablePrefix(nil, ksBatches, tid), id...)
}

// checkpointKey returns 0x22 | tid | tuple.
func checkpointKey(tid uint32, tuple []byte) []byte {
	return append(tablePrefix(nil, ksCheckpoints, tid), tuple...)
}

func skCounterKey(tid uint32) []byte { return tablePrefix(nil, ksSK, tid) }

func catalogKey(name string) []byte { return append([]byte{ksCatalog}, name...) }

// attrNameKey returns 0x04 | tid | ordinal: the attribute names of a table in the
// order its writes first used them (tools print columns in that order).
func attrNameKey(tid uint32, ordinal uint32) []byte {
	return encoding.AppendUint32(tablePrefix(nil, ksAttrs, tid), ordinal)
}

// decodeAttrNameKey parses the part of an attribute-name key after 0x04 | tid.
func decodeAttrNameKey(b []byte) (uint32, error) {
	if len(b) != ordinalLen {
		return 0, fmt.Errorf("%w: attribute-name key of %d bytes after the table id", ErrCorrupt, len(b))
	}
	ord, _, _ := encoding.DecodeUint32(b)
	return ord, nil
}

// erasedSKKeys is the codec of the erased surrogate keys (0x40):
//
//	0x40 | tid | ord(sk) -> asc(erasing tx)
type erasedSKKeys struct{}

var erasedSK erasedSKKeys

// key returns the entry of sk.
func (erasedSKKeys) key(tid uint32, sk uint64) []byte {
	return appendOrdered(tablePrefix(nil, ksErasedSK, tid), sk)
}

// decodeKey parses the part of a key after 0x40 | tid.
func (erasedSKKeys) decodeKey(b []byte) (uint64, error) {
	sk, n := decodeOrdered(b)
	if n == 0 || n != len(b) {
		return 0, fmt.Errorf("%w: erased-sk key %x after the table id", ErrCorrupt, b)
	}
	return sk, nil
}

// erasedKeyKeys is the codec of the keyed hashes of erased natural keys (0x41):
//
//	0x41 | tid | hash (32 bytes) | asc(erasing tx) -> empty
type erasedKeyKeys struct{}

var erasedKey erasedKeyKeys

// hashLen is the length of a keyed hash of a natural key (HMAC-SHA256).
const hashLen = 32

// prefix returns 0x41 | tid | hash: every erasure of one key.
func (erasedKeyKeys) prefix(tid uint32, hash []byte) []byte {
	return append(tablePrefix(nil, ksErasedKey, tid), hash...)
}

// key returns the entry of the erasure of hash at tx.
func (c erasedKeyKeys) key(tid uint32, hash []byte, tx int64) []byte {
	return encoding.AppendTimeAsc(c.prefix(tid, hash), tx)
}

// decodeKey parses the part of a key after 0x41 | tid.
func (erasedKeyKeys) decodeKey(b []byte) (hash []byte, tx int64, err error) {
	if len(b) != hashLen+timeLen {
		return nil, 0, fmt.Errorf("%w: erased-key key of %d bytes after the table id", ErrCorrupt, len(b))
	}
	tx, _, err = encoding.DecodeTimeAsc(b[hashLen:])
	return b[:hashLen], tx, err
}

// horizonKey returns 0x42 | tid, whose value asc(horizon) is the transaction
// time through which Vacuum dropped the table's retired records (vacuum.go).
func horizonKey(tid uint32) []byte { return tablePrefix(nil, ksHorizon, tid) }
