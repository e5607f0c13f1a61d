package cli

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// contractsCSV is an SCD2 table of contracts grouped by user: c1 changes amount
// on 10 January, expires on 1 February and reopens on 1 March; c2 changes status
// on 20 January and expires on 15 February; c3 belongs to another user.
const contractsCSV = `contract_id,user_id,valid_from,valid_to,amount,status
c1,u1,2024-01-01,2024-01-10,100,active
c1,u1,2024-01-10,2024-02-01,150,active
c1,u1,2024-03-01,,150,active
c2,u1,2024-01-05,2024-01-20,50,pending
c2,u1,2024-01-20,2024-02-15,50,active
c3,u2,2024-01-03,,70,active
`

// contractsStore creates and loads the contracts table, then corrects c2's first
// version (amount 50 -> 60) in a later transaction. It returns the directory
// and the transaction time of the first load, before the correction.
func contractsStore(t *testing.T) (dir, before string) {
	t.Helper()
	dir = t.TempDir()
	r := ok(t, dir, "create", "contracts", "--key", "contract_id", "--axis", "date", "--group-by", "user_id", "--db", "db")
	if !strings.Contains(r.stdout, "grouped by user_id") {
		t.Fatalf("create does not show the grouping: %s", r.stdout)
	}
	write(t, dir, "contracts.csv", contractsCSV)
	ok(t, dir, "load", "contracts", "contracts.csv", "--from", "valid_from", "--to", "valid_to", "--db", "db")
	r = ok(t, dir, "audit", "contracts", "c2", "--format", "json", "--db", "db")
	before = jsonRows(t, r.stdout)[0]["tx_from"].(string)
	write(t, dir, "fix.csv", "contract_id,user_id,valid_from,valid_to,amount,status\nc2,u1,2024-01-05,2024-01-20,60,pending\n")
	ok(t, dir, "load", "contracts", "fix.csv", "--from", "valid_from", "--to", "valid_to", "--db", "db")
	return dir, before
}

// leftCSV holds training rows, shuffled: every change instant of u1 (versions
// starting at ts count, versions ending at ts do not), times inside and outside
// the 7-day window, before any version, in the gap after expiry, a user never
// seen.
const leftCSV = `row_id,user_id,ts
1,u1,2024-01-12
2,u9,2024-01-12
3,u1,2023-12-31
4,u1,2024-01-10
5,u2,2024-01-03
6,u1,2024-02-20
7,u1,2024-03-01
8,u1,2024-02-15
9,u1,2024-01-20
10,u1,2024-01-01
11,u1,2024-01-05
12,u1,2024-02-01
13,u1,2024-01-11
`

var contractAggs = []string{"--agg", "sum(amount):7d", "--agg", "sum(amount)", "--agg", "avg(amount)",
	"--agg", "count", "--agg", "exists", "--agg", "count_distinct(status)"}

func backfillArgs(extra ...string) []string {
	args := append([]string{"backfill", "contracts", "--left", "left.csv", "--group-by", "user_id", "--key", "user_id", "--ts", "ts"}, contractAggs...)
	return append(append(args, "--db", "db"), extra...)
}

