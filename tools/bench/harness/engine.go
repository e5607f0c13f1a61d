package main

// engine is one open database under test. Each method is the work of one
// workload (or its setup) on that database; the harness times the calls, and
// checks the answers against the other engines'. Implementations live in one
// file each: engine_bitempo.go, engine_pebble.go, engine_sqlite.go,
// engine_duckdb.go.
type engine interface {
	// createDim creates the SCD2 table of workloads 1, 2, 3, 5 and 6: a string
	// key, a valid period and the attributes city and tier.
	createDim() error
	// ingest applies changes in the given order as SCD2 upserts with change
	// detection (model.go: upsert), committing durably after every batch
	// changes.
	ingest(changes []change, batch int) error
	// dimVersions calls fn with every current version of the SCD2 table.
	dimVersions(fn func(key string, v version)) error

	// startReads prepares reads of the SCD2 table as it now stands (a snapshot,
	// prepared statements); the table is not written afterwards.
	startReads() error
	// lookup returns the version of key in effect at valid time valid.
	lookup(key string, valid int64) (version, bool, error)

	// loadCorrections builds workload 4's bitemporal table (not timed).
	loadCorrections(c *corrections) error
	// lookupAsOf returns the version of key in effect at valid time valid as
	// known after correction round round (0: the initial load).
	lookupAsOf(key string, valid int64, round int) (version, bool, error)

	// stageFacts puts workload 5's facts where the engine reads them from: in
	// memory for bitempo and Pebble, in a table for SQL engines (not timed).
	stageFacts(facts []probe) error
	// resolve resolves every staged fact to the version in effect at its time,
	// filling out[i] for fact i. Only the attributes must be right (bitempo
	// returns a version's surrogate key and attributes, not its period).
	resolve(out []answer) error

	// snapshot calls fn with the version of every key in effect at valid time
	// valid.
	snapshot(valid int64, fn func(key string, v version)) error

	// createChanges creates workload 7's CDC table.
	createChanges() error
	// applyCDC applies one batch of the CDC feed durably, leaving the derived
	// versions of every key it touched up to date.
	applyCDC(batchID string, events []cdcEvent) error
	// changesVersions calls fn with every version of the CDC table.
	changesVersions(fn func(key string, v version)) error

	// loadAggregates builds workload 8's contracts table and stages its rows
	// (not timed).
	loadAggregates(a *aggData) error
	// backfill computes the features of every staged row (wl_aggregate.go),
	// filling out[i] for row i.
	backfill(out []features) error

	// settle runs the engine's own maintenance after a bulk load, before the
	// load is read (not timed): a full compaction for the LSM engines (bitempo's
	// store.DB.Compact, Pebble's DB.Compact), a WAL checkpoint for SQLite, a
	// CHECKPOINT for DuckDB. Reads prepared earlier (startReads, and the loads
	// of workloads 4 and 8) are prepared again on the settled files.
	settle() error

	close() error
}

// dimBulkLoader is implemented by engines that can load the finished SCD2 table
// in bulk. The harness uses it to build the base table of the read workloads
// (3, 5, 6, 10) when workload 1 did not: always for engines marked bulkBase,
// and when the engine's own ingest of the feed fails, so the reads are still
// measured; the failed ingest is reported as a failure of workload 1.
type dimBulkLoader interface {
	loadDim(final map[string][]version) error
}

// finalDim applies the feed with the model's upsert rules (model.go): the table
// every engine's ingest must end with.
func finalDim(feed []change) map[string][]version {
	out := map[string][]version{}
	for _, c := range feed {
		out[c.key] = upsert(out[c.key], c.at, c.attrs)
	}
	return out
}

// answer is a resolved fact: the version in effect, if any.
type answer struct {
	found bool
	v     version
}

// engineKind is an engine the harness can open.
type engineKind struct {
	name string
	// slowPoint marks engines whose point lookups cost milliseconds: they run
	// only scale.slowLookups lookups.
	slowPoint bool
	// optIn marks engines that run only when --engines names them; about says
	// what they are, for --help.
	optIn bool
	about string
	// bulkBase marks engines whose base table, when workload 1 did not leave
	// one, is loaded in bulk (dimBulkLoader) instead of through their ingest:
	// the SQL engines, whose reads of a table do not depend on how it was
	// written once settled and whose ingest at large takes 16 minutes
	// (SQLite) to more than 17 (DuckDB with 8 GB; with 64 MB it fails), and
	// bitempo on etcd (24 minutes at medium). bitempo and the floor build
	// theirs through their ingest: workload 9 reads bitempo's transaction
	// history, and the floor's ingest takes minutes.
	bulkBase bool
	// open opens a new database in the empty directory dir.
	open func(dir string) (engine, error)
	// version describes the engine's build, for reports.
	version func() string
}

// cacheBytes is every engine's cache (or memory) budget, but duckdb-mem's
// (duckdbMemLimit) and, when --pebble-cache-mib sets it, the engines on
// Pebble's (pebbleSetup).
const cacheBytes = 64 << 20

// engineKinds is every engine, bitempo first: ratios are relative to it.
var engineKinds = []engineKind{
	{name: "bitempo", open: openBitempo, version: bitempoVersion},
	{name: "pebble", open: openPebble, version: pebbleVersion},
	{name: "sqlite", bulkBase: true, open: openSQLite, version: sqliteVersion},
	{name: "duckdb", slowPoint: true, bulkBase: true, open: openDuckDB, version: duckdbVersion},
	{name: "duckdb-mem", slowPoint: true, optIn: true, about: "DuckDB held to " + duckdbMemLimit + " of memory instead of 64 MB",
		bulkBase: true, open: openDuckDBMem, version: duckdbMemVersion},
	{name: "bitempo-etcd", slowPoint: true, optIn: true, about: "bitempo on a 3-member etcd cluster in the process",
		bulkBase: true, open: openBitempoEtcd, version: bitempoEtcdVersion},
}
