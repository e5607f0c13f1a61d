package cli

import (
	"strings"
	"testing"
)

func TestGetFormatsAndMisses(t *testing.T) {
	t.Parallel()
	dir := customersStore(t)
	r := ok(t, dir, "get", "customers", "c1", "--valid", "2024-03-08", "--db", "db")
	wantLines(t, r.stdout, "customer_id,valid_from,valid_to,sk,name,city,score", "c1,2024-01-01,2024-03-11,1,Ada,Oslo,10")
	// Flags before the command and before the arguments work too.
	r = ok(t, dir, "--db", "db", "get", "--valid", "2024-03-12", "customers", "c1", "--format", "json", "--with-tx")
	rows := jsonRows(t, r.stdout)
	if len(rows) != 1 || rows[0]["city"] != "Bergen" || rows[0]["valid_to"] != "2024-06-01" || rows[0]["tx_to"] != nil {
		t.Fatalf("json: %v", rows)
	}
	if tx, _ := rows[0]["tx_from"].(string); !strings.HasSuffix(tx, "Z") || !strings.Contains(tx, "T") {
		t.Fatalf("tx_from is not RFC 3339: %v", rows[0]["tx_from"])
	}
	r = ok(t, dir, "get", "customers", "c1", "--valid", "2024-07-01", "--format", "table", "--db", "db")
	lines := csvLines(r.stdout)
	if len(lines) != 2 || strings.Join(strings.Fields(lines[0]), " ") != "customer_id valid_from valid_to sk name city score" ||
		strings.Join(strings.Fields(lines[1]), " ") != "c1 2024-06-01 3 Ada Oslo 12" ||
		strings.Index(lines[0], "sk") != strings.Index(lines[1], "3") {
		t.Fatalf("table:\n%s", r.stdout)
	}
	for _, c := range []struct{ key, valid, why string }{
		{"c9", "2024-03-01", "unknown key"},
		{"c1", "2023-12-31", "before the first version"},
		{"c3", "2024-06-01", "in a gap"},
		{"c4", "2024-02-01", "after the last version"},
	} {
		r := fails(t, dir, 1, c.why, "get", "customers", c.key, "--valid", c.valid, "--db", "db")
		if r.stdout != "" {
			t.Fatalf("a miss printed %q", r.stdout)
		}
		for _, other := range []string{"unknown key", "before the first version", "in a gap", "after the last version"} {
			if other != c.why && strings.Contains(r.stderr, other) {
				t.Fatalf("miss of %s says %q too: %s", c.key, other, r.stderr)
			}
		}
	}
	fails(t, dir, 2, "not a date", "get", "customers", "c1", "--valid", "2024-03-08T10:00:00Z", "--db", "db")
	fails(t, dir, 2, "unknown --format", "get", "customers", "c1", "--format", "xml", "--db", "db")
	fails(t, dir, 2, "key of 1 columns", "get", "customers", "c1", "c2", "--db", "db")
}

// firstTx returns the transaction time of the first load of the customers store.
func firstTx(t *testing.T, dir string) string {
	r := ok(t, dir, "audit", "customers", "c2", "--format", "json", "--db", "db")
	rows := jsonRows(t, r.stdout)
	return rows[0]["tx_from"].(string)
}

// correct moves c1's move to Bergen from 11 to 1 March, in a new transaction.
func correct(t *testing.T, dir string) {
	write(t, dir, "fix.csv", "customer_id,at,name,city,score\nc1,2024-03-01,Ada,Bergen,11\n")
	ok(t, dir, "load", "customers", "fix.csv", "--at", "at", "--db", "db")
}