func TestBackfillContracts(t *testing.T) {
	t.Parallel()
	dir, before := contractsStore(t)
	write(t, dir, "left.csv", leftCSV)

	// As known before the correction.
	r := ok(t, dir, backfillArgs("--tx", before)...)
	wantLines(t, r.stdout,
		"row_id,user_id,ts,amount_sum_7d,amount_sum,amount_avg,count,exists,status_count_distinct",
		"1,u1,2024-01-12,150,200,100,2,true,2", // c2 started 7 days ago: out of the 7-day window
		"2,u9,2024-01-12,,,,0,false,0",         // never seen
		"3,u1,2023-12-31,,,,0,false,0",         // before any version
		"4,u1,2024-01-10,200,200,100,2,true,2", // c1's 150 starts at ts, its 100 ends at ts
		"5,u2,2024-01-03,70,70,70,1,true,1",
		"6,u1,2024-02-20,,,,0,false,0",         // both expired
		"7,u1,2024-03-01,150,150,150,1,true,1", // c1 reopens at ts
		"8,u1,2024-02-15,,,,0,false,0",         // c2 ends at ts
		"9,u1,2024-01-20,50,200,100,2,true,1",  // c2 turns active at ts
		"10,u1,2024-01-01,100,100,100,1,true,1",
		"11,u1,2024-01-05,150,150,75,2,true,2",
		"12,u1,2024-02-01,,50,50,1,true,1", // c1 ends at ts
		"13,u1,2024-01-11,200,200,100,2,true,2",
	)
	if !strings.Contains(r.stderr, "backfilled 13 rows of left.csv from contracts by user_id (3 groups): 6 features, as known at "+before) {
		t.Fatalf("summary: %s", r.stderr)
	}

	// At the latest commit the correction of c2 (50 -> 60 until 20 January) shows.
	r = ok(t, dir, backfillArgs()...)
	lines := csvLines(r.stdout)
	for i, want := range map[int]string{
		1:  "1,u1,2024-01-12,150,210,105,2,true,2",
		4:  "4,u1,2024-01-10,210,210,105,2,true,2",
		9:  "9,u1,2024-01-20,50,200,100,2,true,1",
		11: "11,u1,2024-01-05,160,160,80,2,true,2",
	} {
		if lines[i] != want {
			t.Errorf("latest, line %d: %s, want %s", i, lines[i], want)
		}
	}
	if !strings.Contains(r.stderr, "as of the latest commit") {
		t.Errorf("summary: %s", r.stderr)
	}

	// JSON: numbers, booleans and nulls; input cells as read.
	r = ok(t, dir, backfillArgs("--tx", before, "--format", "json", "--quiet")...)
	if r.stderr != "" {
		t.Fatalf("--quiet printed %q", r.stderr)
	}
	rows := jsonRows(t, r.stdout)
	if len(rows) != 13 {
		t.Fatalf("%d json rows", len(rows))
	}
	if seen := rows[0]; seen["row_id"] != "1" || seen["amount_sum"] != json.Number("200") || seen["amount_avg"] != json.Number("100") ||
		seen["exists"] != true || seen["count"] != json.Number("2") {
		t.Errorf("json row 1: %v", seen)
	}
	if never := rows[1]; never["amount_sum"] != nil || never["amount_sum_7d"] != nil || never["amount_avg"] != nil ||
		never["exists"] != false || never["count"] != json.Number("0") || never["status_count_distinct"] != json.Number("0") {
		t.Errorf("json row of a user never seen: %v", never)
	}

	// Table: aligned columns.
	r = ok(t, dir, backfillArgs("--tx", before, "--format", "table")...)
	lines = csvLines(r.stdout)
	if len(lines) != 14 || strings.Join(strings.Fields(lines[0]), " ") != "row_id user_id ts amount_sum_7d amount_sum amount_avg count exists status_count_distinct" ||
		strings.Join(strings.Fields(lines[2]), " ") != "2 u9 2024-01-12 0 false 0" ||
		strings.Index(lines[0], "count") != strings.Index(lines[2], "0 ") {
		t.Fatalf("table:\n%s", r.stdout)
	}

	// --key defaults to the --group-by names; the left file may be JSONL on stdin.
	jsonl := `{"user_id":"u1","ts":"2024-01-10","note":1}` + "\n" + `{"user_id":"u9","ts":"2024-01-10"}` + "\n"
	r = bt(t, dir, jsonl, "backfill", "contracts", "--left", "-", "--left-format", "jsonl", "--group-by", "user_id", "--ts", "ts",
		"--agg", "count", "--agg", "sum(amount)", "--tx", before, "--format", "json", "--db", "db")
	if r.code != 0 {
		t.Fatalf("jsonl: exit %d: %s", r.code, r.stderr)
	}
	wantLines(t, r.stdout,
		`{"user_id":"u1","ts":"2024-01-10","note":1,"count":2,"amount_sum":200}`,
		`{"user_id":"u9","ts":"2024-01-10","note":null,"count":0,"amount_sum":null}`,
	)
}

