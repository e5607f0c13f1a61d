// Package layout owns the stored format of a bitempo store: every keyspace,
// the codec of every kind of key (one type each, which builds, splits and
// knows the lengths of its keys; no other package slices a stored key by a
// number of bytes), where an engine's key prefix ends (Split, for bloom
// filters and prefix seeks), and the format markers that opening checks.
// Record values are encoded by package encoding (encoding.AppendRecordPositionalAt);
// the catalog and the semantics of the records are package store's.
//
// # Key layout (format 3)
//
// Every key starts with a one-byte keyspace prefix; the keyspaces that belong to
// a table continue with its table id ("tid") as an ordered uvarint ("ord(n)",
// layout.go's layout.AppendOrdered: one byte below 248, else a length byte and the
// value's bytes big-endian; bytewise order is numeric order and no form is a
// prefix of another), so a table is one contiguous range of each and a store's
// first 248 tables cost one byte per key. "tuple" is the natural key in encoding.AppendKey form
// (self-delimiting, so a key's records share a prefix that no other key's
// records start with), "desc(t)" a time in encoding.AppendTimeDesc form (newest
// first) and "asc(t)" in AppendTimeAsc form. Keys keep times at fixed width
// and other integers in ordered-uvarint form, since their byte order is the
// index; values, whose order nothing
// depends on, write integers as varints. layout.go owns every key kind (the
// keyspace table, and one codec per kind that builds, splits and knows the
// lengths of its keys); the files named below own the values.
//
// A "record value" (encoding/positional.go) is a head byte (the record's flags,
// whether valid_to and tx_to are open, whether tx_from is left to the key and
// whether the attributes are shared), valid_to as a varint distance from the
// valid_from its key holds unless open (every stored record's key holds one:
// current, history and group index keys; encoding.AppendRecordPositionalAt),
// for a current record (tx_to open) the number of the commit that asserted it
// (a uvarint, 1-3 bytes: 0x07 maps it to the commit's time), for a retired
// record nothing (its history key holds its tx_from), tx_to as a varint
// distance from tx_from unless open, the sk as a varint, then the
// attributes in positional form: a count, then per attribute its ordinal (a varint gap from the previous
// one) and its value in msgpack (encoding/value.go's per-value encoding). The
// ordinals number the table's attribute names (0x04), so no record repeats a
// name, and an open end costs nothing.
//
//	0x01 meta    | name                              -> msgpack scalar
//	    "format" (uint) the layout version: 3, and Open refuses any other before
//	    it writes anything (format.go); "layout" (string) the key layout
//	    within the format, the comparer's name (bitempo.layout.v5), which an
//	    engine without a comparer of its own (etcd) needs to refuse a store of
//	    an earlier development layout; "last_tx" (int64) the newest committed
//	    transaction time; "last_commit" (uint) the newest commit's number;
//	    "next_table" (uint) the next table id. They make the directory
//	    recognisable as bitempo's and transaction time monotonic across
//	    restarts.
//	0x02 catalog | name                              -> msgpack {id, TableDef}
//	    One entry per table, written by CreateTable and rewritten by each
//	    change of its column declaration (0x06 keeps every one of them).
//	0x03 sk      | tid                               -> uint64 (8 bytes BE)
//	    The next surrogate key of the table, written in the batch that uses it, so a
//	    surrogate key is never handed out twice, even after a crash.
//	0x04 attrs   | tid | ordinal (4 bytes BE)       -> attribute name
//	    The table's attribute names, numbered 0, 1, 2... in the order writes (or
//	    DeclareAttrNames) first used them: records store these ordinals instead
//	    of names, and tools print columns in this order. A name is written by
//	    the commit that first stores a record using it, and ordinals are never
//	    reused; a gap or a repeated name is corruption. See attrnames.go.
//	0x05 types   | tid | ordinal (4 bytes BE)       -> column type (3 bytes)
//	    The type each attribute established: written by the commit that first
//	    stores a non-null value of the attribute (its declared type, for a
//	    declared column), never changed. Loads read a file's cells by it, so a
//	    column cannot drift to another type (store/schema.go).
//	0x06 schemas | tid | asc(tx)                    -> msgpack {columns, strict}
//	    The table's column declaration from transaction time tx on: tx 0 for
//	    the one CreateTable wrote, the commit's time for each change (an added
//	    column, a widened type). A read at transaction time T reports the entry
//	    with the greatest tx <= T.
//	0x07 commits | ord(n)                            -> asc(tx)
//	    The transaction time of commit number n: every commit takes the next
//	    number (meta "last_commit" plus one) and writes its entry in its own
//	    batch, one per commit, not per record; an import numbers the times of
//	    the current records it rebuilds after the store's own. The numbers are
//	    1 to last_commit without a gap. A current record holds its commit's
//	    number, where its time would take 8 bytes; the store maps it back as it
//	    decodes the record, through a cache of this keyspace by page shared by
//	    its snapshots (store/commits.go).
//	0x10 current | tid | tuple | desc(valid_from)    -> record value
//	    The current-state index: every record with tx_to = +∞. Versions of a key are
//	    adjacent and newest first, so "the version of K in effect at V, as of now" is
//	    one SeekPrefixGE(0x10|tid|K|desc(V)) whatever the key's correction history.
//	0x11 history | tid | tuple | desc(valid_from) | desc(tx_from) -> record value
//	    Retired records (tx_to set). A record moves here, unchanged but for tx_to,
//	    in the transaction that retires it; its value leaves out the tx_from its
//	    key holds (encoding.AppendRecordRetiredAt), and a record its transaction
//	    re-asserts with the same sk, key, valid_from and attributes (an SCD2
//	    close) keeps no attributes of its own: its value is marked as sharing
//	    those of its successor, the record of its key and valid_from asserted at
//	    its tx_to (in 0x10, or in 0x11 with tx_from = tx_to, which may share in
//	    turn). A read at a past transaction T merges this range with the current
//	    index; for each distinct valid_from it needs one seek (at most one record
//	    per (key, valid_from) is alive at any T), plus a point read per shared
//	    record whose attributes it returns. See Writer.shareAttrs.
//	0x12 sk index| tid | ord(sk) | desc(tx_from) -> tuple | varint(valid_from)
//	    Where a surrogate key's records are, newest first: from tx_from on, the
//	    records of sk are those of the key and valid_from in the value. A record
//	    asserted with the sk, key and valid_from of a record its own transaction
//	    retired (an SCD2 close, a type-1 overwrite) gets no entry: the retired
//	    record's entry already names it. GetBySK at T is one seek here, then the
//	    record of sk with the greatest tx_from <= T among that key and
//	    valid_from's records: one point read in 0x10 and one seek in 0x11.
//	0x13 txlog   | tid | asc(tx) | ord(ordinal)     -> tuple | change...
//	    change: kind (1 byte) | varint (valid_from - the previous change's, or 0)
//	            [| uvarint (tx - tx_from) for a retire or a re-assert]
//	    One entry per key a transaction changed, holding its changes in commit
//	    order: records asserted (kind 0; their tx_from is tx), retired (kind 1),
//	    and retired then re-asserted at the same valid_from (kind 2, the SCD2
//	    close: two changes, with two ordinals, written as one).
//	    The key's ordinal is that of the entry's first change among the
//	    transaction's changes to the table, so every change keeps the position
//	    (tx, ordinal) that change-feed cursors name. Changes(T1, T2] scans one
//	    contiguous range. See txlog.go.
//	0x14 newest  | tid | tuple                       -> varint(valid_from) | record value
//	    A copy of each key's newest current record (the first of its records
//	    in 0x10), its valid_from moved into the value; no entry for a key
//	    without current records. A snapshot at the latest transaction time
//	    reads these, one per key, and goes to 0x10 only for a key whose newest
//	    version starts after the snapshot's valid time. Every commit derives
//	    the entries of the keys whose current records it wrote from those
//	    writes and the committed records (store/newest.go), so no write path
//	    keeps them by itself; an import writes them per key.
//	0x20 events  | tid | tuple | asc(at) | asc(seq)  -> msgpack [op, attrs | nil]
//	    The per-key CDC event log of a changes table, from which its versions
//	    derive (invariant 6). See events.go.
//	0x21 batches | tid | batch id                    -> int64 commit tx
//	    Batch ids applied to a changes table, for idempotent re-application.
//	0x22 checkpoints | tid | tuple                   -> msgpack [through, open, from, attrs | nil]
//	    The derivation state of a key just before valid time `through`, replacing
//	    the events older than the table's lateness horizon, which were compacted.
//	0x30 groups  | tid | group tuple | 0x00 | tuple | desc(valid_from)                -> record value less group attrs
//	0x30 groups  | tid | group tuple | 0x01 | tuple | desc(valid_from) | desc(tx_from) -> record value less group attrs
//	    The temporal group index of tables declared with GroupBy: a copy of every
//	    record filed under its group attributes' values, current records (0x00)
//	    apart from retired ones (0x01), so "the versions of group G active at
//	    (V, T)" is a range scan of G that touches no other group. The value is
//	    the record's exact value (shared attributes included) without the
//	    GroupBy attributes, which the group tuple holds: a reader puts back
//	    each one the value lacks and gets the record's value byte for byte.
//	    See store/groups.go and store/groupvalues.go.
//	0x40 erased-sk  | tid | ord(sk)                  -> asc(erasing tx)
//	    The surrogate keys whose records an erasure removed, so GetBySK says
//	    "erased" rather than "unknown". See erase.go.
//	0x41 erased-key | tid | hash (32 bytes) | asc(erasing tx) -> empty
//	    The keyed hash (HMAC-SHA256 under meta "erase_secret") of every erased
//	    natural key: "was K erased?" is one seek, and no personal data stays.
//	    An erasure also leaves a transaction-log entry at its transaction whose
//	    value is 0x00 | hash | uvarint records | reason (no tuple starts with
//	    0x00). Meta "erase_secret" holds the hash key (32 random bytes, made
//	    with the store) and "purge_pending" marks erased bytes that may still
//	    be in the engine's files (purge.go).
//	0x42 horizon    | tid                            -> asc(horizon)
//	    The transaction time through which Vacuum dropped the records of a
//	    table declared with RetainTx: reads before it fail with
//	    ErrBeforeHorizon. See vacuum.go.
//
// An SCD2 change that closes a version writes six keys: the retired record
// into 0x11 (its 0x10 key is overwritten by the closed copy), the closed copy
// and the new version into 0x10, one sk-index entry for the new version, one
// transaction-log entry for the key, and the key's newest-version entry (0x14);
// the closed version's attributes are stored in 0x10 once, and the new
// version's twice (0x10 and 0x14). The figures below predate 0x14, which adds
// one current record's bytes per key, not per version. On 20,000 keys with 5 SCD2 changes each (two attributes, an
// int axis, int64 keys) they took 127 logical bytes per version (current 44,
// history 28, sk index 24, log 31; format 1: 321, with eight keys; this
// layout's first form, with 4-byte table ids and log ordinals, 8-byte
// surrogate keys in keys and a change per record in the log: 145); with
// 10-character string keys and microsecond valid times, 10 changes per key
// loaded in four transactions, 120 (current 52, history 12, sk index 35,
// log 22). What remains is mostly the fixed-width times of keys (8 bytes
// each, kept for their order), the tuple that the sk index and the log
// repeat, and the absolute tx_from of current records (see
// docs/design/fold-retired-records.md for the one structural saving left and
// why it is not taken).
//
// # Key prefixes, filters and the comparer
//
// Keys are ordered bytewise, by a Pebble comparer of bitempo's own name
// (split.go) whose Split says where a key's "engine prefix" ends: in the
// current index, history and the event log (0x10, 0x11, 0x20) after ks | tid
// | the tuple's first component, in the sk index (0x12) after ks | tid | sk;
// every other key is all prefix. Every table file holds a bloom filter of
// these prefixes (10 bits each, on every level), so a read of one key
// (VersionAt, reads at a past transaction, KeyVersions before a write,
// GetBySK, a key's events) seeks with SeekPrefixGE and skips every file that
// does not hold the key, and a scan steps to the next key with NextPrefix.
// The split is found from the key's front (a tuple does not say how many
// components it has), which keeps Pebble's contract (bytewise order equals
// (prefix, suffix) order; a prefix splits as itself) for every byte string,
// planted keys included; so a composite key's filter holds its first column
// only. layout.go decides the rule per keyspace.
//
// Two more table options follow from the layout (split.go). Values stay
// beside their keys: Pebble would move the value of every key but the first
// of a prefix into a separate value block, which suits MVCC versions but not
// suffixes that are valid and transaction times a read picks anywhere in a
// key's timeline (each such read would pay a second block). And index blocks
// are 256 KiB, so a table file has a one-level index and a seek reads one
// index block rather than two.
//
// Format 3 is format 2 with commit numbers in current records and keyspace
// 0x07; the keys, their order and the comparer are format 2's. A format-2
// store is refused with ErrFormat, like format 1, and moved by its own
// build's export and this build's import (format.go).
//
// Format 2 was released as bitempo.layout.v5. Development builds wrote format-2 stores
// with Pebble's default comparer (no split, no filters), and later with the
// comparer bitempo.layout.v2 (4-byte table ids, fixed-width surrogate keys
// and log ordinals, absolute valid_to), under the same format marker; opening
// tells them apart by the comparer name in the MANIFEST (the Pebble engine
// reads it before Pebble opens the store) or, on an engine without one, by
// meta "layout", and refuses them with ErrFormat, like format 1 (format.go).
package layout
