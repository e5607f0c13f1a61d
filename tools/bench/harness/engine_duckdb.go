package main

import (
	"cmp"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"runtime"
	"slices"

	"github.com/duckdb/duckdb-go/v2"
)

// duckdbEngine is DuckDB through duckdb-go, on a persistent database file, used
// the way its users use it: set-based statements per batch, the Appender for
// bulk rows, the native ASOF JOIN for the batch resolve and window functions for
// the CDC recompute. The memory limit is the shared 64 MiB budget (DuckDB has no
// separate cache; it spills to a temporary directory beyond it), or
// duckdbMemLimit for the duckdb-mem engine, threads one per core, commits durable (DuckDB syncs its WAL at commit). Tables have no index:
// DuckDB's ART indexes slow appends and deletes and do not serve range
// predicates such as valid_from <= t.
type duckdbEngine struct {
	db                         *sql.DB
	conn                       *sql.Conn
	lookupStmt, lookupAsOfStmt *sql.Stmt
}

// duckdbMemLimit is the duckdb-mem engine's memory limit: enough for DuckDB to
// finish every workload at large scale (the 64 MB of the duckdb engine runs out
// on the ingest, the resolve and the backfill there), a third of the benchmark
// machine's memory.
const duckdbMemLimit = "8GB"

func openDuckDB(dir string) (engine, error) { return openDuckDBLimited(dir, "64MB") }

func openDuckDBMem(dir string) (engine, error) { return openDuckDBLimited(dir, duckdbMemLimit) }

// openDuckDBLimited opens a DuckDB database in dir held to memoryLimit (DuckDB's
// memory_limit setting).
func openDuckDBLimited(dir, memoryLimit string) (engine, error) {
	cfg := url.Values{}
	cfg.Set("threads", fmt.Sprint(runtime.NumCPU()))
	cfg.Set("memory_limit", memoryLimit)
	cfg.Set("temp_directory", filepath.Join(dir, "spill"))
	connector, err := duckdb.NewConnector(filepath.Join(dir, "bench.duckdb")+"?"+cfg.Encode(), nil)
	if err != nil {
		return nil, err
	}
	db := sql.OpenDB(connector)
	db.SetMaxOpenConns(1) // temporary tables and transactions live on one connection
	conn, err := db.Conn(context.Background())
	if err != nil {
		return nil, errors.Join(err, db.Close())
	}
	return &duckdbEngine{db: db, conn: conn}, nil
}

func duckdbVersion() string { return duckdbVersionLimited("64 MB") }

func duckdbMemVersion() string { return duckdbVersionLimited(duckdbMemLimit) }

// duckdbVersionLimited describes the DuckDB build and the memory limit.
func duckdbVersionLimited(memoryLimit string) string {
	v, err := sqlVersion("duckdb", "", "SELECT version()")
	if err != nil {
		return "?"
	}
	return "DuckDB " + v + " via " + moduleVersion("github.com/duckdb/duckdb-go/v2") + " (persistent file, " + memoryLimit + " memory limit)"
}

func (e *duckdbEngine) exec(stmts ...string) error {
	for _, s := range stmts {
		if _, err := e.conn.ExecContext(context.Background(), s); err != nil {
			return fmt.Errorf("%w: %s", err, s)
		}
	}
	return nil
}

// appendRows bulk-appends rows to table through DuckDB's Appender.
func (e *duckdbEngine) appendRows(catalog, table string, n int, row func(i int) []driver.Value) error {
	return e.conn.Raw(func(dc any) error {
		a, err := duckdb.NewAppender(dc.(driver.Conn), catalog, "", table)
		if err != nil {
			return err
		}
		for i := range n {
			if err := a.AppendRow(row(i)...); err != nil {
				return errors.Join(err, a.Close())
			}
		}
		return a.Close()
	})
}

// inTx runs fn in a transaction on the engine's connection.
func (e *duckdbEngine) inTx(fn func() error) error {
	if err := e.exec("BEGIN TRANSACTION"); err != nil {
		return err
	}
	if err := fn(); err != nil {
		return errors.Join(err, e.exec("ROLLBACK"))
	}
	return e.exec("COMMIT")
}

func (e *duckdbEngine) createDim() error {
	return e.exec(
		`CREATE TABLE dim (key VARCHAR NOT NULL, valid_from BIGINT NOT NULL, valid_to BIGINT NOT NULL,
			city VARCHAR NOT NULL, tier BIGINT NOT NULL)`,
		`CREATE TEMP TABLE batch_keys (key VARCHAR)`,
		`CREATE TEMP TABLE dead (key VARCHAR, valid_from BIGINT)`,
	)
}

// loadDim appends the finished table (dimBulkLoader).
func (e *duckdbEngine) loadDim(final map[string][]version) error {
	var rows [][]driver.Value
	for key, vs := range final {
		for _, v := range vs {
			rows = append(rows, []driver.Value{key, v.from, v.to, v.attrs.city, v.attrs.tier})
		}
	}
	return e.appendRows("", "dim", len(rows), func(i int) []driver.Value { return rows[i] })
}

