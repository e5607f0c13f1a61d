package layout

import (
	"encoding/binary"
	"fmt"
	"math/bits"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/engine"
)

// This file is the one owner of the key layout that the package doc maps: the
// table of keyspaces and, for every kind of key, the type that builds it, splits
// it and knows its lengths. No other file slices a stored key by a number of
// bytes; they ask the codec of the key's kind.

// Keyspace prefixes; the package doc describes each.
const (
	Meta        byte = 0x01
	Catalog     byte = 0x02
	SKCounter   byte = 0x03
	AttrNames   byte = 0x04
	AttrTypes   byte = 0x05
	Schemas     byte = 0x06
	Commits     byte = 0x07
	Current     byte = 0x10
	History     byte = 0x11
	SKIndex     byte = 0x12
	TxLog       byte = 0x13
	Newest      byte = 0x14
	Events      byte = 0x20
	Batches     byte = 0x21
	Checkpoints byte = 0x22
	Groups      byte = 0x30
	ErasedSK    byte = 0x40
	ErasedKey   byte = 0x41
	Horizon     byte = 0x42
)

// keyspace is one row of the keyspace table.
type keyspace struct {
	prefix byte
	name   string
	// perTable: the keys continue with a table id (an ordered uvarint, see
	// AppendOrdered), so a table is one contiguous range of the keyspace.
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
	// A composite key's filter tells keys apart by their first column only:
	// correct, only less selective (docs/design/filter-split.md).
	splitFirstComponent
	// splitSK: ks | tid | ord(sk); the suffix is the entry's tx_from.
	splitSK
)

// keyspaceSplit returns the split rule of keyspace ks.
func keyspaceSplit(ks byte) splitRule {
	switch ks { // the keyspace table below, unrolled: Split runs on every key
	case Current, History, Events:
		return splitFirstComponent
	case SKIndex:
		return splitSK
	}
	return splitNone
}

