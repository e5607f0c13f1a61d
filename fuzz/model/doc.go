// Package model is the reference model of bitempo's periods tables (and, in
// cdc.go, of the derivation of changes tables from their events): a plain,
// in-memory implementation of the semantics in docs/semantics.md (and the decisions
// written down in package txn's doc), written for clarity rather than speed. It
// is the oracle the randomized tests and fuzz targets compare the store against.
//
// The model shares no code with the store (it uses package encoding only for the
// order of attribute encodings, which the CDC rules define by it, and package
// store only to translate a table declaration): a table is a list of records, each a
// version (key, valid period, surrogate key, attributes, inferred flag) with the
// transaction period in which it was believed. Writes rewrite a key's timeline in
// a transaction; Commit compares each touched key's final timeline with the one it
// started from, retires the records that are gone or changed and asserts the new
// ones, all at the commit's transaction time. Reads filter the record list.
//
// Keys are strings. Attribute values must be of the canonical types of package
// encoding (nil, bool, int64, uint64 above math.MaxInt64, float64, string,
// []byte, time.Time); the model rejects others rather than converting them, and
// keeps times as the store does, in UTC truncated to the microsecond.
//
// # Semantics, stated from scratch
//
//  1. Put(key, attrs, [from, to)) replaces [from, to) of the key's timeline with one
//     version holding attrs (SQL:2011 FOR PORTION OF). A version overlapping the
//     period keeps its surrogate key on what survives left of the period; what
//     survives right of it keeps the surrogate key only if nothing survives on the
//     left, and otherwise (a split) gets a new one. New surrogate keys are handed
//     out in ascending valid_from order: the Put's version first, then a split's
//     right remnant. A Put of exactly the period and attributes of a stored
//     (non-inferred) version changes nothing. Put never coalesces.
//  2. Delete(key, [from, to)) is Put without the new version: it leaves a gap.
//  3. Upsert(key, attrs, at) compares the tracked attributes (under the table's
//     comparison options) with the version in effect at at. Equal: the version
//     keeps its surrogate key, period and tracked values and takes every untracked
//     value from the upsert (untracked attributes the upsert lacks are dropped);
//     if that changes nothing byte for byte, nothing is written. Different: the
//     version in effect, [a, b), ends at at (or goes, when a = at) and the new
//     version covers [at, b). No version in effect: the new version covers
//     [at, s), s being the start of the next version or +∞. A new version that
//     would touch (to == from) a tracked-equal neighbour is not created: the
//     earlier neighbour is extended over it (and absorbs an equal later neighbour
//     too), else the later neighbour is extended back; neighbours keep their
//     surrogate keys and attributes.
//  4. DeleteAt(key, at) ends the version in effect at at (removes it when it starts
//     at at) and reports whether there was one.
//  5. Tracked equality is null-safe (an absent attribute is null; null equals only
//     null). Numbers of any canonical type (int64, uint64, float64 and
//     encoding.Decimal, whose scale does not count: 1.5 equals 1.50, though
//     their records differ byte for byte) compare by exact value, a float
//     standing for the decimal its shortest representation reads (what
//     strconv.FormatFloat(f, 'g', -1, 64) prints, as PostgreSQL and Spark convert
//     a float to NUMERIC). With Round, both are first rounded to Scale decimal
//     places, half away from zero, as SQL's ROUND does (so 1.23450 and 1.2345 are
//     equal at scale 4, and 1.005 rounds to 1.01 at scale 2). NaN equals NaN and
//     infinities equal themselves; they are never rounded. Strings are optionally
//     trimmed of Unicode white space and compared under Unicode simple case
//     folding (strings.EqualFold). Bytes compare exactly; times compare as
//     instants at microsecond precision, whatever the options; values of
//     different kinds (number, string, bytes, bool, time) are never equal.
//  6. A transaction's intermediate states never become records. A version whose
//     content (valid period, surrogate key, attributes byte for byte, inferred
//     flag) is unchanged at commit is not rewritten. A commit that changes nothing
//     uses no transaction time, and the surrogate keys it allocated are handed out
//     again, as are those of an aborted transaction.
//  7. A record is alive at transaction time tx when tx_from <= tx < tx_to; a
//     current record (tx_to = +∞) also at tx = +∞, so reading at +∞ reads the
//     current state. Get at (v, tx) returns the alive record covering v, or why
//     there is none: no record of the key is alive (unknown key), v is before
//     the first, at or after the end of the last, or between two (in a gap).
//  8. Erase(key) removes, at commit, every record of the key at every
//     transaction time: every read then answers as for a key never written. It
//     refuses a key the table holds no record of, and a key the transaction
//     changed or erased already (later writes of the key in it are refused too).
//     Surrogate keys are never reused. A commit whose only write is an erasure
//     uses a transaction time.
//  9. Vacuum(now) moves each table's retention horizon to min(now - RetainTx,
//     the last commit) when that is later, as a commit of its own, and drops
//     the records retired at or before it; reads before the horizon fail with
//     ErrBeforeHorizon, reads at or after it are unchanged.
//
// Rule 5 is stricter than docs/semantics.md, which names the options but not the
// rounding of ties, the reading of floats or the folding table; the model
// follows SQL (ROUND on NUMERIC, floats read as their shortest decimal) and
// Unicode simple folding, as store.CompareOptions documents. Package txn's
// change detection differs on such values (it rounds the binary value half to
// even, compares integers with floats through float64, and folds case as
// ToLower(ToUpper(s))), so the randomized tests draw them only when asked
// (TestModel's -model.edge).
package model