func TestBackfillTableWide(t *testing.T) {
	t.Parallel()
	dir, before := contractsStore(t)
	// Leaving out --group-by and --key totals the whole table at each date; a ts
	// cell may say now.
	write(t, dir, "dates.csv", "ts\n2024-01-12\n2024-01-03\n2023-12-31\n2024-02-20\n2024-03-01\nnow\n")
	r := ok(t, dir, "backfill", "contracts", "--left", "dates.csv", "--ts", "ts", "--agg", "sum(amount)", "--agg", "count",
		"--agg", "count_distinct(user_id)", "--tx", before, "--db", "db")
	wantLines(t, r.stdout,
		"ts,amount_sum,count,user_id_count_distinct",
		"2024-01-12,270,3,2",
		"2024-01-03,170,2,2",
		"2023-12-31,,0,0",
		"2024-02-20,70,1,1",
		"2024-03-01,220,2,2",
		"now,220,2,2",
	)
	if !strings.Contains(r.stderr, "from contracts table-wide: 3 features") {
		t.Fatalf("summary: %s", r.stderr)
	}
	r = ok(t, dir, "backfill", "contracts", "--left", "dates.csv", "--ts", "ts", "--agg", "sum(amount)", "--format", "json", "--db", "db")
	if rows := jsonRows(t, r.stdout); len(rows) != 6 || rows[0]["amount_sum"] != json.Number("280") {
		t.Fatalf("latest table-wide: %v", rows)
	}
}

// micros returns midnight UTC of a date in microseconds, as a window column holds it.
func micros(date string) int64 {
	d, err := time.Parse("2006-01-02", date)
	if err != nil {
		panic(err)
	}
	return d.UnixMicro()
}

func TestBackfillWindowColumn(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ok(t, dir, "create", "users", "--key", "user_id", "--axis", "date", "--group-by", "zipcode", "--db", "db")
	// u3 moves from 94107 to 10001 on 1 January 2023.
	write(t, dir, "users.csv", fmt.Sprintf(`user_id,zipcode,birth_ts,valid_from,valid_to
u1,94107,%d,2020-01-01,
u2,94107,%d,2020-01-01,
u3,94107,%d,2020-01-01,2023-01-01
u3,10001,%d,2023-01-01,
`, micros("1990-05-01"), micros("2000-01-01"), micros("2010-01-01"), micros("2010-01-01")))
	ok(t, dir, "load", "users", "users.csv", "--from", "valid_from", "--to", "valid_to", "--db", "db")
	// Zip codes are integers in both files, so 94107 finds the group loaded as 94107.
	write(t, dir, "zips.csv", "zip,ts\n94107,2024-01-12\n94107,2022-06-01\n10001,2024-01-12\n10001,2019-12-31\n94107,2023-01-01\n10001,2023-01-01\n")
	r := ok(t, dir, "backfill", "users", "--left", "zips.csv", "--group-by", "zipcode", "--key", "zip", "--ts", "ts",
		"--agg", "count@birth_ts:10950d", "--agg", "count", "--db", "db")
	wantLines(t, r.stdout,
		"zip,ts,count_by_birth_ts_10950d,count",
		"94107,2024-01-12,1,2", // u1 born more than 10950 days before
		"94107,2022-06-01,2,3",
		"10001,2024-01-12,1,1",
		"10001,2019-12-31,0,0",
		"94107,2023-01-01,1,2", // u3 left at ts
		"10001,2023-01-01,1,1", // and arrived at ts
	)

	// A window column loaded as text (dates without --types) is an error naming
	// the column and its type, which says how to load it.
	ok(t, dir, "create", "people", "--key", "user_id", "--axis", "date", "--group-by", "zipcode", "--db", "db")
	write(t, dir, "people.csv", "user_id,zipcode,birth_ts,valid_from,valid_to\nu1,94107,1990-05-01,2020-01-01,\n")
	ok(t, dir, "load", "people", "people.csv", "--from", "valid_from", "--to", "valid_to", "--db", "db")
	r = fails(t, dir, 1, `window column "birth_ts" holds a string`, "backfill", "people", "--left", "zips.csv",
		"--group-by", "zipcode", "--key", "zip", "--ts", "ts", "--agg", "count@birth_ts:10950d", "--db", "db")
	if !strings.Contains(r.stderr, "--types birth_ts=time") || r.stdout != "" {
		t.Fatalf("stdout %q, stderr %s", r.stdout, r.stderr)
	}
}

