package cli

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bitempo/bitempo/internal/testlong"
)

// withFailingEvent writes to dir/name the CDC file at src (cdcFile's columns)
// with the --at of its row nearest the middle whose event (id, at, seq) is
// the only one of its kind replaced by +inf, which passes the file's checks
// and fails inside Apply: every other row, and so which rows are kept as the
// last of their event, is the same as in src.
func withFailingEvent(t *testing.T, src, dir, name string) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(cdcFileText(t, src), "\n"), "\n")
	event := func(line string) string {
		f := strings.Split(line, ",")
		return strings.Join(f[:3], ",")
	}
	count := map[string]int{}
	for _, l := range lines[1:] {
		count[event(l)]++
	}
	for i := len(lines) / 2; i < len(lines); i++ {
		if count[event(lines[i])] == 1 {
			f := strings.Split(lines[i], ",")
			f[1] = fmt.Sprint(int64(math.MaxInt64))
			lines[i] = strings.Join(f, ",")
			write(t, dir, name, strings.Join(lines, "\n")+"\n")
			return
		}
	}
	t.Fatal("no row of a unique event in the second half of the file")
}

// TestBatchedChangesLoadStreamedSameAsInMemory loads CDC files into changes
// tables with --batch-size, in memory and streamed (through runs sorted by
// event, then by file order): shuffled rows with duplicates, conflicts (ties
// at one key, --at and --seq), deletes and nulls, then a file of late and
// later events, then the first file again (every batch a replay), then a file
// with two bad rows (failing with nothing loaded, then loaded with
// --skip-bad), then a file whose row in the middle fails inside Apply (the
// batches before it commit).
// The two loads must say the same (but for transaction times) and leave the
// same bytes: versions, surrogate keys, event log and batch ids. A load of a
// file whose middle row fails is then finished by the same batch id and the
// file without that row, skipping the committed batches, to the store an
// uninterrupted load of that file gives. The quick run (without
// BITEMPO_LONG=1) loads files of a third of the rows over a third of the keys,
// as many rows a key.
func TestBatchedChangesLoadStreamedSameAsInMemory(t *testing.T) {
	t.Parallel() // its own directory; a binary per load, which waits on syncs
	dir := t.TempDir()
	n := testlong.Size(2000, 666) // rows of a.csv; b.csv has three quarters as many
	a := cdcFile(t, dir, "a.csv", n, n/10, 0, 1000, 11, true)
	cdcFile(t, dir, "b.csv", n*3/4, n*3/20, 500, 2000, 12, true)
	withFailingEvent(t, a, dir, "a-fails.csv")
	rows := strings.Split(cdcFileText(t, a), "\n")
	bad := []int{n * 3 / 20, n * 3 / 5} // rows whose --at is not a time
	for _, i := range bad {
		f := strings.Split(rows[i], ",")
		f[1] = "x"
		rows[i] = strings.Join(f, ",")
	}
	write(t, dir, "bad-rows.csv", strings.Join(rows, "\n"))
	for _, size := range []string{"7", "100", "5000"} {
		t.Run("batch size "+size, func(t *testing.T) {
			t.Parallel() // its own stores in the directory, which the subtests only read
			create := []string{"create", "t", "--key", "id", "--axis", "int", "--kind", "changes", "--group-by", "tier", "--track-except", "score"}
			mem, str, ref := "mem"+size, "str"+size, "ref"+size
			for _, db := range []string{mem, str, ref} {
				ok(t, dir, append(create, "--db", db)...)
			}
			load := []string{"load", "t", "", "--at", "at", "--seq", "seq", "--op-col", "op", "--delete-value", "d", "--batch-size", size}
			both := func(file string, extra ...string) (code int, stderr string) {
				t.Helper()
				args := append(append(copyArgs(load), extra...), "--db")
				args[2] = file
				m := bt(t, dir, "", append(args, mem)...)
				s := bt(t, dir, "", append(append(args, str), streamed...)...)
				if m.code != s.code || txTime.ReplaceAllString(m.stderr, "TX") != txTime.ReplaceAllString(s.stderr, "TX") {
					t.Fatalf("%s: in memory exit %d:\n%s\nstreamed exit %d:\n%s", file, m.code, m.stderr, s.code, s.stderr)
				}
				x, _ := dumpState(t, dir, mem)
				y, _ := dumpState(t, dir, str)
				if x != y {
					t.Fatalf("%s: the stores differ at %s", file, firstDiff(x, y))
				}
				ok(t, dir, "verify", "--db", str)
				if left, _ := filepath.Glob(filepath.Join(dir, str, "bitempo-spill-*")); len(left) > 0 {
					t.Fatalf("the streamed load left its run files: %v", left)
				}
				return s.code, s.stderr
			}
			for _, file := range []string{"a.csv", "b.csv"} {
				if code, stderr := both(file); code != 0 {
					t.Fatalf("%s: exit %d: %s", file, code, stderr)
				}
			}
			if _, stderr := both("a.csv"); !strings.Contains(stderr, "already applied") {
				t.Fatalf("the file again was not a replay: %s", stderr)
			}
			first, second := fmt.Sprintf("bad-rows.csv line %d", bad[0]+1), fmt.Sprintf("bad-rows.csv line %d", bad[1]+1)
			if code, stderr := both("bad-rows.csv"); code != 1 || !strings.Contains(stderr, first) || !strings.Contains(stderr, "nothing loaded") {
				t.Fatalf("bad-rows.csv: exit %d: %s", code, stderr)
			}
			if code, stderr := both("bad-rows.csv", "--skip-bad"); code != 0 || !strings.Contains(stderr, "skipped "+second) {
				t.Fatalf("bad-rows.csv --skip-bad: exit %d: %s", code, stderr)
			}

			// A load stopped midway, then finished, into new stores.
			mem, str = mem+"-midway", str+"-midway"
			for _, db := range []string{mem, str} {
				ok(t, dir, append(create, "--db", db)...)
			}
			code, stderr := both("a-fails.csv", "--batch-id", "feed")
			if code != 1 || !strings.Contains(stderr, "a-fails.csv line") {
				t.Fatalf("a-fails.csv: exit %d: %s", code, stderr)
			}
			if size != "5000" && !strings.Contains(stderr, "same --batch-size "+size) {
				t.Fatalf("a-fails.csv: no rows committed before the failing batch: %s", stderr)
			}
			if code, stderr := both("a.csv", "--batch-id", "feed"); code != 0 || (size != "5000" && !strings.Contains(stderr, "already applied")) {
				t.Fatalf("a.csv after a-fails.csv: exit %d: %s", code, stderr)
			}
			args := copyArgs(load)
			args[2] = "a.csv"
			ok(t, dir, append(args, "--batch-id", "feed", "--db", ref)...)
			x, _ := dumpState(t, dir, str)
			y, _ := dumpState(t, dir, ref)
			if x != y {
				t.Fatalf("the load finished after a failure differs from the load in one go at %s", firstDiff(x, y))
			}
		})
	}
}

