package main

import (
	"context"
	"database/sql"
	"errors"
)

// SQL that SQLite and DuckDB share. Both hold the SCD2 table as
// dim(key, valid_from, valid_to, city, tier), workload 4's bitemporal table as
// old(key, valid_from, tx_from, valid_to, tx_to, city, tier) with transaction
// rounds as transaction times, and workload 7's tables as events(key, ts, seq,
// op, city, tier) (op 0 upsert, 1 delete) and scd (like dim). An open end is
// 9223372036854775807 (math.MaxInt64).
const (
	sqlLookup = `SELECT valid_from, valid_to, city, tier FROM dim
		WHERE key = ? AND valid_from <= ? ORDER BY valid_from DESC LIMIT 1`

	// The alive record (tx_from <= round < tx_to) with the greatest valid_from
	// <= valid; alive records are disjoint in valid time.
	sqlLookupAsOf = `SELECT valid_from, valid_to, city, tier FROM old
		WHERE key = ? AND valid_from <= ? AND tx_from <= ? AND tx_to > ?
		ORDER BY valid_from DESC LIMIT 1`

	sqlSnapshot = `SELECT key, valid_from, valid_to, city, tier FROM dim
		WHERE valid_from <= ? AND valid_to > ?`

	// sqlBackfill computes workload 8's features for every row of lr(id,
	// user_id, ts) from contracts(user_id, valid_from, contract_id, valid_to,
	// amount, status); its parameter is the 30-day window in ticks.
	sqlBackfill = `SELECT l.id, count(c.user_id), CAST(sum(c.amount) AS BIGINT),
			CAST(sum(CASE WHEN c.valid_from > l.ts - ? THEN c.amount END) AS BIGINT),
			max(c.amount), count(DISTINCT c.status)
		FROM lr l LEFT JOIN contracts c ON c.user_id = l.user_id AND c.valid_from <= l.ts AND l.ts < c.valid_to
		GROUP BY l.id`

	// sqlDerive recomputes the versions of the keys in batch_keys from their
	// events, gaps-and-islands style: an upsert starts a run when the event
	// before it is missing, a delete, or has other attributes; a run lasts until
	// the next run start or delete.
	sqlDerive = `INSERT INTO scd (key, valid_from, valid_to, city, tier)
		SELECT key, ts, valid_to, city, tier FROM (
			SELECT key, ts, op, city, tier,
				LEAD(ts, 1, 9223372036854775807) OVER (PARTITION BY key ORDER BY ts, seq) AS valid_to
			FROM (
				SELECT key, ts, seq, op, city, tier,
					LAG(op) OVER w AS prev_op, LAG(city) OVER w AS prev_city, LAG(tier) OVER w AS prev_tier
				FROM events
				WHERE key IN (SELECT key FROM batch_keys)
				WINDOW w AS (PARTITION BY key ORDER BY ts, seq)
			) AS e
			WHERE op = 1 OR prev_op IS NULL OR prev_op = 1
				OR prev_city IS DISTINCT FROM city OR prev_tier IS DISTINCT FROM tier
		) AS b
		WHERE op = 0`
)

// queryer is a *sql.DB, *sql.Conn or *sql.Tx.
type queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// eachRow runs query with args on q and calls row for each of its rows (row
// scans it and uses it); it stops at the first error and closes the rows.
func eachRow(q queryer, query string, args []any, row func(*sql.Rows) error) error {
	rows, err := q.QueryContext(context.Background(), query, args...)
	if err != nil {
		return err
	}
	for rows.Next() {
		if err := row(rows); err != nil {
			return errors.Join(err, rows.Close())
		}
	}
	return errors.Join(rows.Err(), rows.Close())
}

// scanKeyVersions runs a query yielding (key, valid_from, valid_to, city, tier)
// and calls fn per row.
func scanKeyVersions(q queryer, query string, fn func(string, version), args ...any) error {
	var key string
	var v version
	return eachRow(q, query, args, func(rows *sql.Rows) error {
		if err := rows.Scan(&key, &v.from, &v.to, &v.city, &v.tier); err != nil {
			return err
		}
		fn(key, v)
		return nil
	})
}

// lookupVersion runs a point lookup (sqlLookup, sqlLookupAsOf) with args and
// returns its first (valid_from, valid_to, city, tier) row, found when there is
// one and it has not ended by valid.
func lookupVersion(stmt *sql.Stmt, valid int64, args ...any) (version, bool, error) {
	rows, err := stmt.Query(args...)
	if err != nil {
		return version{}, false, err
	}
	var v version
	ok := rows.Next()
	if ok {
		if err := rows.Scan(&v.from, &v.to, &v.city, &v.tier); err != nil {
			return version{}, false, errors.Join(err, rows.Close())
		}
	}
	return v, ok && valid < v.to, errors.Join(rows.Err(), rows.Close())
}

// queryAnswers runs a batch resolve yielding (fact id, valid_from, valid_to,
// city, tier) rows and reads them into out.
func queryAnswers(q queryer, query string, out []answer) error {
	var id int
	var v version
	return eachRow(q, query, nil, func(rows *sql.Rows) error {
		if err := rows.Scan(&id, &v.from, &v.to, &v.city, &v.tier); err != nil {
			return err
		}
		out[id] = answer{found: true, v: v}
		return nil
	})
}

// queryFeatures runs sqlBackfill and reads its rows into out.
func queryFeatures(q queryer, out []features) error {
	var id int
	var count, distinct int64
	var sum, sum30, maxAmount sql.NullInt64
	return eachRow(q, sqlBackfill, []any{window30d}, func(rows *sql.Rows) error {
		if err := rows.Scan(&id, &count, &sum, &sum30, &maxAmount, &distinct); err != nil {
			return err
		}
		out[id] = features{count, nullable(sum), nullable(sum30), nullable(maxAmount), distinct}
		return nil
	})
}

// sqlVersion asks a database of driver, opened with dsn, for its version
// with query.
func sqlVersion(driver, dsn, query string) (string, error) {
	db, err := sql.Open(driver, dsn)
	if err != nil {
		return "", err
	}
	defer db.Close()
	var v string
	err = db.QueryRow(query).Scan(&v)
	return v, err
}

func nullable(n sql.NullInt64) int64 {
	if !n.Valid {
		return null
	}
	return n.Int64
}
