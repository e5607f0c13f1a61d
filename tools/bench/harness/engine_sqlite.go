package main

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"maps"
	"path/filepath"
	"slices"

	_ "github.com/mattn/go-sqlite3" // registers the "sqlite3" driver
)

// sqliteEngine is SQLite through mattn/go-sqlite3 as a careful user sets it up:
// WAL mode with synchronous=FULL (every commit is fsynced, as bitempo's are), a
// 64 MiB page cache, tables clustered on their natural order (WITHOUT ROWID with
// primary key (key, valid_from): the index on (key, valid_from) is the table),
// prepared statements, one connection.
type sqliteEngine struct {
	db *sql.DB
	// prepared on the one connection
	window, insert, update, delete *sql.Stmt
	lookupStmt, lookupAsOfStmt     *sql.Stmt
	insertEvent, insertBatchKey    *sql.Stmt
	stmts                          []*sql.Stmt // every prepared statement, closed by close
}

func openSQLite(dir string) (engine, error) {
	db, err := sql.Open("sqlite3", "file:"+filepath.Join(dir, "bench.sqlite"))
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1) // pragmas and temp tables are per connection
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	e := &sqliteEngine{db: db}
	err = e.exec(
		"PRAGMA journal_mode=WAL",
		"PRAGMA synchronous=FULL",
		"PRAGMA cache_size=-65536", // KiB
	)
	if err != nil {
		return nil, errors.Join(err, db.Close())
	}
	return e, nil
}

func sqliteVersion() string {
	v, err := sqlVersion("sqlite3", ":memory:", "SELECT sqlite_version()")
	if err != nil {
		return "?"
	}
	return "SQLite " + v + " via " + moduleVersion("github.com/mattn/go-sqlite3") + " (WAL, synchronous=FULL, 64 MiB page cache)"
}

func (e *sqliteEngine) exec(stmts ...string) error {
	for _, s := range stmts {
		if _, err := e.db.Exec(s); err != nil {
			return err
		}
	}
	return nil
}

func (e *sqliteEngine) prepare(dst **sql.Stmt, query string) error {
	s, err := e.db.Prepare(query)
	if err != nil {
		return err
	}
	*dst = s
	e.stmts = append(e.stmts, s)
	return nil
}

func (e *sqliteEngine) createDim() error {
	err := e.exec(`CREATE TABLE dim (key TEXT NOT NULL, valid_from INTEGER NOT NULL, valid_to INTEGER NOT NULL,
		city TEXT NOT NULL, tier INTEGER NOT NULL, PRIMARY KEY (key, valid_from)) WITHOUT ROWID`)
	if err != nil {
		return err
	}
	// The versions an upsert can touch: the two latest starting at or before at
	// and the first after it, in one statement.
	return errors.Join(
		e.prepare(&e.window, `SELECT valid_from, valid_to, city, tier FROM (
				SELECT * FROM dim WHERE key = ?1 AND valid_from <= ?2 ORDER BY valid_from DESC LIMIT 2)
			UNION ALL SELECT valid_from, valid_to, city, tier FROM (
				SELECT * FROM dim WHERE key = ?1 AND valid_from > ?2 ORDER BY valid_from LIMIT 1)`),
		e.prepare(&e.insert, `INSERT INTO dim (key, valid_from, valid_to, city, tier) VALUES (?, ?, ?, ?, ?)`),
		e.prepare(&e.update, `UPDATE dim SET valid_to = ?, city = ?, tier = ? WHERE key = ? AND valid_from = ?`),
		e.prepare(&e.delete, `DELETE FROM dim WHERE key = ? AND valid_from = ?`),
	)
}

// ingest runs, per change, one query for the versions the change can touch,
// the upsert rules in Go (model.go) and the resulting DELETE, UPDATE and INSERT
// statements, in one transaction per batch.
func (e *sqliteEngine) ingest(changes []change, batch int) error {
	ctx := context.Background()
	for lo := 0; lo < len(changes); lo += batch {
		tx, err := e.db.Begin()
		if err != nil {
			return err
		}
		window, insert, update, del := tx.Stmt(e.window), tx.Stmt(e.insert), tx.Stmt(e.update), tx.Stmt(e.delete)
		for _, c := range changes[lo:min(lo+batch, len(changes))] {
			orig, err := readWindow(ctx, window, c.key, c.at)
			if err != nil {
				return errors.Join(err, tx.Rollback())
			}
			r := diff(orig, upsert(slices.Clone(orig), c.at, c.attrs))
			for _, from := range r.deletes {
				if _, err := del.Exec(c.key, from); err != nil {
					return errors.Join(err, tx.Rollback())
				}
			}
			for _, v := range r.updates {
				if _, err := update.Exec(v.to, v.city, v.tier, c.key, v.from); err != nil {
					return errors.Join(err, tx.Rollback())
				}
			}
			for _, v := range r.inserts {
				if _, err := insert.Exec(c.key, v.from, v.to, v.city, v.tier); err != nil {
					return errors.Join(err, tx.Rollback())
				}
			}
		}
		if err := tx.Commit(); err != nil {
			return err
		}
	}
	return nil
}

