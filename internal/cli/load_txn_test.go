package cli

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bitempo/bitempo/internal/testlong"
)

// These tests check that a load is one transaction by default, and that an
// interrupted or failed load leaves the store exactly as it was.

// changesFile writes n SCD2 change rows over keys k0..k(keys-1) on an int axis.
func changesFile(t *testing.T, dir, name string, n, keys int, seed uint64) string {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 1))
	var b strings.Builder
	b.WriteString("id,at,tier,score\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "k%d,%d,%s,%d\n", r.IntN(keys), r.IntN(5000), []string{"gold", "silver", "bronze"}[r.IntN(3)], r.IntN(100))
	}
	return write(t, dir, name, b.String())
}

// txTime finds the transaction times in a command's output: the matches of
// txTimeRegexp, found as regexp finds them (leftmost first, not overlapping)
// by a scan that is many times faster on the dumps of a few MB that the load
// tests compare again and again.
var txTime txTimes

// txTimeRegexp is what a transaction time looks like: an RFC 3339 instant in
// UTC, with or without a fraction of a second.
var txTimeRegexp = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z`)

// txTimes has the methods of regexp.Regexp that the tests call on txTime.
type txTimes struct{}

// ReplaceAllString returns s with every transaction time replaced by repl.
func (txTimes) ReplaceAllString(s, repl string) string {
	var b strings.Builder
	last := 0
	eachTxTime(s, func(start, end int) {
		b.WriteString(s[last:start])
		b.WriteString(repl)
		last = end
	})
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// FindAllString returns the transaction times in s, at most n of them (all
// when n < 0).
func (txTimes) FindAllString(s string, n int) []string {
	var all []string
	eachTxTime(s, func(start, end int) {
		if n < 0 || len(all) < n {
			all = append(all, s[start:end])
		}
	})
	return all
}

// eachTxTime calls f with the bounds of each transaction time in s, left to
// right.
func eachTxTime(s string, f func(start, end int)) {
	for i := 0; i < len(s); {
		if n := txTimeAt(s[i:]); n > 0 {
			f(i, i+n)
			i += n
		} else {
			i++
		}
	}
}

// txTimeAt returns the length of the transaction time that s starts with, or
// 0 if it starts with none.
func txTimeAt(s string) int {
	const shape = "0000-00-00T00:00:00" // a 0 stands for any digit
	digit := func(c byte) bool { return '0' <= c && c <= '9' }
	if len(s) <= len(shape) {
		return 0
	}
	for i := range len(shape) {
		if shape[i] == '0' && !digit(s[i]) || shape[i] != '0' && s[i] != shape[i] {
			return 0
		}
	}
	n := len(shape)
	if s[n] == 'Z' {
		return n + 1
	}
	if s[n] != '.' {
		return 0
	}
	end := n + 1
	for end < len(s) && digit(s[end]) {
		end++
	}
	if end == n+1 || end == len(s) || s[end] != 'Z' {
		return 0
	}
	return end + 1
}

// dumpState is the store's every key and value, with transaction times
// replaced by TX, and the set of distinct transaction times it held.
func dumpState(t *testing.T, dir, db string) (string, map[string]bool) {
	t.Helper()
	r := ok(t, dir, "dump", "--db", db, "--format", "csv")
	txs := map[string]bool{}
	for _, m := range txTime.FindAllString(r.stdout, -1) {
		txs[m] = true
	}
	return txTime.ReplaceAllString(r.stdout, "TX"), txs
}

func TestLoadIsOneTransaction(t *testing.T) {
	t.Parallel() // its own directory; a binary per load, which waits on syncs
	dir := t.TempDir()
	changesFile(t, dir, "c.csv", 25_000, 2_000, 1)
	ok(t, dir, "create", "t", "--key", "id", "--axis", "int", "--db", "db")
	r := ok(t, dir, "load", "t", "c.csv", "--at", "at", "--db", "db")
	if !strings.Contains(r.stderr, "25000 rows") || strings.Contains(r.stderr, "transactions") {
		t.Fatalf("summary: %s", r.stderr)
	}
	if _, txs := dumpState(t, dir, "db"); len(txs) != 1 {
		t.Fatalf("the load wrote %d transaction times, want 1: %v", len(txs), txs)
	}
	// --batch-size is opt-in and commits in several transactions.
	ok(t, dir, "create", "u", "--key", "id", "--axis", "int", "--db", "db")
	r = ok(t, dir, "load", "u", "c.csv", "--at", "at", "--batch-size", "10000", "--db", "db")
	if !strings.Contains(r.stderr, "3 transactions") {
		t.Fatalf("batched summary: %s", r.stderr)
	}
}

// A row that passes the checks but fails inside the transaction (a group-by
// attribute that is a bool) is the last of the file: nothing is committed,
// not even the attribute names of the file's header.
func TestLoadFailingLastRowLeavesStoreUnchanged(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// --mixed-types: the bool g is read as a bool, not as the string its
	// first value established, so it reaches the transaction.
	ok(t, dir, "create", "t", "--key", "id", "--axis", "int", "--group-by", "g", "--mixed-types", "--db", "db")
	write(t, dir, "first.jsonl", `{"id":"a","at":1,"g":"x"}`+"\n")
	ok(t, dir, "load", "t", "first.jsonl", "--at", "at", "--db", "db")
	before, _ := dumpState(t, dir, "db")
	write(t, dir, "bad.jsonl", `{"id":"a","at":2,"g":"y","extra":1}
{"id":"b","at":1,"g":"z","extra":2}
{"id":"c","at":3,"g":true,"extra":3}
`)
	fails(t, dir, 1, "nothing loaded, the store is as it was before", "load", "t", "bad.jsonl", "--at", "at", "--db", "db")
	if after, _ := dumpState(t, dir, "db"); after != before {
		t.Fatalf("a failed load changed the store:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	// Batched, the rows before the failing batch stay, and the error says which.
	r := fails(t, dir, 1, "rows 1-2 of 3 (in --at order; the last committed is bad.jsonl line 1) were committed in 2 transactions", "load", "t", "bad.jsonl", "--at", "at", "--batch-size", "1", "--db", "db")
	if !strings.Contains(r.stderr, "to continue, run the same command again") {
		t.Fatalf("no way to continue: %s", r.stderr)
	}
}

// TestLoadInterrupt kills loads with SIGINT and SIGKILL at random moments: the
// store is then exactly as before the load or as after the whole load, both
// for a load held in memory and for one that spills to disk and ingests; the
// spilling loads are streamed (load_stream.go), whose runs are removed. The
// quick run (without BITEMPO_LONG=1) interrupts only the load held in memory,
// twice; the other loads of the matrix are long tests.
func TestLoadInterrupt(t *testing.T) {
	for _, c := range []struct {
		name                    string
		extra                   []string
		changes, stdin, parquet bool
	}{{"in memory", nil, false, false, false}, {"spilling", []string{"--spill-rows", "0", "--spill-bytes", "50000"}, false, false, false},
		{"streamed, many runs", streamed, false, false, false},
		{"changes table, in memory", nil, true, false, false},
		{"changes table, streamed", streamed, true, false, false},
		{"stdin, streamed", streamed, false, true, false},
		{"stdin, changes table, streamed", streamed, true, true, false},
		{"parquet, streamed", streamed, false, false, true},
		{"parquet, changes table, streamed", streamed, true, false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.name != "in memory" {
				testlong.Skip(t, "an interrupt matrix of loads")
			}
			testLoadInterrupt(t, c.extra, c.changes, c.stdin, c.parquet)
		})
	}
}

func testLoadInterrupt(t *testing.T, extra []string, changes, stdin, pq bool) {
	dir := t.TempDir()
	text := changesFile(t, dir, "c.csv", 12_000, 2_000, 2)
	file := "c.csv"
	switch {
	case stdin:
		file = "-"
	case pq:
		file = "c.parquet"
		csvToParquet(t, text, filepath.Join(dir, file))
	}
	load := append([]string{"load", "t", file, "--at", "at"}, extra...)
	create := []string{"create", "t", "--key", "id", "--axis", "int"}
	if changes {
		create = append(create, "--kind", "changes")
	}
	run := func(db string) *exec.Cmd {
		cmd := exec.Command(binary, append(load, "--db", db)...)
		cmd.Dir = dir
		if stdin {
			f, err := os.Open(filepath.Join(dir, "c.csv"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { f.Close() })
			cmd.Stdin = f
		}
		return cmd
	}
	spools := func() []string {
		left, _ := filepath.Glob(filepath.Join(dir, ".bitempo-stdin-*"))
		return left
	}
	ok(t, dir, append(create, "--db", "ref")...)
	before, _ := dumpState(t, dir, "ref")
	start := time.Now()
	if out, err := run("ref").CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	took := time.Since(start)
	after, _ := dumpState(t, dir, "ref")
	trials := testlong.Size(6, 2)
	if testing.Short() {
		trials = 2
	}
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 3))
	seen := map[string]int{}
	for i := range trials {
		sig := []syscall.Signal{syscall.SIGINT, syscall.SIGKILL}[i%2]
		db := fmt.Sprintf("db%d", i)
		ok(t, dir, append(create, "--db", db)...)
		cmd := run(db)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// A SIGINT must come after the tool installed its handler, which a
		// process cannot do before it starts: the first quarter of the load's
		// time is left to SIGKILL.
		delay := time.Duration(r.Int64N(int64(took) * 2))
		if sig == syscall.SIGINT {
			delay = took/4 + time.Duration(r.Int64N(int64(took)*7/4))
		}
		time.Sleep(delay)
		_ = cmd.Process.Signal(sig)
		err := cmd.Wait()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		got, txs := dumpState(t, dir, db)
		t.Logf("%v after %v: exit %d", sig, delay, code)
		switch {
		case got == before:
			seen["before"]++
			if sig == syscall.SIGINT && (code != exitSignal || !strings.Contains(stderr.String(), "interrupted") || !strings.Contains(stderr.String(), "nothing loaded, the store is as it was before")) {
				t.Fatalf("%v after %v: store as before, but exit %d and stderr %q", sig, delay, code, stderr.String())
			}
		case got == after && len(txs) == 1:
			seen["after"]++
			if sig == syscall.SIGINT && code != 0 {
				t.Fatalf("%v after %v: the load committed, but exit %d and stderr %q", sig, delay, code, stderr.String())
			}
		default:
			t.Fatalf("%v after %v left the store neither as before nor as after the load (exit %d, stderr %q)", sig, delay, code, stderr.String())
		}
		if entries, _ := filepath.Glob(filepath.Join(dir, db, "bitempo-spill-*")); len(entries) > 0 && sig == syscall.SIGINT {
			t.Fatalf("an interrupted load left its spill files: %v", entries)
		}
		if left := spools(); len(left) > 0 && sig == syscall.SIGINT {
			t.Fatalf("an interrupted load left its stdin spool: %v", left)
		}
		if left := spools(); len(left) > 0 {
			// A killed load's spool goes with the next load of the store.
			bt(t, dir, "id,at,tier,score\n", "load", "t", "-", "--at", "at", "--db", db)
			if left := spools(); len(left) > 0 {
				t.Fatalf("the next load left the killed load's stdin spool: %v", left)
			}
		}
	}
	t.Logf("outcomes over %d trials (load takes %v): %v", trials, took, seen)
}

// csvToParquet writes changesFile's rows (id,at,tier,score) as a Parquet
// file of several row groups.
func csvToParquet(t *testing.T, csvPath, pqPath string) {
	t.Helper()
	data, err := os.ReadFile(csvPath)
	if err != nil {
		t.Fatal(err)
	}
	var rows [][]any
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n")[1:] {
		f := strings.Split(line, ",")
		at, _ := strconv.ParseInt(f[1], 10, 64)
		score, _ := strconv.ParseInt(f[3], 10, 64)
		rows = append(rows, []any{f[0], at, f[2], score})
	}
	writeParquetGroups(t, filepath.Dir(pqPath), filepath.Base(pqPath),
		[]pqColumn{{name: "id", kind: pqString}, {name: "at", kind: pqInt64}, {name: "tier", kind: pqString}, {name: "score", kind: pqInt64}}, 1000, rows)
}

// TestLoadSpillSameVersions forces the spilling path (rows grouped by key,
// writes spilled to disk with a tiny budget, committed by ingestion) and checks
// it gives the versions of the in-memory path, for a first load and for a
// second one that changes and retires what the first wrote. The files have
// 10,000 rows with BITEMPO_LONG=1, 3,000 over fewer keys in the quick run.
func TestLoadSpillSameVersions(t *testing.T) {
	t.Parallel() // its own directory; a binary per load, which waits on syncs
	dir := t.TempDir()
	rows, keys := testlong.Size(10_000, 3_000), testlong.Size(1_000, 300)
	changesFile(t, dir, "a.csv", rows, keys*3/2, 4)
	changesFile(t, dir, "b.csv", rows, keys*2, 5)
	for _, db := range []string{"mem", "spill"} {
		ok(t, dir, "create", "t", "--key", "id", "--axis", "int", "--db", db)
	}
	spill := []string{"--spill-rows", "0", "--spill-bytes", "20000"}
	for _, f := range []string{"a.csv", "b.csv"} {
		m := ok(t, dir, "load", "t", f, "--at", "at", "--db", "mem")
		s := ok(t, dir, append([]string{"load", "t", f, "--at", "at", "--db", "spill"}, spill...)...)
		// The summaries agree but for the transaction time.
		if txTime.ReplaceAllString(m.stderr, "TX") != txTime.ReplaceAllString(s.stderr, "TX") {
			t.Fatalf("summaries differ:\n%s\n%s", m.stderr, s.stderr)
		}
		for _, valid := range []string{"0", "100", "2500", "4999"} {
			a := ok(t, dir, "scan", "t", "--valid", valid, "--db", "mem").stdout
			b := ok(t, dir, "scan", "t", "--valid", valid, "--db", "spill").stdout
			if withoutSK(a) != withoutSK(b) {
				t.Fatalf("%s, valid %s: versions differ", f, valid)
			}
		}
		ok(t, dir, "verify", "--db", "spill")
	}
	if _, txs := dumpState(t, dir, "spill"); len(txs) != 2 {
		t.Fatalf("two loads wrote %d transaction times", len(txs))
	}
	a := ok(t, dir, "stats", "--format", "csv", "--db", "mem").stdout
	b := ok(t, dir, "stats", "--format", "csv", "--db", "spill").stdout
	if a != b {
		t.Fatalf("stats differ:\n%s\n%s", a, b)
	}
}

// withoutSK drops the sk column (the fourth) of scan output and sorts the lines.
func withoutSK(out string) string {
	lines := csvLines(out)
	for i, l := range lines {
		f := strings.Split(l, ",")
		lines[i] = strings.Join(append(f[:3:3], f[4:]...), ",")
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// TestLoadPeriodsLateChanges loads change files one by one into a periods
// table. The no-op repeat of file 1 is dropped, so file 2's earlier change runs
// over it; the summaries say so, and a changes table (or one file) gives the
// history the events describe.
func TestLoadPeriodsLateChanges(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write(t, dir, "r1.csv", "id,at,tier\nc1,2024-01-01,gold\nc1,2024-03-01,gold\n")
	write(t, dir, "r2.csv", "id,at,tier\nc1,2024-02-01,silver\n")
	write(t, dir, "r3.csv", "id,at,tier\nc1,2024-01-15,bronze\n")
	ok(t, dir, "create", "p", "--key", "id", "--axis", "date", "--db", "db")
	r := ok(t, dir, "load", "p", "r1.csv", "--at", "at", "--db", "db")
	if !strings.Contains(r.stderr, "late rows 0 (dated before or between stored versions), no-op rows dropped 1") {
		t.Fatalf("r1 summary: %s", r.stderr)
	}
	ok(t, dir, "load", "p", "r2.csv", "--at", "at", "--db", "db")
	r = ok(t, dir, "history", "p", "c1", "--db", "db")
	wantLines(t, r.stdout, "id,valid_from,valid_to,sk,tier", "c1,2024-01-01,2024-02-01,1,gold", "c1,2024-02-01,,2,silver")
	// A row dated inside a closed version is late.
	r = ok(t, dir, "load", "p", "r3.csv", "--at", "at", "--db", "db")
	if !strings.Contains(r.stderr, "late rows 1") {
		t.Fatalf("r3 summary: %s", r.stderr)
	}
	// A changes table gives gold/silver/gold, whatever the files.
	ok(t, dir, "create", "c", "--key", "id", "--axis", "date", "--kind", "changes", "--db", "db")
	ok(t, dir, "load", "c", "r1.csv", "--at", "at", "--db", "db")
	ok(t, dir, "load", "c", "r2.csv", "--at", "at", "--db", "db")
	r = ok(t, dir, "history", "c", "c1", "--db", "db")
	wantLines(t, r.stdout, "id,valid_from,valid_to,sk,tier", "c1,2024-01-01,2024-02-01,1,gold", "c1,2024-02-01,2024-03-01,2,silver", "c1,2024-03-01,,3,gold")
}

// A load reading stdin that never ends stops on SIGINT, saying nothing was loaded.
func TestLoadInterruptWhileReadingStdin(t *testing.T) {
	dir := t.TempDir()
	ok(t, dir, "create", "t", "--key", "id", "--axis", "int", "--db", "db")
	cmd := exec.Command(binary, "load", "t", "-", "--at", "at", "--db", "db")
	cmd.Dir = dir
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := stdin.Write([]byte("id,at,tier\na,1,gold\n")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	_ = cmd.Process.Signal(syscall.SIGINT)
	err = cmd.Wait()
	ee, isExit := err.(*exec.ExitError)
	if !isExit || ee.ExitCode() != exitSignal || !strings.Contains(stderr.String(), "interrupted while reading stdin; nothing loaded, the store is as it was before") {
		t.Fatalf("exit %v, stderr %q", err, stderr.String())
	}
}

// TestTxTimeFindsWhatItsRegexpFinds checks txTime against txTimeRegexp on
// outputs with transaction times, near misses and random bytes of their
// alphabet.
func TestTxTimeFindsWhatItsRegexpFinds(t *testing.T) {
	t.Parallel()
	inputs := []string{
		"", "Z", "2024-01-02T03:04:05Z", "2024-01-02T03:04:05.123456Z", "x2024-01-02T03:04:05Zy",
		"12024-01-02T03:04:05.1Z,2024-01-02T03:04:05.Z", "2024-01-02T03:04:05.12", "2024-01-02T03:04:05",
		"2024-01-02T03:04:05.1x2024-01-02T03:04:06Z", "2024-01-02T03:04:05Z2024-01-02T03:04:05.9Z",
		"bitempo: loaded t: 3 transactions, tx 2026-12-02T19:01:24.23952Z .. 2026-12-02T19:01:25.037195Z\n",
	}
	r := rand.New(rand.NewPCG(1, 2))
	const alphabet = "0123456789-T:.Z,x"
	for range 2000 {
		b := []byte("2024-01-02T03:04:05.67Z")
		for range r.IntN(4) {
			b[r.IntN(len(b))] = alphabet[r.IntN(len(alphabet))]
		}
		inputs = append(inputs, string(b)+string(b[:r.IntN(len(b))]))
	}
	for _, in := range inputs {
		if got, want := txTime.ReplaceAllString(in, "TX"), txTimeRegexp.ReplaceAllString(in, "TX"); got != want {
			t.Fatalf("%q: ReplaceAllString gives %q, the regexp %q", in, got, want)
		}
		if got, want := txTime.FindAllString(in, -1), txTimeRegexp.FindAllString(in, -1); !slices.Equal(got, want) {
			t.Fatalf("%q: FindAllString gives %q, the regexp %q", in, got, want)
		}
	}
}
