package cli

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/bitempo/bitempo/store"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// tick parses a date or RFC 3339 time for test data.
func tick(t *testing.T, s string) int64 {
	t.Helper()
	switch s {
	case "":
		return store.Infinity
	case "-":
		return store.NegInfinity
	}
	v, err := parseInstant(s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// rec builds a record: valid [from, to), tx [txFrom, txTo); "" is +inf, "-" -inf.
func rec(t *testing.T, from, to, txFrom, txTo string, sk uint64, attrs store.Attrs) store.Version {
	return store.Version{Key: store.Key{"c2"}, ValidFrom: tick(t, from), ValidTo: tick(t, to),
		TxFrom: tick(t, txFrom), TxTo: tick(t, txTo), SK: sk, Attrs: attrs}
}

func TestTimelineGolden(t *testing.T) {
	t.Parallel()
	const tx1, tx2, tx3 = "2024-05-01T10:00:00Z", "2024-05-02T09:30:00.25Z", "2024-06-01T00:00:00Z"
	trondheim := store.Attrs{"name": "Bo", "city": "Trondheim"}
	stavanger := store.Attrs{"name": "Bo", "city": "Stavanger"}
	cases := []struct {
		name    string
		records []store.Version
		opts    timelineOpts
	}{
		{
			// A correction moves a boundary; a later delete closes the last version.
			name: "correction",
			records: []store.Version{
				rec(t, "2024-01-15", "2024-04-20", tx1, tx2, 2, trondheim),
				rec(t, "2024-04-20", "", tx1, tx2, 5, stavanger),
				rec(t, "2024-01-15", "2024-04-10", tx2, "", 2, trondheim),
				rec(t, "2024-04-10", "", tx2, tx3, 5, stavanger),
				rec(t, "2024-04-10", "2024-09-01", tx3, "", 5, stavanger),
			},
			opts: timelineOpts{axis: store.AxisDate, attrs: []string{"city", "name"}, from: store.NegInfinity, to: store.Infinity, tx: store.Infinity},
		},
		{
			// The same history drawn as known at the second transaction.
			name: "correction-as-of-tx2",
			records: []store.Version{
				rec(t, "2024-01-15", "2024-04-20", tx1, tx2, 2, trondheim),
				rec(t, "2024-04-20", "", tx1, tx2, 5, stavanger),
				rec(t, "2024-01-15", "2024-04-10", tx2, "", 2, trondheim),
				rec(t, "2024-04-10", "", tx2, tx3, 5, stavanger),
				rec(t, "2024-04-10", "2024-09-01", tx3, "", 5, stavanger),
			},
			opts: timelineOpts{axis: store.AxisDate, attrs: []string{"city", "name"}, from: store.NegInfinity, to: store.Infinity, tx: tick(t, tx2)},
		},
		{
			// An open start, a gap, a time axis with long labels, and a window
			// that clips the last version.
			name: "gap-open-start-window",
			records: []store.Version{
				rec(t, "-", "2024-02-01T08:00:00Z", tx1, "", 1, store.Attrs{"plan": "basic"}),
				rec(t, "2024-03-01T09:00:00Z", "2024-04-01T00:00:00Z", tx1, "", 2, store.Attrs{"plan": "pro"}),
				rec(t, "2024-05-01T00:00:00Z", "", tx1, "", 3, store.Attrs{"plan": "a plan with a very long name indeed"}),
			},
			opts: timelineOpts{axis: store.AxisTime, attrs: []string{"plan"}, from: store.NegInfinity, to: tick(t, "2024-06-01T00:00:00Z"), tx: store.Infinity},
		},
	}
	// Many short versions still fit in 80 columns.
	var many []store.Version
	for i := range 40 {
		from := tick(t, "2024-01-01") + int64(i)*dayTicks
		many = append(many, store.Version{Key: store.Key{"k"}, ValidFrom: from, ValidTo: from + dayTicks,
			TxFrom: tick(t, tx1), TxTo: store.Infinity, SK: uint64(100 + i), Attrs: store.Attrs{"n": int64(i)}})
	}
	cases = append(cases, struct {
		name    string
		records []store.Version
		opts    timelineOpts
	}{"many-versions", many, timelineOpts{axis: store.AxisDate, attrs: []string{"n"}, from: store.NegInfinity, to: store.Infinity, tx: store.Infinity}})

	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := renderTimeline(&b, "customers c2", c.records, c.opts); err != nil {
				t.Fatal(err)
			}
			for i, line := range strings.Split(b.String(), "\n") {
				if n := utf8.RuneCountInString(line); n > timelineWidth {
					t.Errorf("line %d is %d columns wide: %q", i+1, n, line)
				}
			}
			golden := filepath.Join("testdata", "timeline", c.name+".golden")
			if *update {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -run TestTimelineGolden -update to create it)", err)
			}
			if b.String() != string(want) {
				t.Fatalf("timeline differs from %s:\n%s\nwant:\n%s", golden, b.String(), want)
			}
		})
	}
}

// TestTimelineCommand checks the command end to end: one block per transaction.
func TestTimelineCommand(t *testing.T) {
	t.Parallel()
	dir := customersStore(t)
	correct(t, dir)
	r := ok(t, dir, "history", "customers", "c1", "--timeline", "--db", "db")
	if n := strings.Count(r.stdout, "\ntx "); n != 2 {
		t.Fatalf("%d transaction blocks, want 2:\n%s", n, r.stdout)
	}
	if !strings.Contains(r.stdout, "+2 -2") || !strings.Contains(r.stdout, "2024-03-01") {
		t.Fatalf("timeline:\n%s", r.stdout)
	}
	for _, line := range strings.Split(r.stdout, "\n") {
		if utf8.RuneCountInString(line) > timelineWidth {
			t.Fatalf("line wider than %d: %q", timelineWidth, line)
		}
	}
	r = ok(t, dir, "history", "customers", "c1", "--timeline", "--tx", firstTx(t, dir), "--db", "db")
	if n := strings.Count(r.stdout, "\ntx "); n != 1 {
		t.Fatalf("as of the first transaction: %d blocks:\n%s", n, r.stdout)
	}
	r = ok(t, dir, "history", "customers", "c9", "--timeline", "--db", "db")
	if strings.TrimSpace(r.stdout) != "customers c9: no versions" {
		t.Fatalf("unknown key: %q", r.stdout)
	}
}
