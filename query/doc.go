// Package query implements bitempo's read paths: as-of point reads, and (in the
// files named after them) snapshots, history, audit, change feeds, surrogate-key
// lookups, batch as-of joins and temporal aggregations.
//
// Every read takes an AsOf: a valid time and a transaction time. The zero
// transaction time means "the latest commit visible to the reader". Reads run on a
// store.Reader: a *store.DB (each call takes its own snapshot) or a
// *store.Snapshot (calls share one consistent view and its cached iterators,
// which is what a hot loop of point reads should use). GetRow is Get read in
// place, as a store.Row whose attributes the loop reads through store.AttrRef
// accessors: on a snapshot it allocates nothing at the latest transaction time.
//
// A read that finds nothing returns a *Miss, which says why: the key is unknown
// at that transaction time, the valid time is before its first version, in a gap
// between versions, or after its last version. errors.Is(err, ErrNotFound) holds
// for every miss, and errors.Is(err, ErrInGap) etc. for each reason.
//
// # Scans
//
// Snapshot, History, HistoryRange, Audit, Changes and Gaps return iter.Seq2
// sequences. Each reads one consistent snapshot from the start of the loop to its
// end, so commits made during the loop change nothing it returns, and releases
// its iterators (and, on a *store.DB, its snapshot) when the loop ends, however it
// ends. A failure to read is the last pair a sequence yields. Scans select keys
// with a KeyRange: a prefix of leading key columns, and/or a [Start, End) range.
//
// SnapshotRows and HistoryRows are Snapshot and HistoryRange read in place:
// a callback gets one reused store.Row per version, its attributes read
// through store.AttrRef accessors or Row.Walk, and Row.Version copies one
// out as the map API returns it. Neither builds a Version or a map per row;
// at the latest transaction time neither allocates per row, nor does
// HistoryRows at an older one but for a retired record that shares its
// successor's attributes and whose successor is not the current record
// beside it (store.Snapshot.ScanHistoryRows). HistoryRows takes
// HistoryOptions: it clips the row's period in place, and with Limit and
// Cursor it pages as HistoryPage does, returning the next page's cursor.
// History, HistoryRange and HistoryPage copy rows out of the same walk.
// ChangesRows is Changes read in place: a reused ChangeRow per change, its
// Row the record (nil for an erasure, which Erasure describes) and its
// Cursor the change's; it allocates nothing per change but for an erasure
// and, as HistoryRows, a retired record whose successor is not the current
// record beside it. Changes and ChangesPage copy rows out of the same walk.
//
// # Behaviour that docs/semantics.md leaves open
//
// The reasons for these choices, and the alternatives set aside, are in
// docs/design.
//
//   - A transaction time after the newest commit reads as the newest commit.
//     Versions are returned as stored: one read at an old transaction time shows
//     in TxTo the retirement that came later, as Get does. The change feed is the
//     exception: Changes(since, until] reads as known at until (a later TxTo shows
//     as store.Infinity), so a window reads the same whenever it is read.
//   - Snapshot leaves out keys with no version at its point rather than yielding
//     their misses; Get explains a single key's miss.
//   - Paging uses cursors, never offsets: a cursor is an opaque URL-safe string
//     naming the last row returned (its key and valid_from, or its transaction-log
//     position) and, for History, the transaction time the first page read, which
//     every later page reads again, so a commit between pages neither skips nor
//     repeats rows.
//   - Gaps reports holes between consecutive versions of a key. A closed last
//     version is not a gap (reads after it miss with ErrAfterLast), and a key with
//     no version at the transaction time is not reported at all.
//   - GetBySK of a surrogate key whose version a transaction removed (deleted, or
//     absorbed by a neighbour) is an *SKMiss that names the retiring transaction,
//     rather than the last record of the key: a fact holding that sk resolves
//     again, or reads the version as known at its own load time.
//   - Resolve keeps the input order and reports the first miss in input order
//     under MissError, so its errors do not depend on how the batch was split.
//     Facts at the newest commit are merged against the current index; facts
//     at an older transaction time are merged too, with one forward pass over
//     the current index and one over history that reads each probed key's
//     versions alive at that time once (store/lookuppast.go), unless the key
//     has many more records than facts asking about it: those facts are then
//     answered one by one, as Get answers them, until one misses or, with
//     other facts of its key at that time, lies past what that time knew,
//     which reads the rest of the key's versions.
//   - Resolve and large group backfills use every core (GOMAXPROCS), each
//     goroutine on a fork of the reader's snapshot; neither takes a knob for
//     it, GOMAXPROCS being the process's. ResolveRows calls its callback from
//     those goroutines, concurrently; BackfillRows and Backfill yield every row
//     on the caller's goroutine, in input order, with the rows, error and
//     Progress calls of computing the groups one by one
//     (docs/design/backfill-workers.md).
//   - Every read takes its options struct as its last argument, and the zero
//     value reads with the defaults (a callback follows it). Get, GetRow and
//     GetBySK share GetOptions; the other reads have their own.
//   - Projections: Snapshot, History and HistoryRange, Resolve (with Attrs),
//     Get and GetBySK, Audit, and Changes and ChangesPage take a list of
//     attribute names (Project in their options) and decode only those; every
//     other attribute is stepped over in the stored record without being
//     decoded or allocated, and decoding stops after the last projected
//     ordinal. An empty list decodes everything. The store builds a projection
//     once per list of names and keeps it (store.Snapshot.Project). Backfill
//     and the aggregations project by themselves: they decode only the
//     attributes their features read. History, HistoryRange, HistoryPage,
//     Audit and Resolve (with Attrs) can also hand the attributes out still
//     encoded (RawAttrs in their options), for a caller that decodes them
//     itself, as package typed does into structs; a retired record that
//     shares its successor's attributes still comes back decoded.
//     HistoryRows and ChangesRows read every record in place, such a
//     record included.
//   - A projected name that no version holds, including one the table has
//     never stored, is absent from Attrs, as an attribute a version lacks is;
//     it is not an error. A projected read checks the bytes it decodes and
//     steps over, not those after the last projected attribute; store.Verify
//     and unprojected reads check whole records.
//   - Every aggregation (Aggregate, AggregateTable, group and table-wide
//     backfills) keeps int64 and decimal values unboxed and runs SUM, AVG, MIN
//     and MAX over an attribute on int64 state when every value the loaded
//     versions hold of it is an int64 or null, and on decimal state when they
//     are decimals, int64s or nulls (aggint.go). Sums are exact: a final SUM
//     outside int64 is a uint64 when it fits one, else an *AggValueError
//     (ErrAggOverflow). Errors of a group's aggregation name the group.
//   - Decimals (encoding.Decimal) aggregate exactly, on every path
//     (decsum.go):
//     1. SUM of a set holding decimals is a Decimal at the largest scale among
//     the decimals in the set; int64 (and uint64) values in it count as
//     decimals of scale 0. A set of integers only sums as before, to an int64.
//     2. A SUM beyond 18 digits is an *AggValueError naming the feature and
//     the group, matching ErrAggOverflow and ErrAggValue; never a float.
//     3. Decimals and float64s in one SUM or AVG set are an *AggValueError
//     (ErrAggValue), not a float64: a float has no exact decimal value, so
//     the sum could not be exact, and a silent float would hide that a money
//     column also holds floats (an undeclared attribute with MixedTypes, or a
//     column whose declaration changed). Read the floats with a declared
//     decimal column, or round them, to sum them as decimals.
//     4. AVG of a set holding decimals is the exact sum divided by the count
//     of non-null values, rounded half to even at scale min(s + 4, 18), s the
//     SUM's scale; a quotient with more than 18 digits at that scale takes
//     the largest scale down to s at which it fits (it always fits at s
//     unless integers beyond 18 digits are averaged: then ErrAggOverflow).
//     5. MIN and MAX compare decimals numerically with the other numbers;
//     equal numbers order int64 < uint64 < decimal < float64, and equal
//     decimals by scale (1.5 before 1.50), so the result is one value
//     whatever the order of the versions. COUNT_DISTINCT counts numbers
//     equal by value once (1.50, 1.5 and the float64 1.5 are one; 0.1 and the
//     float64 0.1 are two, since the float is not exactly 0.1). LATEST and
//     EARLIEST return the stored Decimal, scale included.
//     The running sum is one 128-bit integer and one count per scale, so
//     adding or removing a version allocates nothing, and a sweep and a point
//     query agree exactly.
//   - Reads never write, and query does not import package txn. Creating
//     inferred members for facts whose key the table does not know yet (a
//     late-arriving dimension member) is a write the caller asks for:
//     txn.ResolveInferred resolves through Resolve, then creates the members
//     in one transaction.
package query