func TestHistoryAuditChangesAsOf(t *testing.T) {
	t.Parallel()
	dir := customersStore(t)
	t1 := firstTx(t, dir)
	correct(t, dir)
	r := ok(t, dir, "get", "customers", "c1", "--valid", "2024-03-05", "--db", "db")
	if !strings.Contains(r.stdout, "Bergen") {
		t.Fatalf("after the correction: %s", r.stdout)
	}
	r = ok(t, dir, "get", "customers", "c1", "--valid", "2024-03-05", "--tx", t1, "--db", "db")
	if !strings.Contains(r.stdout, "Oslo") {
		t.Fatalf("as known before the correction: %s", r.stdout)
	}
	r = ok(t, dir, "history", "customers", "c1", "--db", "db")
	wantLines(t, r.stdout,
		"customer_id,valid_from,valid_to,sk,name,city,score",
		"c1,2024-01-01,2024-03-01,1,Ada,Oslo,10",
		"c1,2024-03-01,2024-06-01,2,Ada,Bergen,11",
		"c1,2024-06-01,,3,Ada,Oslo,12",
	)
	r = ok(t, dir, "history", "customers", "c1", "--from", "2024-02-01", "--to", "2024-06-01", "--tx", t1, "--db", "db")
	wantLines(t, r.stdout,
		"customer_id,valid_from,valid_to,sk,name,city,score",
		"c1,2024-01-01,2024-03-11,1,Ada,Oslo,10",
		"c1,2024-03-11,2024-06-01,2,Ada,Bergen,11",
	)
	r = ok(t, dir, "audit", "customers", "c1", "--db", "db")
	lines := csvLines(r.stdout)
	if lines[0] != "customer_id,valid_from,valid_to,sk,name,city,score,tx_from,tx_to" || len(lines) != 1+3+2 {
		t.Fatalf("audit:\n%s", r.stdout)
	}
	retired := 0
	for _, l := range lines[1:] {
		if !strings.HasSuffix(l, ",") {
			retired++
		}
	}
	if retired != 2 {
		t.Fatalf("audit shows %d retired records, want 2:\n%s", retired, r.stdout)
	}
	r = ok(t, dir, "changes", "customers", "--since", t1, "--format", "json", "--db", "db")
	rows := jsonRows(t, r.stdout)
	ops := map[string]int{}
	for _, row := range rows {
		ops[row["op"].(string)]++
		if row["customer_id"] != "c1" {
			t.Fatalf("change of another key: %v", row)
		}
	}
	if ops["retired"] != 2 || ops["asserted"] != 2 {
		t.Fatalf("changes: %v", rows)
	}
	r = ok(t, dir, "changes", "customers", "--since", "0", "--until", t1, "--db", "db")
	if n := len(csvLines(r.stdout)); n != 1+7 {
		t.Fatalf("changes of the first load: %d lines\n%s", n, r.stdout)
	}
	fails(t, dir, 2, "--since TX is required", "changes", "customers", "--db", "db")
}

func TestScan(t *testing.T) {
	t.Parallel()
	dir := customersStore(t)
	r := ok(t, dir, "scan", "customers", "--valid", "2024-01-20", "--with-tx", "--format", "json", "--db", "db")
	rows := jsonRows(t, r.stdout)
	if len(rows) != 3 || rows[0]["customer_id"] != "c1" || rows[1]["customer_id"] != "c2" || rows[2]["customer_id"] != "c4" {
		t.Fatalf("scan: %v", rows)
	}
	if rows[1]["score"] != nil || rows[1]["valid_to"] != nil || rows[1]["tx_to"] != nil {
		t.Fatalf("nulls: %v", rows[1])
	}
	r = ok(t, dir, "scan", "customers", "--valid", "2024-01-20", "--prefix", "c2", "--format", "table", "--db", "db")
	if lines := csvLines(r.stdout); len(lines) != 2 || !strings.HasPrefix(lines[1], "c2") {
		t.Fatalf("prefix scan:\n%s", r.stdout)
	}
	// Before the first load nothing is known.
	r = ok(t, dir, "scan", "customers", "--valid", "2024-01-20", "--tx", "2000-01-01T00:00:00Z", "--db", "db")
	if lines := csvLines(r.stdout); len(lines) != 1 {
		t.Fatalf("scan at an old tx:\n%s", r.stdout)
	}
}