// keyspaces is every keyspace of the store, in prefix order. Dumps, Verify,
// stats and the fuzzers walk this table, so a new keyspace cannot be missed.
var keyspaces = []keyspace{
	{Meta, "meta", false, splitNone},
	{Catalog, "catalog", false, splitNone},
	{SKCounter, "sk-counter", true, splitNone},
	{AttrNames, "attr-names", true, splitNone},
	{AttrTypes, "attr-types", true, splitNone},
	{Schemas, "schemas", true, splitNone},
	{Commits, "commits", false, splitNone},
	{Current, "current", true, splitFirstComponent},
	{History, "history", true, splitFirstComponent},
	{SKIndex, "sk-index", true, splitSK},
	{TxLog, "txlog", true, splitNone},   // read by ranges of transaction time
	{Newest, "newest", true, splitNone}, // read by scans of a table's keys
	{Events, "events", true, splitFirstComponent},
	{Batches, "batches", true, splitNone},
	{Checkpoints, "checkpoints", true, splitNone},
	{Groups, "groups", true, splitNone}, // read by ranges of one group
	{ErasedSK, "erased-sk", true, splitNone},
	{ErasedKey, "erased-key", true, splitNone},
	{Horizon, "horizon", true, splitNone},
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

// PerTableKeyspaces returns the prefixes of the keyspaces whose keys start with
// a table id.
func PerTableKeyspaces() []byte {
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
	TimeLen    = 8 // encoding.AppendTimeAsc / AppendTimeDesc
	OrdinalLen = 4 // an attribute-name ordinal
)

// The ordered uvarint: the form of the integers of keys whose order matters
// but whose values are mostly small (table ids; the package doc lists the
// others). A value below OrderedOneByte is one byte, itself; a larger one is
// a length byte OrderedOneByte-1+n (n = 1..8) and then its n bytes big-endian,
// with no leading zero byte (and, for n = 1, at least OrderedOneByte), so each
// value has exactly one form. Bytewise order of the forms is the order of the
// values (a longer form has a greater first byte, and more bytes means a
// greater value), and no form is a prefix of another, so a key that holds one
// sorts by it and the keys of one value are one contiguous range, ended by
// the form of the next value. In the style of CockroachDB's
// EncodeUvarintAscending, with the one-byte range at the bottom of the byte
// (rather than CockroachDB's 136+v, which keeps room for negative values that
// no key here holds).
//
// The width is variable, not the fixed 4 bytes (table ids, log ordinals) and
// 8 (surrogate keys) of the first layout: a store has a handful of tables, so
// its ids take one byte in every key instead of four; a surrogate key of a
// table of a million keys takes four bytes instead of eight; most log ordinals
// take one to four. A LEB128 varint would not do: its byte order is not its
// numeric order.
const OrderedOneByte = 0xf8

// AppendOrdered appends the ordered-uvarint form of v.
func AppendOrdered(dst []byte, v uint64) []byte {
	if v < OrderedOneByte {
		return append(dst, byte(v))
	}
	n := (bits.Len64(v) + 7) / 8
	dst = append(dst, byte(OrderedOneByte-1+n))
	for i := n - 1; i >= 0; i-- {
		dst = append(dst, byte(v>>(8*i)))
	}
	return dst
}

// DecodeOrdered decodes the ordered uvarint at the front of b and returns its
// length, or 0 when b does not start with one in its only form (truncated, a
// leading zero byte, or a short value in a long form).
func DecodeOrdered(b []byte) (v uint64, n int) {
	if len(b) == 0 {
		return 0, 0
	}
	if b[0] < OrderedOneByte {
		return uint64(b[0]), 1
	}
	n = int(b[0]) - (OrderedOneByte - 1)
	if len(b) < 1+n || (n > 1 && b[1] == 0) {
		return 0, 0
	}
	for _, c := range b[1 : 1+n] {
		v = v<<8 | uint64(c)
	}
	if v < OrderedOneByte {
		return 0, 0
	}
	return v, 1 + n
}

// TableIDEnd returns the length of ks | tid at the front of key k, or 0 when
// k holds no well-formed table id after its keyspace byte.
func TableIDEnd(k []byte) int {
	if len(k) < 2 {
		return 0
	}
	v, n := DecodeOrdered(k[1:])
	if n == 0 || v > 1<<32-1 {
		return 0
	}
	return 1 + n
}

// FormatVersion is the layout version written to meta "format". Open refuses a
// store with another one (format.go).
const FormatVersion = 3

// DevFormatVersion is the marker the development builds of format 2 wrote
// with comparers other than this build's (DevComparerNames, and Pebble's
// default): a store of it under such a comparer is one of theirs.
const DevFormatVersion = 2

var (
	MetaFormat    = []byte{Meta, 'f', 'o', 'r', 'm', 'a', 't'}
	MetaLastTx    = []byte{Meta, 'l', 'a', 's', 't', '_', 't', 'x'}
	MetaNextTable = []byte{Meta, 'n', 'e', 'x', 't', '_', 't', 'a', 'b', 'l', 'e'}
	// MetaLastCommit is the number of the newest commit (CommitKey).
	MetaLastCommit = []byte("\x01last_commit")
	// MetaLayout names the key layout within the format (ComparerName), for
	// engines that record no comparer (format.go's CheckLayout).
	MetaLayout = []byte("\x01layout")
	// MetaEraseSecret and MetaPurgePending are described in erase.go.
	MetaEraseSecret  = []byte("\x01erase_secret")
	MetaPurgePending = []byte("\x01purge_pending")
)

// CommitKey returns 0x07 | ord(n), the key of commit number n, whose value
// is the commit's transaction time (CommitValue).
func CommitKey(n uint64) []byte { return AppendOrdered([]byte{Commits}, n) }

// DecodeCommitKey returns the commit number of a key of keyspace 0x07.
func DecodeCommitKey(k []byte) (uint64, error) {
	if len(k) < 2 || k[0] != Commits {
		return 0, fmt.Errorf("%w: %x is no commit key", engine.ErrCorrupt, k)
	}
	n, l := DecodeOrdered(k[1:])
	if l == 0 || 1+l != len(k) || n == 0 {
		return 0, fmt.Errorf("%w: commit key %x", engine.ErrCorrupt, k)
	}
	return n, nil
}

// CommitValue returns the value of a commit's key: asc(tx).
func CommitValue(tx int64) []byte { return encoding.AppendTimeAsc(nil, tx) }

// DecodeCommitValue returns the transaction time a commit's value holds.
func DecodeCommitValue(b []byte) (int64, error) {
	tx, rest, err := encoding.DecodeTimeAsc(b)
	if err == nil && len(rest) != 0 {
		err = fmt.Errorf("%d bytes after it", len(rest))
	}
	if err != nil {
		return 0, fmt.Errorf("%w: commit value %x: %v", engine.ErrCorrupt, b, err)
	}
	return tx, nil
}

// AppendTablePrefix returns ks | tid: every key of the table in keyspace ks, and
// nothing else, starts with it; AppendTablePrefix(ks, tid+1) ends that range.
func AppendTablePrefix(dst []byte, ks byte, tid uint32) []byte {
	return AppendOrdered(append(dst, ks), uint64(tid))
}

// TablePrefix returns the first bytes of every key of table tid in keyspace
// ks (one of Keyspaces' per-table keyspaces), for tools and tests that scan a
// table's raw keys (Snapshot.RawScan).
func TablePrefix(ks byte, tid uint32) []byte { return AppendTablePrefix(nil, ks, tid) }

// SplitTableID splits ks | tid | rest, for the keyspaces that are per table.
func SplitTableID(k []byte) (tid uint32, rest []byte, err error) {
	n := TableIDEnd(k)
	if n == 0 {
		return 0, nil, fmt.Errorf("%w: key %x has no table id", engine.ErrCorrupt, k)
	}
	v, _ := DecodeOrdered(k[1:])
	return uint32(v), k[n:], nil
}

// RecordCodec is the codec of the keys of one record keyspace:
//
//	current: 0x10 | tid | tuple | desc(valid_from)
//	history: 0x11 | tid | tuple | desc(valid_from) | desc(tx_from)
//
// The "key prefix" of a natural key is ks | tid | tuple: every record of the key
// and nothing else starts with it (tuples are self-delimiting). The times after
// it are fixed width, so a key splits from its end.
type RecordCodec struct {
	ks     byte
	suffix int // bytes after the tuple
}

var (
	CurrentKeys = RecordCodec{ks: Current, suffix: TimeLen}
	HistoryKeys = RecordCodec{ks: History, suffix: 2 * TimeLen}
)

// AppendTablePrefix returns ks | tid: every record of the table in this keyspace.
func (r RecordCodec) TablePrefix(dst []byte, tid uint32) []byte {
	return AppendTablePrefix(dst, r.ks, tid)
}

// keyPrefix returns ks | tid | tuple.
func (r RecordCodec) KeyPrefix(dst []byte, tid uint32, tuple []byte) []byte {
	return append(AppendTablePrefix(dst, r.ks, tid), tuple...)
}

// appendValid appends desc(valid) to a key prefix: the seek key of the first
// record of the key whose valid_from is at or before valid (records of a key
// are newest first). In history it also leads every record of one valid_from.
func (r RecordCodec) AppendValid(keyPfx []byte, valid int64) []byte {
	return encoding.AppendTimeDesc(keyPfx, valid)
}

// key returns the key of the record of tuple starting at validFrom and, in
// history, asserted at txFrom (ignored in the current index).
func (r RecordCodec) Key(dst []byte, tid uint32, tuple []byte, validFrom, txFrom int64) []byte {
	return r.AppendRecordSuffix(AppendTablePrefix(dst, r.ks, tid), tuple, validFrom, txFrom)
}

// appendRecordSuffix appends tuple | desc(validFrom) [| desc(txFrom)]: the
// part of a record key after ks | tid, which the group index repeats.
func (r RecordCodec) AppendRecordSuffix(dst, tuple []byte, validFrom, txFrom int64) []byte {
	dst = encoding.AppendTimeDesc(append(dst, tuple...), validFrom)
	if r.ks == History {
		dst = encoding.AppendTimeDesc(dst, txFrom)
	}
	return dst
}

// split splits a record key into its key prefix and its valid_from. pfxLen is
// the length of ks | tid; the tuple must not be empty.
func (r RecordCodec) Split(k []byte, pfxLen int) (keyPfx []byte, validFrom int64, err error) {
	if len(k) <= pfxLen+r.suffix {
		return nil, 0, fmt.Errorf("%w: %s key %x is too short", engine.ErrCorrupt, KeyspaceName(r.ks), k)
	}
	end := len(k) - r.suffix
	validFrom, _, err = encoding.DecodeTimeDesc(k[end:])
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %s key %x: %v", engine.ErrCorrupt, KeyspaceName(r.ks), k, err)
	}
	return k[:end], validFrom, nil
}

