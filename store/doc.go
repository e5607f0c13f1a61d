// Package store opens a bitempo database on Pebble and owns its on-disk layout: the
// catalog of tables, the record keyspaces, transaction-time and surrogate-key
// allocation, low-level reads on consistent snapshots, atomic commits, and Verify.
// Writes are composed by package txn and reads by package query; both reach Pebble
// only through this package.
//
// # Key layout
//
// Every key starts with a one-byte keyspace prefix. Record keyspaces continue with
// the 4-byte big-endian table id, so a table is one contiguous key range. "tuple" is
// the natural key in encoding.AppendKey form (self-delimiting), "desc(t)" a time in
// encoding.AppendTimeDesc form (newest first) and "asc(t)" in AppendTimeAsc form.
//
//	0x01 meta    | name                              -> msgpack scalar
//	    "format" (uint) the layout version, "last_tx" (int64) the newest committed
//	    transaction time, "next_table" (uint) the next table id. They make the
//	    directory recognisable as bitempo's and transaction time monotonic across
//	    restarts.
//	0x02 catalog | name                              -> msgpack TableDef
//	    One entry per table, written once by CreateTable.
//	0x03 sk      | tid                               -> uint64 (8 bytes BE)
//	    The next surrogate key of the table, written in the batch that uses it, so a
//	    surrogate key is never handed out twice, even after a crash.
//	0x10 current | tid | tuple | desc(valid_from)    -> encoding.RecordValue
//	    The current-state index: every record with tx_to = +∞. Versions of a key are
//	    adjacent and newest first, so "the version of K in effect at V, as of now" is
//	    one SeekGE(0x10|tid|K|desc(V)) whatever the key's correction history.
//	0x11 history | tid | tuple | desc(valid_from) | desc(tx_from) -> encoding.RecordValue
//	    Retired records (tx_to set). A record moves here, unchanged but for tx_to,
//	    in the transaction that retires it. A read at a past transaction T merges
//	    this range with the current index; for each distinct valid_from it needs one
//	    seek (at most one record per (key, valid_from) is alive at any T).
//	0x12 sk index| tid | sk (8 bytes BE) | desc(tx_from) -> tuple | asc(valid_from)
//	    Every record of a surrogate key, newest first: GetBySK at T is one seek here
//	    plus one point read in 0x10 or 0x11.
//	0x13 txlog   | tid | asc(tx) | ordinal (4 bytes BE) -> msgpack [op, tuple, valid_from, tx_from]
//	    One entry per record asserted (op 0) or retired (op 1) by transaction tx, in
//	    commit order: the change feed Changes(T1, T2] scans one contiguous range.
//	0x20 events  | tid | tuple | asc(at) | asc(seq)  -> msgpack event (changes tables)
//	    The per-key CDC event log from which a changes table's versions derive.
//	0x21 batches | tid | batch id                    -> int64 commit tx
//	    Batch ids applied to a changes table, for idempotent re-application.
//	0x30 groups  | tid | group tuple | tuple | desc(valid_from) | desc(tx_from) -> nil
//	    Temporal group index of tables declared with GroupBy.
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
//  5. The sk index, the transaction log and the catalog agree with the records.
//
// # Concurrency
//
// One writer at a time: Commit is serialised by the DB, and package txn holds the
// writer lock for a whole transaction (bbolt's model). Readers use Pebble
// snapshots and never block or are blocked by the writer. A Snapshot is a
// consistent view for one goroutine; it caches iterators and is not safe for
// concurrent use.
//
// # Portability
//
// Reads and writes reach Pebble through a small boundary (kv.go): bounded ordered
// iteration, point get, consistent snapshot and atomic batch commit. That is all an
// ordered replicated store such as etcd offers, so the layout and transactions can
// move there; Pebble-only tuning stays behind the boundary.
package store