// loadDim inserts the finished table (dimBulkLoader) in one transaction, keys
// and each key's versions in ascending order, so the clustered table's pages
// are filled in order as a bulk load leaves them.
func (e *sqliteEngine) loadDim(final map[string][]version) error {
	tx, err := e.db.Begin()
	if err != nil {
		return err
	}
	ins := tx.Stmt(e.insert)
	for _, key := range slices.Sorted(maps.Keys(final)) {
		for _, v := range final[key] {
			if _, err := ins.Exec(key, v.from, v.to, v.city, v.tier); err != nil {
				return errors.Join(err, tx.Rollback())
			}
		}
	}
	return tx.Commit()
}

// readWindow returns the window statement's versions in ascending order.
func readWindow(ctx context.Context, window *sql.Stmt, key string, at int64) ([]version, error) {
	rows, err := window.QueryContext(ctx, key, at)
	if err != nil {
		return nil, err
	}
	var out []version
	for rows.Next() {
		var v version
		if err := rows.Scan(&v.from, &v.to, &v.city, &v.tier); err != nil {
			return nil, errors.Join(err, rows.Close())
		}
		out = append(out, v)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b version) int { return cmp.Compare(a.from, b.from) })
	return out, nil
}

func (e *sqliteEngine) dimVersions(fn func(string, version)) error {
	return scanKeyVersions(e.db, `SELECT key, valid_from, valid_to, city, tier FROM dim`, fn)
}

func (e *sqliteEngine) startReads() error { return e.prepare(&e.lookupStmt, sqlLookup) }

func (e *sqliteEngine) lookup(key string, valid int64) (version, bool, error) {
	return lookupVersion(e.lookupStmt, valid, key, valid)
}