// validFrom decodes the valid_from of a record key whose key prefix is
// keyPfxLen bytes long.
func (r RecordCodec) ValidFrom(k []byte, keyPfxLen int) (int64, error) {
	if len(k) != keyPfxLen+r.suffix {
		return 0, fmt.Errorf("%w: %s key %x has the wrong length", engine.ErrCorrupt, KeyspaceName(r.ks), k)
	}
	v, _, err := encoding.DecodeTimeDesc(k[keyPfxLen:])
	return v, err
}

// txFrom decodes the tx_from at the end of a history key (0 in the current
// index, whose keys do not hold one).
func (r RecordCodec) TxFrom(k []byte) (int64, error) {
	if r.ks != History {
		return 0, nil
	}
	if len(k) < r.suffix {
		return 0, fmt.Errorf("%w: %s key %x is too short", engine.ErrCorrupt, KeyspaceName(r.ks), k)
	}
	tx, _, err := encoding.DecodeTimeDesc(k[len(k)-TimeLen:])
	return tx, err
}

// decode parses the part of a record key after ks | tid with the table's key
// schema, checking that nothing trails: the tuple, valid_from and, in history,
// tx_from.
func (r RecordCodec) Decode(splitTuple TupleSplitter, b []byte) (tuple []byte, validFrom, txFrom int64, err error) {
	tuple, rest, err := splitTuple(b)
	if err != nil {
		return nil, 0, 0, err
	}
	if len(rest) != r.suffix {
		return nil, 0, 0, fmt.Errorf("%w: %s key: %d bytes after the key, want %d", engine.ErrCorrupt, KeyspaceName(r.ks), len(rest), r.suffix)
	}
	validFrom, rest, _ = encoding.DecodeTimeDesc(rest)
	if r.ks == History {
		txFrom, _, _ = encoding.DecodeTimeDesc(rest)
	}
	return tuple, validFrom, txFrom, nil
}

