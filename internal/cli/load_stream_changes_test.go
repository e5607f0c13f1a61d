package cli

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/bitempo/bitempo/internal/testlong"
)

// cdcFile writes n CDC rows over keys in random order: upserts and deletes
// ("d"), sequence numbers, repeated rows (duplicates, later in the file), two
// rows at one (at, seq) with different values (conflicts) and, when nulls,
// empty cells.
func cdcFile(t *testing.T, dir, name string, n, keys int, lo, hi int, seed uint64, nulls bool) string {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 5))
	var rows []string
	for range n {
		op := ""
		if r.IntN(6) == 0 {
			op = "d"
		}
		score := fmt.Sprint(r.IntN(4))
		if nulls && r.IntN(5) == 0 {
			score = ""
		}
		row := fmt.Sprintf("k%d,%d,%d,%s,%s,%s", r.IntN(keys), lo+r.IntN(hi-lo), r.IntN(3), op,
			[]string{"gold", "silver", "bronze"}[r.IntN(3)], score)
		rows = append(rows, row)
		if r.IntN(8) == 0 {
			rows = append(rows, row)
		}
	}
	r.Shuffle(len(rows), func(i, j int) { rows[i], rows[j] = rows[j], rows[i] })
	return write(t, dir, name, "id,at,seq,op,tier,score\n"+strings.Join(rows, "\n")+"\n")
}

// TestLoadChangesStreamedSameAsInMemory loads CDC files into changes tables
// in memory and streamed (key by key through sorted runs, the transaction
// spilling and committed by ingestion): shuffled rows with duplicates,
// conflicts and deletes, then a file of late and later events, then the first
// file again (a replay), then a file whose last row fails inside Apply. Both
// stores must say the same (but for transaction times) and hold the same
// bytes: versions, surrogate keys, event log and batch ids. The quick run
// (without BITEMPO_LONG=1) loads only the group-by table.
func TestLoadChangesStreamedSameAsInMemory(t *testing.T) {
	t.Parallel() // its own directory; a binary per load, which waits on syncs
	for _, c := range []struct {
		name   string
		create []string
	}{
		{"plain", nil},
		{"granularity and partial updates", []string{"--granularity", "10", "--ignore-nulls"}},
		{"group-by", []string{"--group-by", "tier", "--track-except", "score"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if c.name != "group-by" {
				testlong.Skip(t, "the same loads into every kind of changes table")
			}
			dir := t.TempDir()
			cdcFile(t, dir, "a.csv", 3000, 300, 0, 1000, 1, true)
			cdcFile(t, dir, "b.csv", 2000, 400, 500, 2000, 2, true)
			// A valid time of +inf passes the file's checks and fails inside
			// Apply, at a key in the middle.
			r := rand.New(rand.NewPCG(3, 3))
			var bad strings.Builder
			for i := range 500 {
				at := fmt.Sprint(r.IntN(3000))
				if i == 300 {
					at = fmt.Sprint(int64(math.MaxInt64))
				}
				fmt.Fprintf(&bad, `{"id":"k%d","at":%s,"seq":%d,"op":"%s","tier":"gold","score":%d}`+"\n",
					r.IntN(100), at, r.IntN(3), []string{"", "", "d"}[r.IntN(3)], r.IntN(4))
			}
			write(t, dir, "bad.jsonl", bad.String())
			create := append([]string{"create", "t", "--key", "id", "--axis", "int", "--kind", "changes"}, c.create...)
			for _, db := range []string{"mem", "str"} {
				ok(t, dir, append(create, "--db", db)...)
			}
			for _, file := range []string{"a.csv", "b.csv", "a.csv", "bad.jsonl"} {
				load := []string{"load", "t", file, "--at", "at", "--seq", "seq", "--op-col", "op", "--delete-value", "d"}
				m := bt(t, dir, "", append(load, "--db", "mem")...)
				s := bt(t, dir, "", append(append(load, "--db", "str"), streamed...)...)
				if m.code != s.code || txTime.ReplaceAllString(m.stderr, "TX") != txTime.ReplaceAllString(s.stderr, "TX") {
					t.Fatalf("%s: in memory exit %d:\n%s\nstreamed exit %d:\n%s", file, m.code, m.stderr, s.code, s.stderr)
				}
				if (file == "bad.jsonl") != (m.code != 0) {
					t.Fatalf("%s: exit %d: %s", file, m.code, m.stderr)
				}
				x, _ := dumpState(t, dir, "mem")
				y, _ := dumpState(t, dir, "str")
				if x != y {
					t.Fatalf("%s: the stores differ at %s", file, firstDiff(x, y))
				}
				ok(t, dir, "verify", "--db", "str")
				if left, _ := filepath.Glob(filepath.Join(dir, "str", "bitempo-spill-*")); len(left) > 0 {
					t.Fatalf("the streamed load left its run files: %v", left)
				}
				t.Logf("%s: %s", file, strings.TrimSpace(s.stderr))
			}
			if r := ok(t, dir, "scan", "t", "--format", "csv", "--db", "str"); len(csvLines(r.stdout)) < 100 {
				t.Fatalf("too few versions: the test is too weak:\n%s", r.stdout)
			}
		})
	}
}