func TestBackfillSeveralGroupAttributes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := ok(t, dir, "create", "accounts", "--key", "account_id", "--axis", "date", "--group-by", "branch,tier", "--db", "db")
	if !strings.Contains(r.stdout, "grouped by branch, tier") {
		t.Fatalf("create: %s", r.stdout)
	}
	write(t, dir, "accounts.csv", `account_id,branch,tier,valid_from,valid_to,balance
a1,42,gold,2024-01-01,,10
a2,42,gold,2024-01-02,,5
a3,42,silver,2024-01-01,,7
a4,7,gold,2024-01-01,,1
`)
	ok(t, dir, "load", "accounts", "accounts.csv", "--from", "valid_from", "--to", "valid_to", "--db", "db")
	// Left columns named otherwise; a feature named like a left column is
	// prefixed with the table name.
	write(t, dir, "left.csv", "br,tr,ts,count\n42,gold,2024-01-05,x\n42,silver,2024-01-05,y\n7,gold,2024-01-01,z\n42,gold,2024-01-01,w\n")
	r = ok(t, dir, "backfill", "accounts", "--left", "left.csv", "--group-by", "branch,tier", "--key", "br,tr", "--ts", "ts",
		"--agg", "count", "--agg", "sum(balance)", "--agg", "latest(balance)", "--db", "db")
	wantLines(t, r.stdout,
		"br,tr,ts,count,accounts_count,balance_sum,balance_latest",
		"42,gold,2024-01-05,x,2,15,5",
		"42,silver,2024-01-05,y,1,7,7",
		"7,gold,2024-01-01,z,1,1,1",
		"42,gold,2024-01-01,w,1,10,10",
	)
	// In JSONL, "42" is a string, which no group loaded as the integer 42 has;
	// --types reads it as an int64.
	write(t, dir, "left.jsonl", `{"br":"42","tr":"gold","ts":"2024-01-05"}`+"\n")
	args := []string{"backfill", "accounts", "--left", "left.jsonl", "--group-by", "branch,tier", "--key", "br,tr", "--ts", "ts", "--agg", "count", "--db", "db"}
	r = ok(t, dir, args...)
	wantLines(t, r.stdout, "br,tr,ts,count", "42,gold,2024-01-05,0")
	r = ok(t, dir, append(args, "--types", "br=int64")...)
	wantLines(t, r.stdout, "br,tr,ts,count", "42,gold,2024-01-05,2")

	fails(t, dir, 2, "--group-by tier,branch does not match table accounts, which is grouped by branch,tier",
		"backfill", "accounts", "--left", "left.csv", "--group-by", "tier,branch", "--key", "tr,br", "--ts", "ts", "--agg", "count", "--db", "db")
	fails(t, dir, 2, "--group-by names 2 attributes, --key 1 columns",
		"backfill", "accounts", "--left", "left.csv", "--group-by", "branch,tier", "--key", "br", "--ts", "ts", "--agg", "count", "--db", "db")
	// A decimal column cannot name a group.
	write(t, dir, "floats.csv", "br,tr,ts\n4.5,gold,2024-01-05\n")
	fails(t, dir, 1, `floats.csv line 2, column 1 (br): table "accounts" group attribute "branch" value 4.5 (float64): group values must be strings, bytes or integers`,
		"backfill", "accounts", "--left", "floats.csv", "--group-by", "branch,tier", "--key", "br,tr", "--ts", "ts", "--agg", "count", "--db", "db")
}

