package cli

import (
	"fmt"
	"strings"
	"testing"

	"github.com/bitempo/bitempo/internal/testlong"
)

const customersCSV = `customer_id,valid_from,valid_to,name,city,score
c1,2024-01-01,2024-03-11,Ada,Oslo,10
c1,2024-03-11,2024-06-01,Ada,Bergen,11
c1,2024-06-01,9999-12-31,Ada,Oslo,12
c2,2024-01-15,,Bo,Trondheim,
c3,2024-02-01,2024-05-01,Cy,Tromsø,3
c3,2024-07-01,,Cy,Tromsø,4
c4,2024-01-01,2024-02-01,Di,Bodø,1
`

// customersStore creates a store with the customers table loaded as versions.
func customersStore(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	ok(t, dir, "create", "customers", "--key", "customer_id", "--axis", "date", "--db", "db")
	write(t, dir, "customers.csv", customersCSV)
	r := ok(t, dir, "load", "customers", "customers.csv", "--from", "valid_from", "--to", "valid_to", "--open-sentinel", "9999-12-31", "--db", "db")
	if !strings.Contains(r.stderr, "7 rows; versions inserted 7 / closed 0 / unchanged 0; conflicts 0") {
		t.Fatalf("summary: %s", r.stderr)
	}
	return dir
}

func TestLoadVersionsCSV(t *testing.T) {
	t.Parallel()
	dir := customersStore(t)
	r := ok(t, dir, "scan", "customers", "--valid", "2024-03-12", "--db", "db")
	wantLines(t, r.stdout,
		"customer_id,valid_from,valid_to,sk,name,city,score",
		"c1,2024-03-11,2024-06-01,2,Ada,Bergen,11",
		"c2,2024-01-15,,4,Bo,Trondheim,",
		"c3,2024-02-01,2024-05-01,5,Cy,Tromsø,3",
	)
	// Reloading the same versions changes nothing and commits no transaction.
	r = ok(t, dir, "load", "customers", "customers.csv", "--from", "valid_from", "--to", "valid_to", "--open-sentinel", "9999-12-31", "--db", "db")
	if !strings.Contains(r.stderr, "versions inserted 0 / closed 0 / unchanged 7") || !strings.Contains(r.stderr, "no transaction") {
		t.Fatalf("reload summary: %s", r.stderr)
	}
	// Scan output loads back as it was written, once its sk column is left out.
	r = ok(t, dir, "scan", "customers", "--valid", "2024-03-12", "--db", "db")
	write(t, dir, "scan.csv", r.stdout)
	fails(t, dir, 2, `column "sk" of scan.csv would be an attribute`, "load", "customers", "scan.csv", "--from", "valid_from", "--to", "valid_to", "--db", "db")
	r = ok(t, dir, "load", "customers", "scan.csv", "--from", "valid_from", "--to", "valid_to", "--ignore", "sk", "--db", "db")
	if !strings.Contains(r.stderr, "versions inserted 0 / closed 0 / unchanged 3") {
		t.Fatalf("reload of a scan: %s", r.stderr)
	}
	// --quiet drops the summary line.
	r = ok(t, dir, "load", "customers", "customers.csv", "--from", "valid_from", "--to", "valid_to", "--open-sentinel", "9999-12-31", "--db", "db", "--quiet")
	if r.stderr != "" {
		t.Fatalf("quiet load printed %q", r.stderr)
	}
}

func TestLoadVersionsJSONLFromStdin(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ok(t, dir, "create", "prices", "--key", "sku,store", "--key-types", "string,int64", "--db", "db")
	in := `{"sku":"a","store":1,"from":"2024-01-01T00:00:00Z","to":"2024-02-01T00:00:00.5Z","price":9.5,"live":true,"note":"x"}
{"sku":"a","store":1,"from":"2024-02-01T00:00:00.5Z","to":null,"price":10,"live":false}

{"sku":"a","store":2,"from":"2024-01-01T00:00:00Z","price":7,"live":true,"note":null}
`
	r := bt(t, dir, in, "load", "prices", "-", "--format", "jsonl", "--from", "from", "--to", "to", "--db", "db")
	if r.code != 0 {
		t.Fatalf("load: %+v", r)
	}
	r = ok(t, dir, "history", "prices", "a", "1", "--db", "db", "--format", "json")
	rows := jsonRows(t, r.stdout)
	if len(rows) != 2 {
		t.Fatalf("history rows: %v", rows)
	}
	first, second := rows[0], rows[1]
	if first["valid_to"] != "2024-02-01T00:00:00.5Z" || second["valid_from"] != "2024-02-01T00:00:00.5Z" || second["valid_to"] != nil {
		t.Fatalf("periods: %v", rows)
	}
	// A column of numbers with a decimal is float64 throughout: 10 reads as a number.
	if first["price"].(interface{ String() string }).String() != "9.5" || second["price"].(interface{ String() string }).String() != "10" {
		t.Fatalf("prices: %v %v", first["price"], second["price"])
	}
	if first["live"] != true || second["live"] != false || first["note"] != "x" || first["store"].(interface{ String() string }).String() != "1" {
		t.Fatalf("attrs: %v", rows)
	}
	// The second line has no "note": absent, so null in the output.
	if _, has := second["note"]; !has || second["note"] != nil {
		t.Fatalf("note: %v", second)
	}
	// An empty "from" is the beginning of time: open start prints empty.
	r = ok(t, dir, "scan", "prices", "--valid", "2024-01-15T00:00:00Z", "--prefix", "a", "--db", "db")
	if n := len(csvLines(r.stdout)); n != 3 {
		t.Fatalf("scan with prefix: %s", r.stdout)
	}
}