// NewestCodec is the codec of the newest-version keyspace (0x14):
//
//	0x14 | tid | tuple -> varint(valid_from) | record value
//
// One entry per key with current records: a copy of the key's current record
// with the greatest valid_from (the first of its records in the current
// index), its valid_from moved from the key into the value. The record value
// is the current index's, byte for byte: its valid_to is a distance from that
// valid_from.
type NewestCodec struct{}

var NewestKeys NewestCodec

// TablePrefix returns 0x14 | tid: every entry of the table.
func (NewestCodec) TablePrefix(dst []byte, tid uint32) []byte {
	return AppendTablePrefix(dst, Newest, tid)
}

// Key returns 0x14 | tid | tuple.
func (NewestCodec) Key(dst []byte, tid uint32, tuple []byte) []byte {
	return append(AppendTablePrefix(dst, Newest, tid), tuple...)
}

// KeyOf returns the entry key of the key whose current-index key prefix
// (0x10 | tid | tuple, RecordCodec.Split) is currentPfx.
func (NewestCodec) KeyOf(dst, currentPfx []byte) []byte {
	return append(append(dst, Newest), currentPfx[1:]...)
}

// Value returns varint(validFrom) | record.
func (NewestCodec) Value(dst []byte, validFrom int64, record []byte) []byte {
	return append(binary.AppendVarint(dst, validFrom), record...)
}