func TestResolve(t *testing.T) {
	t.Parallel()
	dir := customersStore(t)
	write(t, dir, "orders.csv", `order_id,customer_id,ordered_on,city
o1,c1,2024-03-08,X
o2,c1,2024-03-12,Y
o3,c3,2024-06-01,Z
o4,c9,2024-03-01,W
`)
	args := []string{"resolve", "customers", "--facts", "orders.csv", "--key", "customer_id", "--at", "ordered_on", "--db", "db"}
	r := ok(t, dir, append(args, "--miss", "null")...)
	wantLines(t, r.stdout,
		"order_id,customer_id,ordered_on,city,sk,name,customers_city,score",
		"o1,c1,2024-03-08,X,1,Ada,Oslo,10",
		"o2,c1,2024-03-12,Y,2,Ada,Bergen,11",
		"o3,c3,2024-06-01,Z,,,,",
		"o4,c9,2024-03-01,W,,,,",
	)
	if !strings.Contains(r.stderr, "resolved 4 facts against customers: 2 found, 2 without a version") {
		t.Fatalf("summary: %s", r.stderr)
	}
	r = ok(t, dir, append(args, "--miss", "skip", "--format", "json")...)
	rows := jsonRows(t, r.stdout)
	if len(rows) != 2 || rows[1]["order_id"] != "o2" || rows[1]["customers_city"] != "Bergen" || rows[1]["city"] != "Y" {
		t.Fatalf("skip: %v", rows)
	}
	r = fails(t, dir, 1, "orders.csv line 4: key c3 at 2024-06-01, as of the latest commit: in a gap", args...)
	if r.stdout != "" {
		t.Fatalf("a failed resolve printed %q", r.stdout)
	}
	// As known before a correction, and from JSONL on stdin.
	t1 := firstTx(t, dir)
	correct(t, dir)
	facts := `{"customer_id":"c1","ordered_on":"2024-03-05","amount":5}` + "\n"
	base := []string{"resolve", "customers", "--facts", "-", "--facts-format", "jsonl", "--key", "customer_id", "--at", "ordered_on", "--format", "json", "--db", "db"}
	now := jsonRows(t, bt(t, dir, facts, base...).stdout)
	then := jsonRows(t, bt(t, dir, facts, append(base, "--tx", t1)...).stdout)
	if len(now) != 1 || len(then) != 1 || now[0]["city"] != "Bergen" || then[0]["city"] != "Oslo" {
		t.Fatalf("now %v, then %v", now, then)
	}
	if now[0]["amount"].(interface{ String() string }).String() != "5" {
		t.Fatalf("fact columns are kept: %v", now[0])
	}
	fails(t, dir, 2, "--miss", append(args, "--miss", "maybe")...)
	write(t, dir, "bad.csv", "order_id,customer_id,ordered_on\no1,c1,someday\n")
	fails(t, dir, 1, `bad.csv line 2, column 3 (ordered_on): "someday" is not a date`,
		"resolve", "customers", "--facts", "bad.csv", "--key", "customer_id", "--at", "ordered_on", "--db", "db")
}

func TestDumpAndStats(t *testing.T) {
	t.Parallel()
	dir := customersStore(t)
	r := ok(t, dir, "dump", "--table", "customers", "--db", "db")
	for _, want := range []string{
		"catalog,customers,,name=customers,id=1 kind=periods key=customer_id string axis=date",
		"current,customers,c1,table_id=1 valid_from=2024-01-01,",
		`valid_to=2024-03-11 tx_from=`,
		`attrs={name: ""Ada"", city: ""Oslo"", score: 10}`,
		"sk-index,customers,c1,table_id=1 sk=1 tx_from=",
		"txlog,customers,c1,table_id=1 tx=",
		"op=assert",
		"attr-names,customers,,table_id=1 ordinal=0,name=name",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("dump lacks %q", want)
		}
	}
	if strings.Contains(r.stdout, "\nmeta,") {
		t.Errorf("dump --table shows meta keys")
	}
	r = ok(t, dir, "dump", "--raw", "--format", "json", "--db", "db")
	rows := jsonRows(t, r.stdout)
	if rows[0]["keyspace"] != "meta" || rows[0]["key_hex"] == "" || rows[0]["value_hex"] == nil {
		t.Fatalf("raw dump: %v", rows[0])
	}
	r = ok(t, dir, "stats", "--db", "db")
	lines := csvLines(r.stdout)
	if len(lines) != 2 || lines[0] != "table,kind,keys,versions,records,retired,events" || lines[1] != "customers,periods,4,7,7,0,0" {
		t.Fatalf("stats:\n%s", r.stdout)
	}
	if !strings.Contains(r.stderr, "pebble size") {
		t.Fatalf("stats store line: %s", r.stderr)
	}
	correct(t, dir)
	r = ok(t, dir, "stats", "--format", "table", "--db", "db")
	if !strings.Contains(r.stdout, "pebble size") || !strings.Contains(r.stdout, "1 tables") {
		t.Fatalf("stats table:\n%s", r.stdout)
	}
	if f := strings.Fields(csvLines(r.stdout)[2]); strings.Join(f, " ") != "customers periods 4 7 9 2 0" {
		t.Fatalf("stats after a correction: %v", f)
	}
}
