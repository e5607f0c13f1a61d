// Package store opens a bitempo database on Pebble and owns its on-disk layout: the
// catalog of tables, the record keyspaces, transaction-time and surrogate-key
// allocation, low-level reads on consistent snapshots, atomic commits, and Verify.
// Writes are composed by package txn and reads by package query; both reach Pebble
// only through this package.
//
// # Key layout (format 2)
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
// tx_from as a varint unless the key holds it (a retired record's history key does), tx_to
// as a varint distance from tx_from unless open, the sk as a varint, then the
// attributes in positional form: a count, then per attribute its ordinal (a varint gap from the previous
// one) and its value in msgpack (encoding/value.go's per-value encoding). The
// ordinals number the table's attribute names (0x04), so no record repeats a
// name, and an open end costs nothing.
//
//	0x01 meta    | name                              -> msgpack scalar
//	    "format" (uint) the layout version: 2, and Open refuses any other before
//	    it writes anything (format.go); "layout" (string) the key layout
//	    within the format, the comparer's name (bitempo.layout.v3), which an
//	    engine without a comparer of its own (etcd) needs to refuse a store of
//	    an earlier development layout; "last_tx" (int64) the newest committed
//	    transaction time; "next_table" (uint) the next table id. They make the
//	    directory recognisable as bitempo's and transaction time monotonic across
//	    restarts.
//	0x02 catalog | name                              -> msgpack {id, TableDef}
//	    One entry per table, written once by CreateTable.
//	0x03 sk      | tid                               -> uint64 (8 bytes BE)
//	    The next surrogate key of the table, written in the batch that uses it, so a
//	    surrogate key is never handed out twice, even after a crash.
//	0x04 attrs   | tid | ordinal (4 bytes BE)       -> attribute name
//	    The table's attribute names, numbered 0, 1, 2... in the order writes (or
//	    DeclareAttrNames) first used them: records store these ordinals instead
//	    of names, and tools print columns in this order. A name is written by
//	    the commit that first stores a record using it, and ordinals are never
//	    reused; a gap or a repeated name is corruption. See attrnames.go.
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
//	0x20 events  | tid | tuple | asc(at) | asc(seq)  -> msgpack [op, attrs | nil]
//	    The per-key CDC event log of a changes table, from which its versions
//	    derive (invariant 6). See events.go.
//	0x21 batches | tid | batch id                    -> int64 commit tx
//	    Batch ids applied to a changes table, for idempotent re-application.
//	0x22 checkpoints | tid | tuple                   -> msgpack [through, open, from, attrs | nil]
//	    The derivation state of a key just before valid time `through`, replacing
//	    the events older than the table's lateness horizon, which were compacted.
//	0x30 groups  | tid | group tuple | 0x00 | tuple | desc(valid_from)                -> record value
//	0x30 groups  | tid | group tuple | 0x01 | tuple | desc(valid_from) | desc(tx_from) -> record value
//	    The temporal group index of tables declared with GroupBy: a copy of every
//	    record (its exact value, shared attributes included) filed under its
//	    group attributes' values, current records (0x00)
//	    apart from retired ones (0x01), so "the versions of group G active at
//	    (V, T)" is a range scan of G that touches no other group. See groups.go.
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
// An SCD2 change that closes a version writes five keys: the retired record
// into 0x11 (its 0x10 key is overwritten by the closed copy), the closed copy
// and the new version into 0x10, one sk-index entry for the new version, and one
// transaction-log entry for the key; the closed version's attributes are
// stored once. On 20,000 keys with 5 SCD2 changes each (two attributes, an
// int axis, int64 keys) they took 127 logical bytes per version (current 44,
// history 28, sk index 24, log 31; format 1: 321, with eight keys; this
// layout's first form, with 4-byte table ids and log ordinals, 8-byte
// surrogate keys in keys and a change per record in the log: 145); with
// 10-character string keys and microsecond valid times, 10 changes per key
// loaded in four transactions, 120 (current 52, history 12, sk index 35,
// log 22). What remains is mostly the fixed-width times of keys (8 bytes
// each, kept for their order), the tuple that the sk index and the log
// repeat, and the absolute tx_from of current records. Not done, by
// decision: folding the retired record of an SCD2 close into its successor's
// current record (as a prior valid_to and tx_from) would drop the history
// entry, about a fifth of the bytes, but grow the current index, which every
// read at the latest transaction time pays for, by about a tenth
// (BENCHMARKS.md, "Where the costs are").
//
// # Key prefixes, filters and the comparer
//
// Keys are ordered bytewise, by a Pebble comparer of bitempo's own name
// (comparer.go) whose Split says where a key's "engine prefix" ends: in the
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
// Two more table options follow from the layout (comparer.go). Values stay
// beside their keys: Pebble would move the value of every key but the first
// of a prefix into a separate value block, which suits MVCC versions but not
// suffixes that are valid and transaction times a read picks anywhere in a
// key's timeline (each such read would pay a second block). And index blocks
// are 256 KiB, so a table file has a one-level index and a seek reads one
// index block rather than two.
//
// Format 2 has not been released. Development builds wrote format-2 stores
// with Pebble's default comparer (no split, no filters), and later with the
// comparer bitempo.layout.v2 (4-byte table ids, fixed-width surrogate keys
// and log ordinals, absolute valid_to), under the same format marker; Open
// tells them apart by the comparer name in the MANIFEST (and, on an engine
// without one, by meta "layout") and refuses them with layout.ErrFormat before
// Pebble opens them, like format 1 (format.go): move their data with export
// --all --history and import.
//
// # Invariants
//
// The store keeps, and Verify checks:
//
//  1. Every record has valid_from < valid_to and tx_from < tx_to.
//  2. For each key and each transaction instant, the records alive at that instant
//     have pairwise disjoint valid periods.
//  3. A surrogate key is unique among the records alive at any instant and always
//     names the same natural key.
//  4. Transaction times are strictly increasing; no record is newer than last_tx.
//  5. The sk index, the transaction log, the group index and the catalog agree
//     with the records: one sk-index entry per record except the re-assertions
//     described at 0x12, one transaction-log change per assertion and per
//     retirement. After a Vacuum, through the table's horizon only the newest
//     sk-index entry of each surrogate key stays and the log is empty
//     (vacuum.go). Erased surrogate keys have no record and no sk-index
//     entry; every erased-key entry has its erasure in the log (erase.go).
//  6. A changes table's versions equal a from-scratch derivation of its event log
//     (checked by package txn, which owns the derivation, via RegisterCheck).
//
// # Concurrency
//
// One writer at a time: Commit is serialised by the DB, and package txn holds the
// writer lock for a whole transaction (bbolt's model). Readers use Pebble
// snapshots and never block or are blocked by the writer. A Snapshot is a
// consistent view for one goroutine; it caches iterators and is not safe for
// concurrent use.
//
// A write, CreateTable, DeclareAttrNames, RawWrite or Close called from inside
// the function of a write transaction of the same store (txn.Update runs it
// through Writer.Run) fails at once with ErrReentrant instead of waiting for
// itself; reentry.go says how such a call is recognised without goroutine ids.
//
// # Failure model
//
// Every error wraps one of the sentinels in errors.go (or, for Compact, the
// context's error). No panic reaches a caller and no background goroutine ends
// the process: Pebble's corruption reports go to an event handler instead of
// Logger.Fatalf, and Pebble's Fatalf records the failure and unwinds only on a
// caller's goroutine (failure.go).
//
// What is detected, and what the store does:
//
//   - A damaged table file (any checksum mismatch, a missing, truncated or
//     swapped file): ErrCorrupt naming the file, from Open, from the read that
//     meets it, from Verify, or from Pebble's background table-stats collector
//     right after Open. From then on the DB refuses every read and write with
//     ErrCorrupt until it is reopened. Not recoverable by the store: restore a
//     backup.
//   - A damaged MANIFEST, a missing or dangling marker.manifest.* file, or an
//     OPTIONS file Pebble cannot parse: Open fails with ErrCorrupt and changes
//     nothing in the directory. Open reads the current MANIFEST's chunks and
//     checksums itself before Pebble opens the store (logscan.go), because
//     Pebble reads a MANIFEST up to its first bad record and then deletes, as
//     obsolete, every table file the rest names. (Rejected: a read-only open
//     first, which succeeds on a MANIFEST damaged in its later records, so the
//     read-write open that follows still deletes.) A torn last record, which a
//     crash leaves, is not damage: it was never acknowledged.
//   - A damaged live write-ahead log (a bad chunk followed by readable chunks of
//     the same log, or any bad chunk in a log older than the newest): Open fails
//     with ErrCorrupt and ErrDamagedWAL and changes nothing; Pebble itself would
//     replay up to the damage and silently drop every later acknowledged commit,
//     since the format bitempo pins writes no sync offsets that let it tell. With
//     Options.RecoverWAL, Open keeps the transactions before the damage, drops the
//     damaged one and every later one (so the store holds a prefix of its
//     history), moves the original log files into a lost-wal-* directory of the
//     store and reports, in DB.Recovery, the newest transaction kept and the
//     transaction times of the dropped ones it could still read. A torn last
//     record of the newest log is dropped silently, as before.
//   - A deleted live write-ahead log, when it was the only one: Open fails with
//     ErrCorrupt and ErrDamagedWAL, naming the range of log file numbers the
//     missing log lies in, and changes nothing. The MANIFEST's version edits
//     record the oldest unflushed log (manifestedit.go decodes them, and claims
//     nothing on an edit it cannot decode); Pebble replays every *.log numbered
//     at least that and never learns that one is missing. The check fires when
//     no such log exists and an OPTIONS file numbered above that minimum does:
//     Pebble's Open writes OPTIONS right after creating its log, so that log
//     existed and was live. (Rejected: requiring the log numbered exactly the
//     minimum, which does not exist after any reopen: Open's own flush records a
//     number no log file gets, and a crash before Open creates its log leaves no
//     live log at all, with every commit in table files; both are healthy.) With
//     Options.RecoverWAL, Open opens what the table files hold and DB.Recovery
//     says the log was missing; its commits cannot be listed. If nothing of the
//     store was flushed, not even its own declaration, RecoverWAL fails with
//     ErrCorrupt and ErrNotExist.
//   - A disk that fills up: a commit whose write-ahead log write fails fails with
//     ErrFailed (the store refuses everything until reopened; the commit is
//     absent, or present whole). A commit that must wait for a flush while
//     flushes and compactions keep failing returns ErrIO after
//     Options.StallTimeout (default 30s) and did not commit; the store then stops
//     creating files and refuses everything, and cannot be closed (Close returns
//     ErrIO; Pebble's commit pipeline is held by the waiting commit): free space
//     and restart the process. Pebble's error lines are rate-limited to 10 per 10
//     seconds, with a count of those suppressed.
//   - A value the decoders would refuse (over MaxValueSize; attributes over
//     MaxAttrsSize): the write fails with ErrTooLarge and nothing of its
//     transaction is written.
//   - The LOCK file deleted or replaced while the store is open: the store also
//     holds an flock(2) on its directory, so a second Open still fails with
//     ErrLocked; and every commit checks that LOCK is the file it locked, failing
//     with ErrLocked (and refusing every later write) once it is not.
//
// Not detected: a write-ahead log truncated at a record boundary (or at a bad
// chunk of the newest log) looks exactly like a crash that lost unsynced
// commits, because nothing on disk records how much of a log was synced: the
// format bitempo pins writes no sync offsets into WAL chunks, and the MANIFEST
// records which logs are live, never their length. The commits in the cut part
// are gone silently. Nor is a deleted live log detected when another live log
// remains (nothing records which log numbers existed: they come from the one
// counter every file uses), or when every live log is deleted but the oldest
// unflushed one dates from a flush after the store's last Open (no OPTIONS file
// is newer than it). Both are left undetected rather than risk reporting a
// healthy store or a crash as damaged. After a power loss (not a process crash)
// the unsynced tail of the newest log may hold any bytes; if they happen to
// include a readable chunk of the same log after a bad one, Open reports damage
// where there was only a torn write, and RecoverWAL loses only commits that
// were never acknowledged.
//
// # Engines
//
// The layout runs on any ordered key-value engine behind the engine.Engine interface
// (kv.go): consistent views, bounded ordered iterators, atomic ordered commits.
// Open puts a store on Pebble (engine_pebble.go); OpenEngine on another engine,
// such as etcd (the module github.com/bitempo/bitempo/etcd). What only Pebble
// can do (Backup, spilled transactions, purging erased bytes from files,
// RecoverWAL, Compact) is found by type assertion and refused elsewhere with
// ErrUnsupported (Compact does nothing). An engine that several processes write
// (engine.SharedEngine) serialises their transactions with a cross-process write
// lock, refuses the commit of a process that lost it, and gives its views a
// generation: a DB reloads its caches (last transaction time, catalog,
// surrogate key counters, attribute names, erase secret) from any view whose
// generation is not the one they were loaded or last committed at, and at the
// start of every write, so transaction times stay increasing and surrogate keys
// unique across processes.
//
// # Backups and imports
//
// DB.Backup writes a Pebble checkpoint of the open store: a transaction-time
// prefix (every commit up to one transaction time, none after) that opens as a
// store as it is (backup.go). DB.BeginImport is the one write path that takes
// transaction times from the caller, to rebuild history recorded elsewhere (a
// full-fidelity export); it fills empty tables only, lays records out with the
// Writer's key and value functions, and leaves last_tx at the newest imported
// time, so invariant 4 holds for every later commit (import.go).
//
// # Portability
//
// Reads and writes reach Pebble through a small boundary (kv.go): bounded ordered
// iteration, point get, consistent snapshot and atomic batch commit. That is all an
// ordered replicated store such as etcd offers, so the layout and transactions can
// move there; Pebble-only tuning stays behind the boundary. SeekPrefixGE is
// SeekGE confined to one engine prefix (an engine without filters can
// implement it as SeekGE and stop at the prefix's end), and a scan uses
// NextPrefix only where the iterator has it. Two optional
// capabilities go beyond it: DropTable deletes key ranges in its commit, and a
// Writer with spilling on (EnableSpill, bulk.go) commits a transaction larger
// than memory by ingesting one sorted sstable, meta keys included, in one atomic
// step; an engine without ingestion refuses spilling with ErrBulkUnsupported.
package store