// loadCorrections bulk-loads the finished bitemporal history (not timed).
func (e *sqliteEngine) loadCorrections(c *corrections) error {
	err := e.exec(`CREATE TABLE old (key TEXT NOT NULL, valid_from INTEGER NOT NULL, tx_from INTEGER NOT NULL,
		valid_to INTEGER NOT NULL, tx_to INTEGER NOT NULL, city TEXT NOT NULL, tier INTEGER NOT NULL,
		PRIMARY KEY (key, valid_from, tx_from)) WITHOUT ROWID`)
	if err != nil {
		return err
	}
	tx, err := e.db.Begin()
	if err != nil {
		return err
	}
	ins, err := tx.Prepare(`INSERT INTO old VALUES (?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return errors.Join(err, tx.Rollback())
	}
	for k, key := range c.keys {
		for _, r := range c.records(k) {
			if _, err := ins.Exec(key, r.from, r.txFrom, r.to, r.txTo, r.city, r.tier); err != nil {
				return errors.Join(err, tx.Rollback())
			}
		}
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	return e.prepare(&e.lookupAsOfStmt, sqlLookupAsOf)
}

func (e *sqliteEngine) lookupAsOf(key string, valid int64, round int) (version, bool, error) {
	return lookupVersion(e.lookupAsOfStmt, valid, key, valid, round, round)
}

// stageFacts loads the facts into a temporary table (not timed).
func (e *sqliteEngine) stageFacts(facts []probe) error {
	if err := e.exec(`CREATE TEMP TABLE facts (id INTEGER PRIMARY KEY, key TEXT NOT NULL, ts INTEGER NOT NULL)`); err != nil {
		return err
	}
	tx, err := e.db.Begin()
	if err != nil {
		return err
	}
	ins, err := tx.Prepare(`INSERT INTO facts VALUES (?, ?, ?)`)
	if err != nil {
		return errors.Join(err, tx.Rollback())
	}
	for i, f := range facts {
		if _, err := ins.Exec(i, f.key, f.valid); err != nil {
			return errors.Join(err, tx.Rollback())
		}
	}
	return tx.Commit()
}

// resolve is one join: per fact, an index seek for the latest version starting
// at or before its time, kept if it has not ended by then.
func (e *sqliteEngine) resolve(out []answer) error {
	return queryAnswers(e.db, `SELECT f.id, d.valid_from, d.valid_to, d.city, d.tier
		FROM facts f JOIN dim d ON d.key = f.key AND d.valid_from = (
			SELECT m.valid_from FROM dim m WHERE m.key = f.key AND m.valid_from <= f.ts
			ORDER BY m.valid_from DESC LIMIT 1)
		WHERE f.ts < d.valid_to`, out)
}

func (e *sqliteEngine) snapshot(valid int64, fn func(string, version)) error {
	return scanKeyVersions(e.db, sqlSnapshot, fn, valid, valid)
}

func (e *sqliteEngine) createChanges() error {
	err := e.exec(
		`CREATE TABLE events (key TEXT NOT NULL, ts INTEGER NOT NULL, seq INTEGER NOT NULL, op INTEGER NOT NULL,
			city TEXT, tier INTEGER, PRIMARY KEY (key, ts, seq)) WITHOUT ROWID`,
		`CREATE TABLE scd (key TEXT NOT NULL, valid_from INTEGER NOT NULL, valid_to INTEGER NOT NULL,
			city TEXT, tier INTEGER, PRIMARY KEY (key, valid_from)) WITHOUT ROWID`,
		`CREATE TEMP TABLE batch_keys (key TEXT PRIMARY KEY) WITHOUT ROWID`,
	)
	if err != nil {
		return err
	}
	// A duplicate is ignored; a delete beats an upsert at the same (at, seq).
	return errors.Join(
		e.prepare(&e.insertEvent, `INSERT INTO events VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (key, ts, seq) DO UPDATE SET op = 1, city = NULL, tier = NULL WHERE excluded.op = 1`),
		e.prepare(&e.insertBatchKey, `INSERT OR IGNORE INTO batch_keys VALUES (?)`),
	)
}

// applyCDC inserts the batch into the event table and recomputes the versions of
// the keys it touched with window functions, in one transaction.
func (e *sqliteEngine) applyCDC(_ string, events []cdcEvent) error {
	tx, err := e.db.Begin()
	if err != nil {
		return err
	}
	insEvent, insKey := tx.Stmt(e.insertEvent), tx.Stmt(e.insertBatchKey)
	for _, ev := range events {
		op, city, tier := 0, any(ev.city), any(ev.tier)
		if ev.del {
			op, city, tier = 1, nil, nil
		}
		if _, err := insEvent.Exec(ev.key, ev.at, ev.seq, op, city, tier); err != nil {
			return errors.Join(err, tx.Rollback())
		}
		if _, err := insKey.Exec(ev.key); err != nil {
			return errors.Join(err, tx.Rollback())
		}
	}
	for _, s := range []string{`DELETE FROM scd WHERE key IN (SELECT key FROM batch_keys)`, sqlDerive, `DELETE FROM batch_keys`} {
		if _, err := tx.Exec(s); err != nil {
			return errors.Join(err, tx.Rollback())
		}
	}
	return tx.Commit()
}

func (e *sqliteEngine) changesVersions(fn func(string, version)) error {
	return scanKeyVersions(e.db, `SELECT key, valid_from, valid_to, city, tier FROM scd`, fn)
}

// loadAggregates bulk-loads the contracts, clustered by (user_id, valid_from),
// and stages the rows in a temporary table (not timed).
func (e *sqliteEngine) loadAggregates(a *aggData) error {
	err := e.exec(`CREATE TABLE contracts (user_id TEXT NOT NULL, valid_from INTEGER NOT NULL, contract_id TEXT NOT NULL,
			valid_to INTEGER NOT NULL, amount INTEGER NOT NULL, status TEXT NOT NULL,
			PRIMARY KEY (user_id, valid_from, contract_id)) WITHOUT ROWID`,
		`CREATE TEMP TABLE lr (id INTEGER PRIMARY KEY, user_id TEXT NOT NULL, ts INTEGER NOT NULL)`)
	if err != nil {
		return err
	}
	tx, err := e.db.Begin()
	if err != nil {
		return err
	}
	insContract, err1 := tx.Prepare(`INSERT INTO contracts VALUES (?, ?, ?, ?, ?, ?)`)
	insRow, err2 := tx.Prepare(`INSERT INTO lr VALUES (?, ?, ?)`)
	if err := errors.Join(err1, err2); err != nil {
		return errors.Join(err, tx.Rollback())
	}
	for _, c := range a.contracts {
		for _, v := range c.versions {
			if _, err := insContract.Exec(c.user, v.from, c.id, v.to, v.amount, v.status); err != nil {
				return errors.Join(err, tx.Rollback())
			}
		}
	}
	for i, r := range a.rows {
		if _, err := insRow.Exec(i, r.user, r.ts); err != nil {
			return errors.Join(err, tx.Rollback())
		}
	}
	return tx.Commit()
}

// backfill is one grouped join: per row, an index range over the user's
// versions starting at or before ts.
func (e *sqliteEngine) backfill(out []features) error { return queryFeatures(e.db, out) }

// settle moves the write-ahead log into the database file, so reads do not
// consult the WAL index; prepared statements stay valid.
func (e *sqliteEngine) settle() error {
	return e.exec("PRAGMA wal_checkpoint(TRUNCATE)")
}

func (e *sqliteEngine) close() error {
	var errs []error
	for _, s := range e.stmts {
		errs = append(errs, s.Close())
	}
	return errors.Join(append(errs, e.db.Close())...)
}
