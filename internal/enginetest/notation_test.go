package enginetest

import (
	"errors"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/bitempo/bitempo/store"
)

// command parses a scenario command line as datadriven does, with input.
func command(t *testing.T, line, input string) *datadriven.TestData {
	t.Helper()
	cmd, args, err := datadriven.ParseLine(line)
	if err != nil {
		t.Fatal(err)
	}
	return &datadriven.TestData{Cmd: cmd, CmdArgs: args, Input: input}
}

// TestMalformedNotationIsAnError checks that every driver reports text a
// scenario file spells wrong as an error matching errNotation, never a panic
// or a silent default.
func TestMalformedNotationIsAnError(t *testing.T) {
	db := Memory(t, store.Options{})
	defer db.Close()
	if _, err := Periods(db, command(t, "create table=t key=id:string", "")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name        string
		run         Driver
		line, input string
	}{
		{"bad time", Periods, "put table=t key=a from=yesterday to=5", "x=1"},
		{"missing time", Periods, "upsert table=t key=a", "x=1"},
		{"attribute without value", Periods, "put table=t key=a from=1 to=5", "x"},
		{"unterminated string", Reads, "upsert table=t key=a at=1", `x="open`},
		{"bad decimal", Aggregate, "upsert table=t key=a at=1", "x=d:1.2.3"},
		{"bad time value", Aggregate, "upsert table=t key=a at=1", "x=t:noon"},
		{"unknown operation", Periods, "txn", "move table=t key=a"},
		{"unknown table argument", Periods, "create table=u key=id:string colour=red", ""},
		{"unknown compare option", Periods, "create table=u key=id:string compare=x:shout", ""},
		{"bad event line", Erase, "apply table=t batch=b", "a 5 upsert x=1"},
		{"bad read time", Reads, "get table=t key=a valid=later", ""},
		{"bad backfill line", Aggregate, "backfill table=t", "rows a 1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := c.run(db, command(t, c.line, c.input))
			if !errors.Is(err, errNotation) {
				t.Fatalf("%s: got %v, want an error matching errNotation", c.line, err)
			}
		})
	}
}

// TestNotationAgreesAcrossFamilies checks the rules every family now reads
// alike: a time in any of its spellings and a value of every kind.
func TestNotationAgreesAcrossFamilies(t *testing.T) {
	for s, want := range map[string]int64{
		"7": 7, "-inf": store.NegInfinity, "+inf": store.Infinity, "inf": store.Infinity,
		"1970-01-02": 86400e6, "1970-01-01T00:01": 60e6, "1970-01-01T00:00:01.5": 1.5e6,
	} {
		if got, err := parseTime(s); err != nil || got != want {
			t.Errorf("parseTime(%q) = %d, %v; want %d", s, got, err, want)
		}
	}
	attrs, err := parseAttrs("a=1 b=1.5\nc=\"x y\" d=null e=true f=word g=d:1.50")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := joinAttrs(attrs, plainValue), "a=1 b=1.5 c=x y d=<nil> e=true f=word g=1.50"; got != want {
		t.Errorf("attributes %q, want %q", got, want)
	}
	tbl := &store.Table{TableDef: store.TableDef{Key: []store.KeyColumn{{Name: "s", Type: store.String}, {Name: "n", Type: store.Int64}}}}
	for sep, s := range map[string]string{keySep: "a,2", applyKeySep: "a/2"} {
		if got := tableKey(tbl, s, sep); len(got) != 2 || got[0] != "a" || got[1] != int64(2) {
			t.Errorf("tableKey(%q, %q) = %#v", s, sep, got)
		}
	}
}
