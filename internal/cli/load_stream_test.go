package cli

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/bitempo/bitempo/internal/testlong"
	"github.com/bitempo/bitempo/store"
)

// These tests cover the streamed load (load_stream.go): a one-transaction
// load of a CSV or JSONL file of more than --spill-rows rows reads the file in
// two passes and sorts its rows through runs on disk. --spill-rows 0 forces
// it; a tiny --spill-bytes makes many runs (more than maxRunFanIn, so runs are
// merged in two levels).

var streamed = []string{"--spill-rows", "0", "--spill-bytes", "2000"}

// twinLoad runs one load command against a store loaded in memory and against
// a store loaded streamed, and checks that both say the same (but for
// transaction times) and hold the same versions (but for surrogate keys, which
// the streamed load numbers in key order).
func twinLoad(t *testing.T, dir string, create []string, load ...string) result {
	t.Helper()
	var res [2]result
	for i, db := range []string{"mem", "str"} {
		if _, err := os.Stat(filepath.Join(dir, db)); err != nil {
			ok(t, dir, append(create, "--db", db)...)
		}
		args := append(append([]string{}, load...), "--db", db)
		if db == "str" {
			args = append(args, streamed...)
		}
		res[i] = bt(t, dir, "", args...)
	}
	m, s := res[0], res[1]
	if m.code != s.code || txTime.ReplaceAllString(m.stderr, "TX") != txTime.ReplaceAllString(s.stderr, "TX") {
		t.Fatalf("%v: in memory exit %d, stderr:\n%s\nstreamed exit %d, stderr:\n%s", load, m.code, m.stderr, s.code, s.stderr)
	}
	for _, valid := range []string{"0", "100", "2500", "4999"} {
		x := ok(t, dir, "scan", "t", "--valid", valid, "--format", "csv", "--db", "mem").stdout
		y := ok(t, dir, "scan", "t", "--valid", valid, "--format", "csv", "--db", "str").stdout
		if withoutSK(x) != withoutSK(y) {
			t.Fatalf("%v, valid %s: versions differ:\n%s\n---\n%s", load, valid, x, y)
		}
	}
	ok(t, dir, "verify", "--db", "str")
	if left, _ := filepath.Glob(filepath.Join(dir, "str", "bitempo-spill-*")); len(left) > 0 {
		t.Fatalf("the streamed load left its run files: %v", left)
	}
	return s
}

// mixedFile writes n rows over keys with every kind of column: integers,
// decimals (one that a float64 cannot hold, late in the file), booleans, text,
// empty cells, times, deletions; JSONL lines leave fields out and add a field
// late, so columns appear in the middle of the file.
func mixedFile(t *testing.T, dir, name string, n, keys int, seed uint64, jsonl bool) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 7))
	var b strings.Builder
	if !jsonl {
		b.WriteString("id,at,n,dec,flag,text,when,op\n")
	}
	for i := range n {
		dec := fmt.Sprintf("%d.%d", r.IntN(1000), r.IntN(100))
		if i == n-3 {
			dec = "12345678901234567890.5"
		}
		text := []string{"gold", "", "silver, or \"quoted\"", "ünï"}[r.IntN(4)]
		op := []string{"", "", "", "", "d"}[r.IntN(5)]
		when := fmt.Sprintf("2024-%02d-%02dT10:00:00Z", 1+r.IntN(12), 1+r.IntN(28))
		if !jsonl {
			fmt.Fprintf(&b, "k%d,%d,%d,%s,%t,\"%s\",%s,%s\n", r.IntN(keys), r.IntN(5000), r.IntN(100)-50, dec, r.IntN(2) == 0,
				strings.ReplaceAll(text, `"`, `""`), when, op)
			continue
		}
		fmt.Fprintf(&b, `{"id":"k%d","at":%d,"n":%d,"dec":%s`, r.IntN(keys), r.IntN(5000), r.IntN(100)-50, dec)
		if r.IntN(3) > 0 {
			fmt.Fprintf(&b, `,"flag":%t,"text":%q`, r.IntN(2) == 0, text)
		}
		if i > n/2 {
			fmt.Fprintf(&b, `,"late":%d`, r.IntN(10))
		}
		fmt.Fprintf(&b, `,"when":%q,"op":%q}`+"\n", when, op)
	}
	write(t, dir, name, b.String())
}