// copyArgs copies args.
func copyArgs(args []string) []string { return append([]string(nil), args...) }

// TestBatchedChangesLoadStreamedHoldsOneBatch runs batched changes loads in
// this process and reads how many rows they held at once: in memory the
// file's, streamed no more than a batch (the runs' budget holding fewer).
func TestBatchedChangesLoadStreamedHoldsOneBatch(t *testing.T) {
	dir := t.TempDir()
	file := cdcFile(t, dir, "c.csv", 3000, 300, 0, 1000, 21, false)
	for _, db := range []string{"mem", "str"} {
		ok(t, dir, "create", "t", "--key", "id", "--axis", "int", "--kind", "changes", "--db", db)
	}
	load := func(db string, extra ...string) int {
		t.Helper()
		a := newApp()
		var stderr bytes.Buffer
		a.stderr = &stderr
		LoadRowsHeldPeak()
		args := append([]string{"load", "t", file, "--at", "at", "--seq", "seq", "--op-col", "op", "--delete-value", "d",
			"--batch-size", "50", "--db", filepath.Join(dir, db)}, extra...)
		if code := a.run(args); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr.String())
		}
		return LoadRowsHeldPeak()
	}
	if held := load("mem"); held < 3000 {
		t.Fatalf("the load in memory held at most %d rows at once, not its file's 3000 or more", held)
	}
	if held := load("str", "--spill-rows", "0", "--spill-bytes", "2000"); held > 50 {
		t.Fatalf("the streamed load held %d rows at once, more than a batch of 50", held)
	}
	x, _ := dumpState(t, dir, "mem")
	y, _ := dumpState(t, dir, "str")
	if x != y {
		t.Fatalf("the stores differ at %s", firstDiff(x, y))
	}
}

// cdcFileText is the content of the file at path.
func cdcFileText(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
