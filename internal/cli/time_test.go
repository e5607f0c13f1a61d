package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestBackfillWindowOnTimeColumn loads birth_ts with --types birth_ts=time and
// checks a 10950-day window on it at its exact boundaries: the window at ts is
// (ts - 10950d, ts], and 2024-01-01 minus 10950 days is 1994-01-08. The same
// births loaded as int64 microseconds give the same counts.
func TestBackfillWindowOnTimeColumn(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	births := []struct{ user, rfc, micros string }{
		{"b1", "1994-01-08T00:00:00Z", "757987200000000"},         // exactly ts - 10950d: outside
		{"b2", "1994-01-08T00:00:00.000001Z", "757987200000001"},  // one microsecond later: inside
		{"b3", "2024-01-01T01:00:00+01:00", "1704067200000000"},   // exactly ts (in another zone): inside
		{"b4", "2024-01-01T00:00:00.000001Z", "1704067200000001"}, // after ts: outside
	}
	timeCSV, intCSV := "user_id,zipcode,birth_ts,valid_from,valid_to\n", "user_id,zipcode,birth_ts,valid_from,valid_to\n"
	for _, b := range births {
		timeCSV += b.user + ",94107," + b.rfc + ",2020-01-01,\n"
		intCSV += b.user + ",94107," + b.micros + ",2020-01-01,\n"
	}
	write(t, dir, "time.csv", timeCSV)
	write(t, dir, "int.csv", intCSV)
	for _, tbl := range []string{"by_time", "by_int"} {
		ok(t, dir, "create", tbl, "--key", "user_id", "--axis", "date", "--group-by", "zipcode", "--db", "db")
	}
	ok(t, dir, "load", "by_time", "time.csv", "--from", "valid_from", "--to", "valid_to", "--types", "birth_ts=time", "--db", "db")
	ok(t, dir, "load", "by_int", "int.csv", "--from", "valid_from", "--to", "valid_to", "--types", "birth_ts=int64", "--db", "db")

	// The stored value is a time, printed in RFC 3339 in UTC.
	r := ok(t, dir, "get", "by_time", "b3", "--valid", "2024-01-01", "--db", "db")
	wantLines(t, r.stdout, "user_id,valid_from,valid_to,sk,zipcode,birth_ts", "b3,2020-01-01,,3,94107,2024-01-01T00:00:00Z")

	write(t, dir, "zips.csv", "zip,ts\n94107,2023-12-31\n94107,2024-01-01\n94107,2024-01-02\n")
	r = ok(t, dir, "backfill", "by_time", "--left", "zips.csv", "--group-by", "zipcode", "--key", "zip", "--ts", "ts",
		"--agg", "count@birth_ts:10950d", "--agg", "min(birth_ts)@birth_ts:10950d", "--agg", "max(birth_ts)@birth_ts:10950d", "--db", "db")
	wantLines(t, r.stdout,
		"zip,ts,count_by_birth_ts_10950d,birth_ts_min_by_birth_ts_10950d,birth_ts_max_by_birth_ts_10950d",
		"94107,2023-12-31,2,1994-01-08T00:00:00Z,1994-01-08T00:00:00.000001Z", // (1994-01-07, 2023-12-31]
		"94107,2024-01-01,2,1994-01-08T00:00:00.000001Z,2024-01-01T00:00:00Z", // (1994-01-08, 2024-01-01]
		"94107,2024-01-02,2,2024-01-01T00:00:00Z,2024-01-01T00:00:00.000001Z", // (1994-01-09, 2024-01-02]
	)
	r = ok(t, dir, "backfill", "by_int", "--left", "zips.csv", "--group-by", "zipcode", "--key", "zip", "--ts", "ts",
		"--agg", "count@birth_ts:10950d", "--agg", "min(birth_ts)@birth_ts:10950d", "--db", "db")
	wantLines(t, r.stdout,
		"zip,ts,count_by_birth_ts_10950d,birth_ts_min_by_birth_ts_10950d",
		"94107,2023-12-31,2,757987200000000",
		"94107,2024-01-01,2,757987200000001",
		"94107,2024-01-02,2,1704067200000000",
	)

	// JSON gives times as RFC 3339 strings; scan and history print them too.
	r = ok(t, dir, "backfill", "by_time", "--left", "zips.csv", "--group-by", "zipcode", "--key", "zip", "--ts", "ts",
		"--agg", "max(birth_ts)", "--format", "json", "--db", "db")
	if rows := jsonRows(t, r.stdout); len(rows) != 3 || rows[0]["birth_ts_max"] != "2024-01-01T00:00:00.000001Z" {
		t.Fatalf("json: %v", rows)
	}
	r = ok(t, dir, "scan", "by_time", "--valid", "2024-01-01", "--format", "json", "--db", "db")
	var first map[string]any
	if err := json.Unmarshal([]byte(strings.SplitN(r.stdout, "\n", 2)[0]), &first); err != nil || first["birth_ts"] != "1994-01-08T00:00:00Z" {
		t.Fatalf("scan json: %v %v", first, err)
	}
	r = ok(t, dir, "dump", "--table", "by_time", "--db", "db")
	if !strings.Contains(r.stdout, "birth_ts: 1994-01-08T00:00:00.000001Z") {
		t.Fatalf("dump does not print the time in RFC 3339:\n%s", r.stdout)
	}
}