func TestBackfillErrors(t *testing.T) {
	t.Parallel()
	dir, _ := contractsStore(t)
	write(t, dir, "left.csv", leftCSV)
	write(t, dir, "bad_ts.csv", "row_id,user_id,ts\n1,u1,2024-01-12T00:00:00Z\n")
	write(t, dir, "no_key.csv", "row_id,user_id,ts\n1,u1,2024-01-12\n2,,2024-01-12\n")
	base := []string{"backfill", "contracts", "--left", "left.csv", "--group-by", "user_id", "--ts", "ts", "--db", "db"}
	for _, c := range []struct {
		code int
		want string
		args []string
	}{
		{2, `--agg: aggregation "sum": sum needs an input attribute`, []string{"--agg", "sum"}},
		{2, `aggregation "count(amount)": count takes no input attribute`, []string{"--agg", "count(amount)"}},
		{2, `aggregation "sum(amount):7x": window unit must be`, []string{"--agg", "count", "--agg", "sum(amount):7x"}},
		{2, `aggregation "median(amount)": unknown operation`, []string{"--agg", "median(amount)"}},
		{2, `feature "count" is also produced by "count"`, []string{"--agg", "count", "--agg", "count"}},
		{2, "--agg SPEC is required", nil},
		{2, "--types names \"amount\", which is not a --key column", []string{"--agg", "count", "--types", "amount=int64"}},
		{1, `left.csv has no column "when" (--ts)`, []string{"--agg", "count", "--ts", "when"}},
		{1, `bad_ts.csv line 2, column 3 (ts): "2024-01-12T00:00:00Z" is not a date`, []string{"--agg", "count", "--left", "bad_ts.csv"}},
		{1, "no_key.csv line 3, column 2 (user_id): missing key", []string{"--agg", "count", "--left", "no_key.csv"}},
		{1, "no bitempo store at nothere", []string{"--agg", "count", "--db", "nothere"}},
	} {
		r := fails(t, dir, c.code, c.want, append(slices.Clone(base), c.args...)...)
		if r.stdout != "" {
			t.Errorf("%v: a failed backfill printed %q", c.args, r.stdout)
		}
	}
	fails(t, dir, 2, "--group-by status does not match table contracts, which is grouped by user_id",
		"backfill", "contracts", "--left", "left.csv", "--group-by", "status", "--key", "user_id", "--ts", "ts", "--agg", "count", "--db", "db")
	fails(t, dir, 2, "--key needs --group-by", "backfill", "contracts", "--left", "left.csv", "--key", "user_id", "--ts", "ts", "--agg", "count", "--db", "db")
	fails(t, dir, 2, "--left FILE is required", "backfill", "contracts", "--ts", "ts", "--agg", "count", "--db", "db")

	// A table created without --group-by has no group index; table-wide still works.
	ok(t, dir, "create", "plain", "--key", "id", "--db", "db")
	fails(t, dir, 2, "table plain has no group index", "backfill", "plain", "--left", "left.csv", "--group-by", "user_id", "--ts", "ts", "--agg", "count", "--db", "db")
	// Windows on valid_from mean nothing on an int axis.
	ok(t, dir, "create", "seq", "--key", "id", "--axis", "int", "--group-by", "g", "--db", "db")
	write(t, dir, "seq.csv", "g,ts\na,5\n")
	fails(t, dir, 2, "windows on valid_from need a time axis", "backfill", "seq", "--left", "seq.csv", "--group-by", "g", "--ts", "ts", "--agg", "count:7d", "--db", "db")

	r := ok(t, dir, "backfill", "--help")
	for _, want := range []string{"Examples:", "bitempo backfill", "--db", "--group-by", "table-wide", "OP[(INPUT)][@WINDOW_COLUMN][:WINDOW,...]"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("backfill --help lacks %q:\n%s", want, r.stdout)
		}
	}
	if r := ok(t, dir, "create", "--help"); !strings.Contains(r.stdout, "--group-by user_id") {
		t.Errorf("create --help lacks a --group-by example:\n%s", r.stdout)
	}
	if r := ok(t, dir, "--help"); !strings.Contains(r.stdout, "backfill") {
		t.Errorf("root help does not list backfill:\n%s", r.stdout)
	}
}