// firstDiff shows the first line where two dumps differ.
func firstDiff(x, y string) string {
	a, b := strings.Split(x, "\n"), strings.Split(y, "\n")
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return fmt.Sprintf("line %d:\n%s\n%s", i+1, a[i], b[i])
		}
	}
	return fmt.Sprintf("%d lines against %d", len(a), len(b))
}

// TestLoadStdinSpooled loads stdin, which is copied to a spool file next to
// the store and then loaded as a file: streamed (--spill-rows 0) it gives what
// a load of the same file gives, into a periods table and into a changes table
// (whose default batch id is the content's hash, so the file load afterwards
// is a replay), names stdin in messages, and leaves no spool behind.
func TestLoadStdinSpooled(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	data := changesFileText(3000, 400, 9)
	write(t, dir, "c.csv", data)
	ok(t, dir, "create", "t", "--key", "id", "--axis", "int", "--db", "file")
	ok(t, dir, "create", "t", "--key", "id", "--axis", "int", "--db", "pipe")
	ok(t, dir, "load", "t", "c.csv", "--at", "at", "--db", "file")
	r := bt(t, dir, data, append([]string{"load", "t", "-", "--at", "at", "--db", "pipe"}, streamed...)...)
	if r.code != 0 || !strings.Contains(r.stderr, "stdin") {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, valid := range []string{"0", "2500", "4999"} {
		a := ok(t, dir, "scan", "t", "--valid", valid, "--format", "csv", "--db", "file").stdout
		b := ok(t, dir, "scan", "t", "--valid", valid, "--format", "csv", "--db", "pipe").stdout
		if withoutSK(a) != withoutSK(b) {
			t.Fatalf("valid %s: stdin and file loads differ", valid)
		}
	}
	ok(t, dir, "verify", "--db", "pipe")

	cdc := cdcFile(t, dir, "e.csv", 2000, 200, 0, 1000, 4, true)
	events, err := os.ReadFile(cdc)
	if err != nil {
		t.Fatal(err)
	}
	ok(t, dir, "create", "e", "--key", "id", "--axis", "int", "--kind", "changes", "--db", "pipe")
	load := []string{"load", "e", "-", "--at", "at", "--seq", "seq", "--op-col", "op", "--delete-value", "d", "--db", "pipe"}
	if r := bt(t, dir, string(events), append(load, streamed...)...); r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	r = ok(t, dir, "load", "e", "e.csv", "--at", "at", "--seq", "seq", "--op-col", "op", "--delete-value", "d", "--db", "pipe")
	if !strings.Contains(r.stderr, "1 batches already applied") {
		t.Fatalf("the file after its stdin load was not a replay: %s", r.stderr)
	}
	// A bad row is reported as a line of stdin.
	r = bt(t, dir, "id,at,tier\na,1,gold\nb,x,silver\n", append([]string{"load", "t", "-", "--at", "at", "--db", "pipe"}, streamed...)...)
	if r.code == 0 || !strings.Contains(r.stderr, "stdin line 3") {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".bitempo-stdin-*")); len(left) > 0 {
		t.Fatalf("stdin spools left behind: %v", left)
	}

	// A load killed while it copies stdin leaves its spool; the next load of
	// the store removes it.
	cmd := exec.Command(binary, "load", "t", "-", "--at", "at", "--db", "pipe")
	cmd.Dir = dir
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := in.Write([]byte("id,at,tier\na,1,gold\n")); err != nil {
		t.Fatal(err)
	}
	var left []string
	for deadline := time.Now().Add(30 * time.Second); len(left) == 0 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		left, _ = filepath.Glob(filepath.Join(dir, ".bitempo-stdin-*"))
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	in.Close()
	if len(left) == 0 {
		t.Fatal("no spool appeared next to the store while stdin was copied")
	}
	ok(t, dir, "load", "t", "c.csv", "--at", "at", "--db", "pipe")
	if left, _ := filepath.Glob(filepath.Join(dir, ".bitempo-stdin-*")); len(left) > 0 {
		t.Fatalf("the next load left the killed load's spool: %v", left)
	}
}