// DecodeValue splits an entry's value into its valid_from and its record
// value (aliasing b).
func (NewestCodec) DecodeValue(b []byte) (validFrom int64, record []byte, err error) {
	validFrom, n := binary.Varint(b)
	if n <= 0 || n == len(b) {
		return 0, nil, fmt.Errorf("%w: newest-version entry value %x: no valid_from and record", engine.ErrCorrupt, b)
	}
	return validFrom, b[n:], nil
}

// SKIndexCodec is the codec of the sk index (0x12):
//
//	0x12 | tid | ord(sk) | desc(tx_from) -> tuple | varint(valid_from)
type SKIndexCodec struct{}

var SKIndexKeys SKIndexCodec

// prefix returns 0x12 | tid | sk: every entry of one surrogate key.
func (SKIndexCodec) Prefix(dst []byte, tid uint32, sk uint64) []byte {
	return AppendOrdered(AppendTablePrefix(dst, SKIndex, tid), sk)
}

// key returns the key of the entry of sk asserted at txFrom; as a seek key it
// finds the newest entry asserted at or before txFrom.
func (c SKIndexCodec) Key(dst []byte, tid uint32, sk uint64, txFrom int64) []byte {
	return encoding.AppendTimeDesc(c.Prefix(dst, tid, sk), txFrom)
}

// decodeKey parses the part of a key after 0x12 | tid.
func (c SKIndexCodec) DecodeKey(b []byte) (sk uint64, txFrom int64, err error) {
	sk, n := DecodeOrdered(b)
	if n == 0 {
		return 0, 0, fmt.Errorf("%w: sk index key %x: no surrogate key after the table id", engine.ErrCorrupt, b)
	}
	txFrom, err = c.DecodeTxFrom(b[n:])
	return sk, txFrom, err
}

// decodeTxFrom parses the part of a key after its prefix (0x12 | tid | sk).
func (SKIndexCodec) DecodeTxFrom(b []byte) (int64, error) {
	if len(b) != TimeLen {
		return 0, fmt.Errorf("%w: sk index key: %d bytes after the surrogate key, want %d", engine.ErrCorrupt, len(b), TimeLen)
	}
	txFrom, _, err := encoding.DecodeTimeDesc(b)
	return txFrom, err
}

// value returns the entry's value: the record's tuple and its valid_from as a
// signed varint (nothing orders values, so the time needs no fixed width).
func (SKIndexCodec) Value(dst, tuple []byte, validFrom int64) []byte {
	return binary.AppendVarint(append(dst, tuple...), validFrom)
}

// decodeValue parses an entry's value.
func (SKIndexCodec) DecodeValue(splitTuple TupleSplitter, b []byte) (tuple []byte, validFrom int64, err error) {
	tuple, rest, err := splitTuple(b)
	if err != nil {
		return nil, 0, err
	}
	validFrom, n := binary.Varint(rest)
	if n <= 0 || n != len(rest) {
		return nil, 0, fmt.Errorf("%w: sk index value %x", engine.ErrCorrupt, b)
	}
	return tuple, validFrom, nil
}

// TxLogCodec is the codec of transaction-log keys (0x13):
//
//	0x13 | tid | asc(tx) | ord(ordinal)
type TxLogCodec struct{}

var TxLogKeys TxLogCodec

// AppendTablePrefix returns 0x13 | tid.
func (TxLogCodec) TablePrefix(tid uint32) []byte { return AppendTablePrefix(nil, TxLog, tid) }

// key returns the key of entry ordinal of transaction tx.
func (TxLogCodec) Key(dst []byte, tid uint32, tx int64, ordinal uint32) []byte {
	dst = encoding.AppendTimeAsc(AppendTablePrefix(dst, TxLog, tid), tx)
	return AppendOrdered(dst, uint64(ordinal))
}