func TestLoadUpserts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ok(t, dir, "create", "customers", "--key", "customer_id", "--axis", "date", "--track-except", "email", "--db", "db")
	// Out of order on purpose: rows are applied in --at order.
	write(t, dir, "changes.jsonl", `{"customer_id":"c1","at":"2024-06-01","city":"Oslo","email":"a@x"}
{"customer_id":"c1","at":"2024-01-01","city":"Oslo","email":"a@x"}
{"customer_id":"c1","at":"2024-03-11","city":"Bergen","email":"a@x"}
{"customer_id":"c1","at":"2024-08-01","city":"Oslo","email":"ada@x"}
{"customer_id":"c2","at":"2024-01-01","city":"Bergen"}
{"customer_id":"c2","at":"2024-02-01","op":"gone"}
`)
	r := ok(t, dir, "load", "customers", "changes.jsonl", "--at", "at", "--delete-col", "op", "--delete-value", "gone", "--db", "db")
	if !strings.Contains(r.stderr, "6 rows; versions inserted 4 / closed 3 / unchanged 0 / updated in place 1") {
		t.Fatalf("summary: %s", r.stderr)
	}
	r = ok(t, dir, "history", "customers", "c1", "--db", "db")
	wantLines(t, r.stdout,
		"customer_id,valid_from,valid_to,sk,city,email",
		"c1,2024-01-01,2024-03-11,1,Oslo,a@x",
		"c1,2024-03-11,2024-06-01,3,Bergen,a@x",
		"c1,2024-06-01,,4,Oslo,ada@x",
	)
	fails(t, dir, 1, "after the last version", "get", "customers", "c2", "--valid", "2024-03-01", "--db", "db")
}

func TestLoadChangesTable(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ok(t, dir, "create", "subs", "--key", "account", "--kind", "changes", "--db", "db")
	feed := `account,ts,lsn,op,plan
a1,2024-01-10T09:00:00Z,1,upsert,basic
a1,2024-03-01T09:00:00Z,3,upsert,pro
a2,2024-02-01T12:00:00Z,2,upsert,basic
`
	late := `account,ts,lsn,op,plan
a1,2024-03-01T09:00:00Z,3,upsert,pro
a1,2024-02-01T08:00:00Z,5,upsert,plus
a2,2024-04-01T00:00:00Z,4,d,
`
	write(t, dir, "feed1.csv", feed)
	write(t, dir, "feed2.csv", late)
	args := []string{"--at", "ts", "--seq", "lsn", "--op-col", "op", "--delete-value", "d", "--db", "db"}
	ok(t, dir, append([]string{"load", "subs", "feed1.csv"}, args...)...)
	r := ok(t, dir, append([]string{"load", "subs", "feed2.csv"}, args...)...)
	if !strings.Contains(r.stderr, "duplicates 1") {
		t.Fatalf("summary: %s", r.stderr)
	}
	r = ok(t, dir, append([]string{"load", "subs", "feed2.csv"}, args...)...)
	if !strings.Contains(r.stderr, "1 batches already applied") || !strings.Contains(r.stderr, "no transaction") {
		t.Fatalf("replay summary: %s", r.stderr)
	}
	r = ok(t, dir, "history", "subs", "a1", "--db", "db")
	wantLines(t, r.stdout,
		"account,valid_from,valid_to,sk,plan",
		"a1,2024-01-10T09:00:00Z,2024-02-01T08:00:00Z,1,basic",
		"a1,2024-02-01T08:00:00Z,2024-03-01T09:00:00Z,4,plus",
		"a1,2024-03-01T09:00:00Z,,2,pro",
	)
	fails(t, dir, 1, "after the last version", "get", "subs", "a2", "--valid", "2024-05-01T00:00:00Z", "--db", "db")
	// The same feed as JSONL in one batch of its own id, small batches: the set of
	// events is what counts, so nothing changes.
	write(t, dir, "feed.jsonl", `{"account":"a1","ts":"2024-02-01T08:00:00Z","lsn":5,"op":"upsert","plan":"plus"}
{"account":"a1","ts":"2024-01-10T09:00:00Z","lsn":1,"op":"upsert","plan":"basic"}
`)
	r = ok(t, dir, "load", "subs", "feed.jsonl", "--at", "ts", "--seq", "lsn", "--op-col", "op", "--batch-id", "replay-1", "--batch-size", "1", "--db", "db")
	if !strings.Contains(r.stderr, "versions inserted 0 / closed 0 / unchanged 2") || !strings.Contains(r.stderr, "duplicates 2") {
		t.Fatalf("jsonl summary: %s", r.stderr)
	}
	r = ok(t, dir, "verify", "--db", "db")
	if !strings.Contains(r.stdout, ": ok") {
		t.Fatalf("verify: %s", r.stdout)
	}
	// A changes table takes no --from/--to.
	fails(t, dir, 2, "changes table", "load", "subs", "feed1.csv", "--from", "ts", "--to", "ts", "--db", "db")
}