// changesFileText is changesFile's content.
func changesFileText(n, keys int, seed uint64) string {
	r := rand.New(rand.NewPCG(seed, 1))
	var b strings.Builder
	b.WriteString("id,at,tier,score\n")
	for range n {
		fmt.Fprintf(&b, "k%d,%d,%s,%d\n", r.IntN(keys), r.IntN(5000), []string{"gold", "silver", "bronze"}[r.IntN(3)], r.IntN(100))
	}
	return b.String()
}

// writeParquetGroups writes rows to a Parquet file in row groups of
// groupRows rows, as another writer might.
func writeParquetGroups(t *testing.T, dir, name string, cols []pqColumn, groupRows int, rows [][]any) string {
	t.Helper()
	p := filepath.Join(dir, name)
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	schema, err := parquetSchema(cols)
	if err != nil {
		t.Fatal(err)
	}
	w := parquet.NewGenericWriter[any](f, schema, parquet.MaxRowsPerRowGroup(int64(groupRows)))
	for _, vals := range rows {
		row := make(parquet.Row, len(cols))
		for i, c := range cols {
			v, err := pqValue(c, vals[i])
			if err != nil {
				t.Fatal(err)
			}
			row[i] = v.Level(0, map[bool]int{true: 0, false: 1}[v.IsNull()], i)
		}
		if _, err := w.WriteRows([]parquet.Row{row}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestLoadParquetStreamed loads a Parquet file of several row groups (with
// nulls, doubles, booleans, timestamps) in memory and streamed, row group by
// row group in two passes: into a periods table the loads say the same and
// hold the same versions (twinLoad); into a changes table the stores hold the
// same bytes. A file whose key column is a DOUBLE is refused the same way.
func TestLoadParquetStreamed(t *testing.T) {
	t.Parallel() // its own directory; a binary per load, which waits on syncs
	dir := t.TempDir()
	cols := []pqColumn{{name: "id", kind: pqString}, {name: "at", kind: pqInt64}, {name: "seq", kind: pqInt64}, {name: "op", kind: pqString},
		{name: "tier", kind: pqString}, {name: "score", kind: pqDouble}, {name: "vip", kind: pqBool}, {name: "seen", kind: pqTimestamp}}
	r := rand.New(rand.NewPCG(6, 6))
	var rows [][]any
	for range 3000 {
		var tier any = []string{"gold", "silver", "bronze"}[r.IntN(3)]
		if r.IntN(7) == 0 {
			tier = nil
		}
		op := []string{"", "", "", "", "d"}[r.IntN(5)]
		rows = append(rows, []any{fmt.Sprintf("k%d", r.IntN(300)), int64(r.IntN(5000)), int64(r.IntN(3)), op, tier,
			float64(r.IntN(1000)) / 8, r.IntN(2) == 0, int64(1_700_000_000_000_000 + r.Int64N(1e12))})
	}
	writeParquetGroups(t, dir, "c.parquet", cols, 250, rows)
	twinLoad(t, dir, []string{"create", "t", "--key", "id", "--axis", "int"},
		"load", "t", "c.parquet", "--at", "at", "--delete-col", "op", "--delete-value", "d", "--ignore", "seq")

	for _, db := range []string{"cmem", "cstr"} {
		ok(t, dir, "create", "t", "--key", "id", "--axis", "int", "--kind", "changes", "--db", db)
	}
	load := []string{"load", "t", "c.parquet", "--at", "at", "--seq", "seq", "--op-col", "op", "--delete-value", "d"}
	m := ok(t, dir, append(load, "--db", "cmem")...)
	s := ok(t, dir, append(append(load, "--db", "cstr"), streamed...)...)
	if txTime.ReplaceAllString(m.stderr, "TX") != txTime.ReplaceAllString(s.stderr, "TX") {
		t.Fatalf("in memory:\n%s\nstreamed:\n%s", m.stderr, s.stderr)
	}
	x, _ := dumpState(t, dir, "cmem")
	y, _ := dumpState(t, dir, "cstr")
	if x != y {
		t.Fatalf("the stores differ at %s", firstDiff(x, y))
	}
	ok(t, dir, "verify", "--db", "cstr")

	writeParquetGroups(t, dir, "badkey.parquet", []pqColumn{{name: "id", kind: pqDouble}, {name: "at", kind: pqInt64}}, 100,
		[][]any{{1.5, int64(1)}, {2.5, int64(2)}})
	a := bt(t, dir, "", "load", "t", "badkey.parquet", "--at", "at", "--db", "cmem")
	b := bt(t, dir, "", append([]string{"load", "t", "badkey.parquet", "--at", "at", "--db", "cstr"}, streamed...)...)
	if a.code == 0 || a.code != b.code || a.stderr != b.stderr {
		t.Fatalf("a DOUBLE key: in memory exit %d %q, streamed exit %d %q", a.code, a.stderr, b.code, b.stderr)
	}
}