// ingest is set-based per batch, as DuckDB wants: stage the batch's keys, read
// their versions with one join, apply the upserts in Go (model.go), then delete
// the rewritten versions with one join and append the new ones.
func (e *duckdbEngine) ingest(changes []change, batch int) error {
	for lo := 0; lo < len(changes); lo += batch {
		part := changes[lo:min(lo+batch, len(changes))]
		if err := e.inTx(func() error { return e.ingestBatch(part) }); err != nil {
			return err
		}
	}
	return nil
}

func (e *duckdbEngine) ingestBatch(part []change) error {
	var keys []string
	byKey := map[string]*timeline{}
	for _, c := range part {
		if byKey[c.key] == nil {
			byKey[c.key] = &timeline{key: c.key}
			keys = append(keys, c.key)
		}
	}
	err := inOrder(
		func() error { return e.exec(`DELETE FROM batch_keys`, `DELETE FROM dead`) },
		func() error {
			return e.appendRows("temp", "batch_keys", len(keys), func(i int) []driver.Value { return []driver.Value{keys[i]} })
		},
		func() error {
			return scanKeyVersions(e.conn, `SELECT key, valid_from, valid_to, city, tier FROM dim SEMI JOIN batch_keys USING (key)`,
				func(key string, v version) { byKey[key].orig = append(byKey[key].orig, v) })
		},
	)
	if err != nil {
		return err
	}
	for _, tl := range byKey {
		slices.SortFunc(tl.orig, func(a, b version) int { return cmp.Compare(a.from, b.from) })
		tl.cur = slices.Clone(tl.orig)
	}
	for _, c := range part {
		tl := byKey[c.key]
		tl.cur = upsert(tl.cur, c.at, c.attrs)
	}
	type row struct {
		key string
		v   version
	}
	var dead, fresh []row
	for _, key := range keys {
		r := diff(byKey[key].orig, byKey[key].cur)
		for _, from := range r.deletes {
			dead = append(dead, row{key: key, v: version{from: from}})
		}
		for _, v := range r.updates {
			dead = append(dead, row{key: key, v: v})
			fresh = append(fresh, row{key: key, v: v})
		}
		for _, v := range r.inserts {
			fresh = append(fresh, row{key: key, v: v})
		}
	}
	return inOrder(
		func() error {
			return e.appendRows("temp", "dead", len(dead), func(i int) []driver.Value { return []driver.Value{dead[i].key, dead[i].v.from} })
		},
		func() error {
			return e.exec(`DELETE FROM dim USING dead WHERE dim.key = dead.key AND dim.valid_from = dead.valid_from`)
		},
		func() error {
			return e.appendRows("", "dim", len(fresh), func(i int) []driver.Value {
				r := fresh[i]
				return []driver.Value{r.key, r.v.from, r.v.to, r.v.city, r.v.tier}
			})
		},
	)
}

