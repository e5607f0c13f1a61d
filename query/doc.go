// Package query implements bitempo's read paths: as-of point reads, and (in the
// files named after them) snapshots, history, audit, change feeds, surrogate-key
// lookups, batch as-of joins and temporal aggregations.
//
// Every read takes an AsOf: a valid time and a transaction time. The zero
// transaction time means "the latest commit visible to the reader". Reads run on a
// store.Reader: a *store.DB (each call takes its own snapshot) or a
// *store.Snapshot (calls share one consistent view and its cached iterators,
// which is what a hot loop of point reads should use).
//
// A read that finds nothing returns a *Miss, which says why: the key is unknown
// at that transaction time, the valid time is before its first version, in a gap
// between versions, or after its last version. errors.Is(err, ErrNotFound) holds
// for every miss, and errors.Is(err, ErrInGap) etc. for each reason.
package query