// decode parses the part of a key after 0x13 | tid.
func (TxLogCodec) Decode(b []byte) (tx int64, ordinal uint32, err error) {
	if len(b) <= TimeLen {
		return 0, 0, fmt.Errorf("%w: txlog key of %d bytes after the table id", engine.ErrCorrupt, len(b))
	}
	tx, b, _ = encoding.DecodeTimeAsc(b)
	ord, n := DecodeOrdered(b)
	if n == 0 || n != len(b) || ord > 1<<32-1 {
		return 0, 0, fmt.Errorf("%w: txlog key: ordinal %x", engine.ErrCorrupt, b)
	}
	return tx, uint32(ord), nil
}

// EventCodec is the codec of the event-log keys of changes tables (0x20):
//
//	0x20 | tid | tuple | asc(at) | asc(seq)
type EventCodec struct{}

var EventKeys EventCodec

// keyPrefix returns 0x20 | tid | tuple: the key's whole event log.
func (EventCodec) KeyPrefix(dst []byte, tid uint32, tuple []byte) []byte {
	return append(AppendTablePrefix(dst, Events, tid), tuple...)
}

// appendPos appends asc(at) | asc(seq) to a key prefix.
func (EventCodec) AppendPos(keyPfx []byte, at, seq int64) []byte {
	return encoding.AppendTimeAsc(encoding.AppendTimeAsc(keyPfx, at), seq)
}

// key returns the key of the event of tuple at (at, seq).
func (c EventCodec) Key(dst []byte, tid uint32, tuple []byte, at, seq int64) []byte {
	return c.AppendPos(c.KeyPrefix(dst, tid, tuple), at, seq)
}

// decodePos parses the part of a key after its key prefix.
func (EventCodec) DecodePos(b []byte) (at, seq int64, err error) {
	if len(b) != 2*TimeLen {
		return 0, 0, fmt.Errorf("%w: event key suffix %x", engine.ErrCorrupt, b)
	}
	at, b, _ = encoding.DecodeTimeAsc(b)
	seq, _, _ = encoding.DecodeTimeAsc(b)
	return at, seq, nil
}

// BatchKey returns 0x21 | tid | batch id.
func BatchKey(tid uint32, id string) []byte {
	return append(AppendTablePrefix(nil, Batches, tid), id...)
}

// CheckpointKey returns 0x22 | tid | tuple.
func CheckpointKey(tid uint32, tuple []byte) []byte {
	return append(AppendTablePrefix(nil, Checkpoints, tid), tuple...)
}

func SKCounterKey(tid uint32) []byte { return AppendTablePrefix(nil, SKCounter, tid) }

func CatalogKey(name string) []byte { return append([]byte{Catalog}, name...) }

// AttrNameKey returns 0x04 | tid | ordinal: the attribute names of a table in the
// order its writes first used them (tools print columns in that order).
func AttrNameKey(tid uint32, ordinal uint32) []byte {
	return encoding.AppendUint32(AppendTablePrefix(nil, AttrNames, tid), ordinal)
}

// DecodeAttrNameKey parses the part of an attribute-name key after 0x04 | tid.
func DecodeAttrNameKey(b []byte) (uint32, error) { return decodeOrdinal(b, "attribute-name") }

// AttrTypeKey returns 0x05 | tid | ordinal: the type an attribute of the table
// established when a write first stored a non-null value of it.
func AttrTypeKey(tid uint32, ordinal uint32) []byte {
	return encoding.AppendUint32(AppendTablePrefix(nil, AttrTypes, tid), ordinal)
}

// DecodeAttrTypeKey parses the part of an attribute-type key after 0x05 | tid.
func DecodeAttrTypeKey(b []byte) (uint32, error) { return decodeOrdinal(b, "attribute-type") }

// decodeOrdinal parses the ordinal that is all of a what key after its table id.
func decodeOrdinal(b []byte, what string) (uint32, error) {
	if len(b) != OrdinalLen {
		return 0, fmt.Errorf("%w: %s key of %d bytes after the table id", engine.ErrCorrupt, what, len(b))
	}
	ord, _, _ := encoding.DecodeUint32(b)
	return ord, nil
}