func TestLoadBadRows(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ok(t, dir, "create", "customers", "--key", "customer_id", "--axis", "date", "--db", "db")
	write(t, dir, "bad.csv", `customer_id,valid_from,valid_to,score
c1,2024-01-01,2024-02-01,1
c2,2024-13-01,2024-02-01,2
,2024-01-01,2024-02-01,3
c4,2024-01-01,2024-02-01,x4
c5,2024-03-01,2024-02-01,5
c6,2024-01-01
c7,2024-01-01,,7
`)
	load := []string{"load", "customers", "bad.csv", "--from", "valid_from", "--to", "valid_to", "--types", "score=int64", "--db", "db"}
	fails(t, dir, 1, `bad.csv line 3, column 2 (valid_from): "2024-13-01" is not a date`, load...)
	r := ok(t, dir, "stats", "--db", "db")
	if !strings.Contains(r.stdout, "customers,periods,0,0,0,0,0") {
		t.Fatalf("a failed load committed something:\n%s", r.stdout)
	}
	r = ok(t, dir, append(load, "--skip-bad")...)
	for _, want := range []string{
		`skipped bad.csv line 3, column 2 (valid_from)`,
		`skipped bad.csv line 4, column 1 (customer_id): missing key`,
		`skipped bad.csv line 5, column 4 (score): "x4" is not an int64`,
		`skipped bad.csv line 6, column 3 (valid_to): valid period [2024-03-01, 2024-02-01) is empty or inverted`,
		`skipped bad.csv line 7: 2 fields, the header has 4`,
		`2 rows (5 skipped)`,
	} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	// Type inference: without --types, "x4" makes the score column strings.
	dir2 := t.TempDir()
	ok(t, dir2, "create", "c", "--key", "id", "--db", "db")
	write(t, dir2, "infer.csv", "id,at,n,f,b,s,zip\nx,2024-01-01T00:00:00Z,1,1.5,true,hi,0123\ny,2024-01-01T00:00:00Z,-2,2,FALSE,,0456\n")
	ok(t, dir2, "load", "c", "infer.csv", "--at", "at", "--db", "db")
	r = ok(t, dir2, "scan", "c", "--format", "json", "--valid", "2024-06-01T00:00:00Z", "--db", "db")
	rows := jsonRows(t, r.stdout)
	if len(rows) != 2 {
		t.Fatalf("rows: %v", rows)
	}
	y := rows[1]
	if y["n"].(interface{ String() string }).String() != "-2" || y["f"].(interface{ String() string }).String() != "2" ||
		y["b"] != false || y["s"] != nil || y["zip"] != "0456" {
		t.Fatalf("inferred types: %v", y)
	}
}