// inOrder runs steps until one fails.
func inOrder(steps ...func() error) error {
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

func (e *duckdbEngine) dimVersions(fn func(string, version)) error {
	return scanKeyVersions(e.conn, `SELECT key, valid_from, valid_to, city, tier FROM dim`, fn)
}

func (e *duckdbEngine) startReads() error {
	s, err := e.conn.PrepareContext(context.Background(), sqlLookup)
	e.lookupStmt = s
	return err
}

func (e *duckdbEngine) lookup(key string, valid int64) (version, bool, error) {
	return lookupVersion(e.lookupStmt, valid, key, valid)
}

// loadCorrections bulk-loads the finished bitemporal history (not timed).
func (e *duckdbEngine) loadCorrections(c *corrections) error {
	err := e.exec(`CREATE TABLE old (key VARCHAR NOT NULL, valid_from BIGINT NOT NULL, tx_from BIGINT NOT NULL,
		valid_to BIGINT NOT NULL, tx_to BIGINT NOT NULL, city VARCHAR NOT NULL, tier BIGINT NOT NULL)`)
	if err != nil {
		return err
	}
	var rows [][]driver.Value
	for k, key := range c.keys {
		for _, r := range c.records(k) {
			rows = append(rows, []driver.Value{key, r.from, r.txFrom, r.to, r.txTo, r.city, r.tier})
		}
	}
	if err := e.appendRows("", "old", len(rows), func(i int) []driver.Value { return rows[i] }); err != nil {
		return err
	}
	s, err := e.conn.PrepareContext(context.Background(), sqlLookupAsOf)
	e.lookupAsOfStmt = s
	return err
}

func (e *duckdbEngine) lookupAsOf(key string, valid int64, round int) (version, bool, error) {
	return lookupVersion(e.lookupAsOfStmt, valid, key, valid, round, round)
}

// stageFacts appends the facts to a table of the database (not timed).
func (e *duckdbEngine) stageFacts(facts []probe) error {
	if err := e.exec(`CREATE TABLE facts (id BIGINT NOT NULL, key VARCHAR NOT NULL, ts BIGINT NOT NULL)`); err != nil {
		return err
	}
	return e.appendRows("", "facts", len(facts), func(i int) []driver.Value {
		return []driver.Value{int64(i), facts[i].key, facts[i].valid}
	})
}

// resolve is DuckDB's ASOF JOIN, its rows returned to Go.
func (e *duckdbEngine) resolve(out []answer) error {
	return queryAnswers(e.conn, `SELECT f.id, d.valid_from, d.valid_to, d.city, d.tier
		FROM facts f ASOF JOIN dim d ON f.key = d.key AND f.ts >= d.valid_from
		WHERE f.ts < d.valid_to`, out)
}

func (e *duckdbEngine) snapshot(valid int64, fn func(string, version)) error {
	return scanKeyVersions(e.conn, sqlSnapshot, fn, valid, valid)
}

func (e *duckdbEngine) createChanges() error {
	return e.exec(
		`CREATE TABLE events (key VARCHAR NOT NULL, ts BIGINT NOT NULL, seq BIGINT NOT NULL, op INTEGER NOT NULL,
			city VARCHAR, tier BIGINT)`,
		`CREATE TABLE scd (key VARCHAR NOT NULL, valid_from BIGINT NOT NULL, valid_to BIGINT NOT NULL,
			city VARCHAR, tier BIGINT)`,
		`CREATE TEMP TABLE stage (key VARCHAR, ts BIGINT, seq BIGINT, op INTEGER, city VARCHAR, tier BIGINT)`,
		`CREATE TEMP TABLE batch_keys (key VARCHAR)`,
	)
}

// applyCDC appends the batch to a staging table, adds its new events to the
// event table (an anti-join drops duplicates) and recomputes the versions of the
// keys it touched with window functions, in one transaction.
func (e *duckdbEngine) applyCDC(_ string, events []cdcEvent) error {
	return e.inTx(func() error {
		err := e.appendRows("temp", "stage", len(events), func(i int) []driver.Value {
			ev := events[i]
			if ev.del {
				return []driver.Value{ev.key, ev.at, ev.seq, int32(1), nil, nil}
			}
			return []driver.Value{ev.key, ev.at, ev.seq, int32(0), ev.city, ev.tier}
		})
		if err != nil {
			return err
		}
		return e.exec(
			`INSERT INTO events SELECT DISTINCT s.* FROM stage s
				ANTI JOIN events e ON e.key = s.key AND e.ts = s.ts AND e.seq = s.seq`,
			`INSERT INTO batch_keys SELECT DISTINCT key FROM stage`,
			`DELETE FROM scd WHERE key IN (SELECT key FROM batch_keys)`,
			sqlDerive,
			`DELETE FROM batch_keys`,
			`DELETE FROM stage`,
		)
	})
}

func (e *duckdbEngine) changesVersions(fn func(string, version)) error {
	return scanKeyVersions(e.conn, `SELECT key, valid_from, valid_to, city, tier FROM scd`, fn)
}

// loadAggregates appends the contracts and the rows to tables of the database
// (not timed).
func (e *duckdbEngine) loadAggregates(a *aggData) error {
	err := e.exec(`CREATE TABLE contracts (user_id VARCHAR NOT NULL, valid_from BIGINT NOT NULL, contract_id VARCHAR NOT NULL,
			valid_to BIGINT NOT NULL, amount BIGINT NOT NULL, status VARCHAR NOT NULL)`,
		`CREATE TABLE lr (id BIGINT NOT NULL, user_id VARCHAR NOT NULL, ts BIGINT NOT NULL)`)
	if err != nil {
		return err
	}
	var rows [][]driver.Value
	for _, c := range a.contracts {
		for _, v := range c.versions {
			rows = append(rows, []driver.Value{c.user, v.from, c.id, v.to, v.amount, v.status})
		}
	}
	return inOrder(
		func() error {
			return e.appendRows("", "contracts", len(rows), func(i int) []driver.Value { return rows[i] })
		},
		func() error {
			return e.appendRows("", "lr", len(a.rows), func(i int) []driver.Value {
				return []driver.Value{int64(i), a.rows[i].user, a.rows[i].ts}
			})
		},
	)
}

// backfill is the same grouped join as SQL, run by DuckDB's hash join and
// aggregation.
func (e *duckdbEngine) backfill(out []features) error { return queryFeatures(e.conn, out) }

// settle writes the write-ahead log into the database file.
func (e *duckdbEngine) settle() error {
	return e.exec("CHECKPOINT")
}

func (e *duckdbEngine) close() error {
	var errs []error
	for _, s := range []*sql.Stmt{e.lookupStmt, e.lookupAsOfStmt} {
		if s != nil {
			errs = append(errs, s.Close())
		}
	}
	return errors.Join(append(errs, e.conn.Close(), e.db.Close())...)
}