// SchemaKey returns 0x06 | tid | asc(tx): the table's column declaration in
// effect from transaction time tx (0 for the one it was created with).
func SchemaKey(tid uint32, tx int64) []byte {
	return encoding.AppendTimeAsc(AppendTablePrefix(nil, Schemas, tid), tx)
}

// DecodeSchemaKey parses the part of a schema key after 0x06 | tid.
func DecodeSchemaKey(b []byte) (int64, error) {
	if len(b) != TimeLen {
		return 0, fmt.Errorf("%w: schema key of %d bytes after the table id", engine.ErrCorrupt, len(b))
	}
	tx, _, err := encoding.DecodeTimeAsc(b)
	return tx, err
}

// ErasedSKCodec is the codec of the erased surrogate keys (0x40):
//
//	0x40 | tid | ord(sk) -> asc(erasing tx)
type ErasedSKCodec struct{}

var ErasedSKKeys ErasedSKCodec

// key returns the entry of sk.
func (ErasedSKCodec) Key(tid uint32, sk uint64) []byte {
	return AppendOrdered(AppendTablePrefix(nil, ErasedSK, tid), sk)
}

// decodeKey parses the part of a key after 0x40 | tid.
func (ErasedSKCodec) DecodeKey(b []byte) (uint64, error) {
	sk, n := DecodeOrdered(b)
	if n == 0 || n != len(b) {
		return 0, fmt.Errorf("%w: erased-sk key %x after the table id", engine.ErrCorrupt, b)
	}
	return sk, nil
}

// ErasedKeyCodec is the codec of the keyed hashes of erased natural keys (0x41):
//
//	0x41 | tid | hash (32 bytes) | asc(erasing tx) -> empty
type ErasedKeyCodec struct{}

var ErasedKeyKeys ErasedKeyCodec

// HashLen is the length of a keyed hash of a natural key (HMAC-SHA256).
const HashLen = 32

// prefix returns 0x41 | tid | hash: every erasure of one key.
func (ErasedKeyCodec) Prefix(tid uint32, hash []byte) []byte {
	return append(AppendTablePrefix(nil, ErasedKey, tid), hash...)
}

// key returns the entry of the erasure of hash at tx.
func (c ErasedKeyCodec) Key(tid uint32, hash []byte, tx int64) []byte {
	return encoding.AppendTimeAsc(c.Prefix(tid, hash), tx)
}

// decodeKey parses the part of a key after 0x41 | tid.
func (ErasedKeyCodec) DecodeKey(b []byte) (hash []byte, tx int64, err error) {
	if len(b) != HashLen+TimeLen {
		return nil, 0, fmt.Errorf("%w: erased-key key of %d bytes after the table id", engine.ErrCorrupt, len(b))
	}
	tx, _, err = encoding.DecodeTimeAsc(b[HashLen:])
	return b[:HashLen], tx, err
}

// HorizonKey returns 0x42 | tid, whose value asc(horizon) is the transaction
// time through which Vacuum dropped the table's retired records (vacuum.go).
func HorizonKey(tid uint32) []byte { return AppendTablePrefix(nil, Horizon, tid) }

// TupleSplitter splits a natural key's tuple off the front of b, by the key
// schema of its table, returning the tuple and the bytes after it.
type TupleSplitter func(b []byte) (tuple, rest []byte, err error)

// Keyspace returns the prefix byte of the codec's keyspace.
func (r RecordCodec) Keyspace() byte { return r.ks }

// KeyspaceInfo describes one keyspace of the store: its prefix byte and name.
type KeyspaceInfo struct {
	Prefix byte
	Name   string
}

// KeyspaceTable returns every keyspace of the store, in prefix order, for
// dumps, statistics and checks that must cover them all.
func KeyspaceTable() []KeyspaceInfo {
	out := make([]KeyspaceInfo, len(keyspaces))
	for i, ks := range keyspaces {
		out[i] = KeyspaceInfo{Prefix: ks.prefix, Name: ks.name}
	}
	return out
}
