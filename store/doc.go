// Package store is a bitempo database: the catalog of tables, records and
// their indexes as package layout lays them out, transaction-time and
// surrogate-key allocation, low-level reads on consistent snapshots, the
// writer that packages txn (writes) and query (reads) build on, and Verify.
// It reaches its engine only through package engine: Open puts a store on
// Pebble (package engine/pebble), OpenEngine on any engine, such as etcd
// (the module github.com/bitempo/bitempo/etcd).
//
// The key layout (every keyspace, what its keys and values hold and why it
// exists) is documented in package layout.
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
//  4. Transaction times are strictly increasing; no record, and no commit of
//     the map of commit numbers, is newer than last_tx.
//  5. The sk index, the transaction log, the group index, the newest-version
//     keyspace, the map of commit numbers and the catalog agree with the
//     records: the commit numbers run from 1 to last_commit without a gap,
//     and every current record's number is one of them (commits.go); one sk-index entry per
//     record except the re-assertions described at 0x12, one transaction-log
//     change per assertion and per retirement, one newest-version entry per
//     key with current records, a copy of its first (newest.go). After a Vacuum, through the table's horizon only the newest
//     sk-index entry of each surrogate key stays and the log is empty
//     (vacuum.go). Erased surrogate keys have no record and no sk-index
//     entry; every erased-key entry has its erasure in the log (erase.go).
//  6. A changes table's versions equal a from-scratch derivation of its event
//     log (derive.go; package txn's Apply derives incrementally with the same
//     functions).
//  7. Every record fits the column declaration in effect at its tx_from
//     (schema.go): declared columns hold values of their types, columns that
//     are not nullable are present, a strict table holds nothing undeclared;
//     the catalog holds the newest declaration.
//
// # Concurrency
//
// One writer at a time: Commit is serialised by the DB, and package txn holds the
// writer lock for a whole transaction (bbolt's model). Readers use engine
// views and never block or are blocked by the writer. A Snapshot is a
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
// context's error); those an engine returns are package engine's, re-exported
// here. What the Pebble engine detects and does on damaged files, full disks
// and failed writes is its package documentation's failure model. No read
// error is taken for a missing key: a failed read returns its error, and on
// Pebble a failed table read fails the store (ErrFailed) so that no
// compaction can lose data behind it.
//
// # Engines
//
// The layout runs on any ordered key-value engine behind the engine.Engine interface
// (package engine): consistent views, bounded ordered iterators, atomic ordered commits.
// Open puts a store on Pebble (package engine/pebble); OpenEngine on another engine,
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
// DB.Backup writes an engine checkpoint (Pebble's) of the open store: a transaction-time
// prefix (every commit up to one transaction time, none after) that opens as a
// store as it is (backup.go). DB.BeginImport is the one write path that takes
// transaction times from the caller, to rebuild history recorded elsewhere (a
// full-fidelity export); it fills empty tables only, lays records out with the
// Writer's key and value functions, and leaves last_tx at the newest imported
// time, so invariant 4 holds for every later commit (import.go).
//
// # Portability
//
// Reads and writes reach Pebble through a small boundary (package engine): bounded ordered
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
// An engine that bounds one commit (engine.CommitLimiter: etcd) makes the
// Writer count its writes against the bound as they arrive and fail the
// transaction with ErrCommitTooLarge as soon as they pass it, nothing written
// (writer_limit.go).
package store