// TestLoadStreamedSameVersions checks that the streamed load gives exactly the
// versions, summary and warnings of the in-memory load, for change rows (CSV
// and JSONL, with inference, --types and deletions), for a second load over
// the first, and for version rows.
func TestLoadStreamedSameVersions(t *testing.T) {
	t.Parallel() // its own directory; a binary per load, which waits on syncs
	dir := t.TempDir()
	// when is text in a.csv and a time in b.jsonl: mixed types, on purpose.
	create := []string{"create", "t", "--key", "id", "--axis", "int", "--mixed-types"}
	mixedFile(t, dir, "a.csv", 3000, 400, 1, false)
	mixedFile(t, dir, "b.jsonl", 3000, 500, 2, true)
	r := twinLoad(t, dir, create, "load", "t", "a.csv", "--at", "at", "--delete-col", "op", "--delete-value", "d")
	for _, want := range []string{`column "dec": 12345678901234567890.5 cannot be held exactly`, "3000 rows"} {
		if !strings.Contains(r.stderr, want) {
			t.Fatalf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	r = twinLoad(t, dir, create, "load", "t", "b.jsonl", "--at", "at", "--delete-col", "op", "--types", "when=time")
	if !strings.Contains(r.stderr, "3000 rows") {
		t.Fatalf("summary: %s", r.stderr)
	}
	// Versions: one per key and period, no overlaps.
	var b strings.Builder
	b.WriteString("id,from,to,v,w\n")
	for i := range 2000 {
		k, p := i%300, i/300
		to := fmt.Sprint(p*10 + 10)
		if p == 6 {
			to = ""
		}
		fmt.Fprintf(&b, "v%d,%d,%s,%d,%s\n", k, p*10, to, i%7, []string{"x", "1", "2.5"}[i%3])
	}
	write(t, dir, "v.csv", b.String())
	r = twinLoad(t, dir, create, "load", "t", "v.csv", "--from", "from", "--to", "to")
	if !strings.Contains(r.stderr, "2000 rows") || !strings.Contains(r.stderr, "; tx ") || strings.Contains(r.stderr, "transactions") {
		t.Fatalf("the versions load is not one transaction: %s", r.stderr)
	}
}

// TestLoadStreamedBadRows checks that a bad row (found in the second pass, at
// the end of the file, or one that does not even split into fields) fails the
// streamed load with the in-memory load's error and writes nothing, that
// --skip-bad skips the same rows, and that overlapping versions are refused.
// The quick run (without BITEMPO_LONG=1) tries three of the bad files: a row
// that does not split into fields, a bad type at the end of the file and a
// bad first row.
func TestLoadStreamedBadRows(t *testing.T) {
	t.Parallel() // its own directory; a binary per load, which waits on syncs
	dir := t.TempDir()
	create := []string{"create", "t", "--key", "id", "--axis", "int"}
	good := changesFile(t, dir, "good.csv", 3000, 300, 9)
	data, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	twinLoad(t, dir, create, "load", "t", "good.csv", "--at", "at")
	before, _ := dumpState(t, dir, "str")
	for name, tail := range map[string]string{
		"late-time.csv":  "k1,soon,gold,1\n",
		"fields.csv":     "k1,5,gold\n",
		"missing.csv":    ",5,gold,1\n",
		"utf8.csv":       "k1,5,g\xffld,1\n",
		"typed.csv":      "k1,5,gold,1.5\nk2,6,gold,x\n",
		"two-bad.csv":    "k1,x,gold,1\nk2,5,gold,1,2\n",
		"first-line.csv": "",
	} {
		if !testlong.Enabled() && name != "fields.csv" && name != "typed.csv" && name != "first-line.csv" {
			continue
		}
		content := string(data) + tail
		if name == "first-line.csv" {
			content = strings.Replace(content, "\n", "\nk0,-,gold,1\n", 1)
		}
		write(t, dir, name, content)
		r := twinLoad(t, dir, create, "load", "t", name, "--at", "at", "--types", "score=int64")
		if r.code != 1 || !strings.Contains(r.stderr, "nothing loaded") || !strings.Contains(r.stderr, name+" line ") {
			t.Fatalf("%s: exit %d, stderr:\n%s", name, r.code, r.stderr)
		}
		if after, _ := dumpState(t, dir, "str"); after != before {
			t.Fatalf("%s: a failed streamed load changed the store", name)
		}
		twinLoad(t, dir, create, "load", "t", name, "--at", "at", "--types", "score=int64", "--skip-bad")
		before, _ = dumpState(t, dir, "str")
	}
	// Overlapping versions of one key: refused, nothing written.
	write(t, dir, "over.csv", "id,from,to,v\na,1,5,1\nb,1,2,1\na,4,9,2\n")
	r := twinLoad(t, dir, create, "load", "t", "over.csv", "--from", "from", "--to", "to")
	if r.code != 1 || !strings.Contains(r.stderr, "over.csv lines 2 and 4 overlap for key a") {
		t.Fatalf("overlaps: exit %d, stderr:\n%s", r.code, r.stderr)
	}
}

// TestRunRowRoundTrip checks that a row read back from a run is the row
// written, for every kind of key component and attribute value, and that a
// cut record is an error, not a panic.
func TestRunRowRoundTrip(t *testing.T) {
	t.Parallel()
	in := &input{cols: []string{"k1", "k2", "k3", "a", "b", "c", "d", "e", "f", "g"}}
	attrCols := []int{3, 4, 5, 6, 7, 8, 9}
	when := time.Date(2024, 2, 29, 10, 11, 12, 345678000, time.UTC)
	row := loadRow{line: 12345, key: store.Key{int64(-7), uint64(1 << 63), []byte{0, 0xff}}, tuple: "\x01tuple",
		from: store.NegInfinity, to: store.Infinity, at: -5, seq: 1 << 40, del: true,
		attrs: store.Attrs{"a": nil, "b": int64(math.MinInt64), "c": math.Inf(-1), "d": true, "e": false, "f": "ünï", "g": when}}
	rec, err := encodeRow(nil, &row, in, attrCols)
	if err != nil {
		t.Fatal(err)
	}
	var framed bytes.Buffer
	framed.Write(appendRunRow(nil, &runRow{tuple: row.tuple, at: row.at, seq: 9, rec: rec}))
	var rr runRow
	if err := readRunRow(bufio.NewReader(&framed), &rr); err != nil {
		t.Fatal(err)
	}
	got, err := decodeRow(rr.rec, rr.tuple, in, attrCols)
	if err != nil {
		t.Fatal(err)
	}
	got.at = rr.at
	if !reflect.DeepEqual(got, row) || rr.seq != 9 {
		t.Fatalf("read back\n%#v\nwant\n%#v", got, row)
	}
	for n := range len(rec) {
		if _, err := decodeRow(rec[:n], row.tuple, in, attrCols); !errors.Is(err, errRunCorrupt) {
			t.Fatalf("a record cut to %d of %d bytes: %v", n, len(rec), err)
		}
	}
	if _, err := encodeRow(nil, &loadRow{attrs: store.Attrs{"a": []int{1}}}, in, attrCols); err == nil {
		t.Fatal("an attribute value of no run type was encoded")
	}
}

// TestRunFilesHaveNoName checks that a load's sorted runs leave no file in
// their directory from the moment each is created (they are unlinked and read
// back through their handles, so a killed load leaves nothing), that runs past
// 2 x maxRunFanIn are merged as they come, and that the merged runs read back
// every row in key order, then --at order, as often as they are read.
func TestRunFilesHaveNoName(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	in := &input{cols: []string{"k", "v"}}
	rs := &runSorter{dir: dir, budget: 1, byAt: true, attrCols: []int{1}}
	defer rs.close()
	const n = 3*maxRunFanIn + 5 // one run a row: merged while written, then by finish
	for i := range n {
		k := fmt.Sprintf("k%03d", (i*37)%50)
		row := loadRow{line: i + 2, key: store.Key{k}, tuple: k, at: int64(n - i), attrs: store.Attrs{"v": int64(i)}}
		if err := rs.add(&row, in); err != nil {
			t.Fatal(err)
		}
		if len(rs.runs) >= 2*maxRunFanIn {
			t.Fatalf("%d runs held after row %d: more than 2 x maxRunFanIn", len(rs.runs), i)
		}
		if left, err := os.ReadDir(dir); err != nil || len(left) > 0 {
			t.Fatalf("after row %d the run directory holds %v (%v)", i, left, err)
		}
	}
	if err := rs.finish(); err != nil {
		t.Fatal(err)
	}
	if len(rs.runs) > maxRunFanIn {
		t.Fatalf("%d runs after finish, want at most %d", len(rs.runs), maxRunFanIn)
	}
	for pass := range 2 {
		m, err := rs.merge()
		if err != nil {
			t.Fatal(err)
		}
		var prev loadRow
		rows := 0
		for {
			group, err := m.nextKey(nil, in)
			if err != nil {
				t.Fatal(err)
			}
			if len(group) == 0 {
				break
			}
			for _, r := range group {
				if rows > 0 && (r.tuple < prev.tuple || r.tuple == prev.tuple && r.at <= prev.at) {
					t.Fatalf("pass %d: row %s at %d read after %s at %d", pass, r.tuple, r.at, prev.tuple, prev.at)
				}
				prev = r
				rows++
			}
		}
		m.close()
		if rows != n {
			t.Fatalf("pass %d read %d rows, want %d", pass, rows, n)
		}
	}
	if left, err := os.ReadDir(dir); err != nil || len(left) > 0 {
		t.Fatalf("the run directory holds %v (%v)", left, err)
	}
}