func TestLoadOverlapsRejected(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ok(t, dir, "create", "customers", "--key", "customer_id", "--axis", "date", "--db", "db")
	write(t, dir, "overlap.csv", `customer_id,from,to,city
c1,2024-01-01,2024-05-01,Oslo
c2,2024-01-01,,Bergen
c1,2024-03-01,,Bergen
`)
	fails(t, dir, 1, "overlap.csv lines 2 and 4 overlap for key c1: [2024-01-01, 2024-05-01) and [2024-03-01, ); nothing loaded",
		"load", "customers", "overlap.csv", "--from", "from", "--to", "to", "--db", "db")
	r := ok(t, dir, "stats", "--db", "db")
	if !strings.Contains(r.stdout, "customers,periods,0,0,0,0,0") {
		t.Fatalf("overlapping load committed something:\n%s", r.stdout)
	}
}

func TestLoadUsageErrors(t *testing.T) {
	t.Parallel()
	dir := customersStore(t)
	for _, c := range []struct {
		want string
		args []string
	}{
		{"say how rows become versions", []string{"load", "customers", "customers.csv"}},
		{"not both", []string{"load", "customers", "customers.csv", "--from", "valid_from", "--to", "valid_to", "--at", "valid_from"}},
		{"cannot tell the format", []string{"load", "customers", "customers.txt", "--at", "x"}},
		{"--types", []string{"load", "customers", "customers.csv", "--at", "valid_from", "--types", "score=decimal"}},
		{`--types names column "score" twice (float64 and string)`, []string{"load", "customers", "customers.csv", "--from", "valid_from", "--to", "valid_to", "--types", "score=float64,score=string"}},
		{`--types names column "score" twice`, []string{"load", "customers", "customers.csv", "--from", "valid_from", "--to", "valid_to", "--types", "score=float64", "--types", "score=float64"}},
		{"for changes tables", []string{"load", "customers", "customers.csv", "--at", "valid_from", "--seq", "x"}},
	} {
		fails(t, dir, 2, c.want, append(c.args, "--db", "db")...)
	}
	fails(t, dir, 1, `has no column "nope"`, "load", "customers", "customers.csv", "--at", "nope", "--db", "db")
	fails(t, dir, 1, "no such file", "load", "customers", "missing.csv", "--at", "x", "--db", "db")
}

func TestLoadTypesAndAxes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ok(t, dir, "create", "ev", "--key", "id,part", "--key-types", "bytes,uint64", "--axis", "int", "--db", "db")
	write(t, dir, "ev.csv", `id,part,from,to,when,flag,code,amount
00ff,7,10,20,2024-03-11T09:30:00+01:00,true,0042,3
00ff,7,20,,2024-03-12,false,17,2.25
`)
	ok(t, dir, "load", "ev", "ev.csv", "--from", "from", "--to", "to", "--types", "when=time,flag=bool,code=string,amount=float64", "--db", "db")
	r := ok(t, dir, "history", "ev", "00ff", "7", "--format", "json", "--db", "db")
	rows := jsonRows(t, r.stdout)
	if len(rows) != 2 {
		t.Fatalf("rows: %v", rows)
	}
	a, b := rows[0], rows[1]
	num := func(v any) string { return v.(interface{ String() string }).String() }
	if a["id"] != "00ff" || num(a["part"]) != "7" || num(a["valid_from"]) != "10" || num(a["valid_to"]) != "20" || b["valid_to"] != nil {
		t.Fatalf("key and int axis: %v", a)
	}
	if a["when"] != "2024-03-11T08:30:00Z" || b["when"] != "2024-03-12T00:00:00Z" || a["flag"] != true || a["code"] != "0042" || b["code"] != "17" {
		t.Fatalf("typed attributes: %v / %v", a, b)
	}
	if num(a["amount"]) != "3" || num(b["amount"]) != "2.25" {
		t.Fatalf("amounts: %v %v", a["amount"], b["amount"])
	}
	fails(t, dir, 1, "unknown key", "get", "ev", "00fe", "7", "--valid", "15", "--db", "db")
	fails(t, dir, 2, "not hex bytes", "get", "ev", "zz", "7", "--valid", "15", "--db", "db")
	r = ok(t, dir, "get", "ev", "00ff", "7", "--db", "db") // now, on an int axis: the open-ended version
	if !strings.Contains(r.stdout, ",20,,") {
		t.Fatalf("get now on an int axis: %s", r.stdout)
	}
	ok(t, dir, "create", "daily", "--key", "id", "--kind", "changes", "--granularity", "day", "--db", "db")
	r = ok(t, dir, "dump", "--table", "daily", "--db", "db")
	if !strings.Contains(r.stdout, "kind=changes key=id string axis=time granularity=86400000000") {
		t.Fatalf("catalog of a changes table:\n%s", r.stdout)
	}
	fails(t, dir, 2, "granularity", "create", "bad", "--key", "id", "--axis", "int", "--granularity", "day", "--db", "db")
}

