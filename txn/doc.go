// Package txn runs bitempo's write transactions and implements every write path:
// Put, Delete, Upsert and DeleteAt on periods tables, and Apply on changes tables.
//
// A transaction is a function run by Update with read-your-writes; it commits as
// one atomic, synced batch when the function returns nil and leaves no trace when
// it returns an error or panics. Transactions are serialised (one writer at a
// time); readers work on snapshots and are never blocked.
//
// # How a transaction works
//
// The first write to a key loads the key's current versions (the current-state
// index) into memory. Each operation rewrites that in-memory timeline; reads in the
// transaction see it. At commit, each touched key's final timeline is compared with
// the one loaded: a stored version that is no longer there, or whose content
// changed, is retired (its record moves to history with tx_to = the commit's
// transaction time), and each new or changed version is asserted as a new record.
// Versions that did not change are not rewritten, and intermediate states inside a
// transaction never reach the store. So closing a version and inserting its
// successor always land in the same commit.
//
// A transaction over more keys than memory holds groups its writes by key and
// calls Flush between keys: the finished keys' changes go to the store.Writer,
// which with SpillTo moves them to sorted files on disk and commits them by
// atomic ingestion. The result is the same as without Flush, except that
// surrogate keys are numbered in flush order; a flushed key cannot be written
// again in the transaction (ErrKeyFlushed). A CDC batch of that size goes
// through KeyBatch (ApplyByKey): its events sorted by key are applied one key
// at a time, with the result, bytes and errors of Apply; a batch that meets a
// bad event after writing some keys makes the transaction fail to commit.
//
// # Semantics decided here (docs/semantics.md leaves them open)
//
//   - Put of exactly the period and attributes of an existing version is a no-op,
//     so reloading the same versions does not churn surrogate keys. Any other Put
//     replaces what it overlaps, as SQL:2011 UPDATE FOR PORTION OF does, even when
//     the attributes are equal (Put never coalesces).
//   - When one operation creates several new versions, surrogate keys are handed
//     out in ascending valid_from order: for a Put that splits a version, the new
//     version gets the first new sk and the right-hand remnant the next.
//   - An Upsert whose tracked attributes equal the version in effect keeps the
//     stored tracked values (they are equal under the comparison options but may
//     differ in spelling, e.g. trailing spaces) and takes the untracked values
//     from the upsert, for the whole version (type-1 overwrite). If nothing changes
//     byte for byte, it writes nothing.
//   - An Upsert whose new version would touch a tracked-equal neighbour extends the
//     neighbour instead, keeping the neighbour's sk and attributes: the earlier
//     neighbour if there is one (which then also absorbs an equal later neighbour),
//     else the later one. Facts already resolved to those neighbours keep their sk.
//   - DeleteAt at a version's own valid_from removes the version (closing it there
//     would leave it empty). With no version in effect it reports false and writes
//     nothing.
//   - An Upsert that lands on an inferred placeholder (or just before one, with no
//     version in effect) turns the placeholder into the real version: same sk, the
//     upsert's attributes, starting at the upsert's time if that is earlier.
//   - Attribute names must not repeat key column names.
//   - An empty transaction commits nothing and uses no transaction time.
//
// Erasure (erase.go) removes a key's data from every transaction time, the one
// write that rewrites the past: Erase must be the only thing its transaction
// does to the key (ErrErased otherwise), its erasure entry precedes the
// transaction's other changes in the change feed, and Update purges the erased
// bytes from the store's files after the commit (store/purge.go states when
// they are gone). A changes table keeps its batch ids, so replaying an applied
// batch does not bring erased events back.
//
// Changes tables (CDC) have their own rules: Apply's decisions (ties, surrogate
// keys of re-derived versions, the per-key lateness horizon, batch ids) are
// written at the top of apply.go, and the derivation of versions from events in
// store/derive.go (which Verify's from-scratch check uses too); the scenario
// files in testdata/apply teach them by example.
//
// The reasoning behind these decisions, and the alternatives rejected, is in
// docs/design (docs/design/README.md lists it).
package txn