// TestLoadLargeCompacts loads enough rows to make load compact the store
// afterwards, and checks the store reads and verifies; --no-compact skips it.
func TestLoadLargeCompacts(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("loads 100,000 rows")
	}
	testlong.Skip(t, "loads 100,000 rows")
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("id,valid_from,valid_to,n\n")
	for i := range compactAfterRows {
		fmt.Fprintf(&b, "k%06d,2024-01-01,,%d\n", i, i)
	}
	write(t, dir, "big.csv", b.String())
	ok(t, dir, "create", "big", "--key", "id", "--axis", "date", "--db", "db")
	r := ok(t, dir, "load", "big", "big.csv", "--from", "valid_from", "--to", "valid_to", "--db", "db")
	if !strings.Contains(r.stderr, "100000 rows") || !strings.Contains(r.stderr, "compacted the store in") {
		t.Fatalf("summary: %s", r.stderr)
	}
	r = ok(t, dir, "get", "big", "k099999", "--valid", "2024-06-01", "--db", "db")
	if !strings.Contains(r.stdout, "k099999,2024-01-01,,") || !strings.Contains(r.stdout, ",99999") {
		t.Fatalf("get after the load: %s", r.stdout)
	}
	ok(t, dir, "verify", "--db", "db")
	r = ok(t, dir, "load", "big", "big.csv", "--from", "valid_from", "--to", "valid_to", "--db", "db")
	if !strings.Contains(r.stderr, "no transaction") || strings.Contains(r.stderr, "compacted") {
		t.Fatalf("a reload that changes nothing must not compact: %s", r.stderr)
	}
	ok(t, dir, "create", "big2", "--key", "id", "--axis", "date", "--db", "db")
	r = ok(t, dir, "load", "big2", "big.csv", "--from", "valid_from", "--to", "valid_to", "--no-compact", "--db", "db")
	if strings.Contains(r.stderr, "compacted") {
		t.Fatalf("--no-compact compacted: %s", r.stderr)
	}
}

// TestCompactCommand compacts a loaded store and checks that it still reads
// and verifies; a missing store is an error, not a new empty one.
func TestCompactCommand(t *testing.T) {
	t.Parallel()
	dir := customersStore(t)
	r := ok(t, dir, "compact", "--db", "db")
	if !strings.Contains(r.stderr, "compacted db in ") || !strings.Contains(r.stderr, " files") {
		t.Fatalf("compact summary: %q", r.stderr)
	}
	r = ok(t, dir, "get", "customers", "c1", "--valid", "2024-03-12", "--db", "db")
	if !strings.Contains(r.stdout, "c1,2024-03-11,2024-06-01,2,Ada,Bergen,11") {
		t.Fatalf("get after compact: %s", r.stdout)
	}
	ok(t, dir, "verify", "--db", "db")
	fails(t, dir, 1, "no bitempo store at nowhere", "compact", "--db", "nowhere")
}

// TestLoadQuoteErrors: a quote left open, or a stray quote, names the line
// the field starts on and its column, held in memory or streamed.
func TestLoadQuoteErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ok(t, dir, "create", "customers", "--key", "customer_id", "--axis", "date", "--db", "db")
	write(t, dir, "open.csv", "customer_id,valid_from,valid_to,name,city\nc1,2024-01-01,,Ada,Oslo\nc2,2024-01-01,,\"Bo,Bergen\nc3,2024-01-01,,Cy,Tromsø\n")
	write(t, dir, "extra.csv", "customer_id,valid_from,valid_to,name,city\nc1,2024-01-01,,Ada,Oslo\nc2,2024-01-01,,Bo,Bergen,\"x\nc3\n")
	write(t, dir, "stray.csv", "customer_id,valid_from,valid_to,name,city\nc1,2024-01-01,,Ada,Oslo\nc2,2024-01-01,,\"Bo\"x,Bergen\n")
	for _, spill := range []string{"500000", "0"} {
		load := func(file string) []string {
			return []string{"load", "customers", file, "--from", "valid_from", "--to", "valid_to", "--spill-rows", spill, "--db", "db"}
		}
		fails(t, dir, 1, `open.csv line 3, column 4 (name): unterminated quoted field starting on line 3`, load("open.csv")...)
		r := fails(t, dir, 1, `extra.csv line 3: unterminated quoted field starting on line 3`, load("extra.csv")...)
		if strings.Contains(r.stderr, "()") {
			t.Fatalf("an empty column name: %s", r.stderr)
		}
		fails(t, dir, 1, `stray.csv line 3, column 4 (name): text after the closing quote`, load("stray.csv")...)
	}
}
