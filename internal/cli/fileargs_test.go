package cli

import (
	"reflect"
	"testing"
)

// TestFileArgs checks which arguments of a command line name the user's
// files, in every way a flag can be written.
func TestFileArgs(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args  []string
		tty   bool
		want  []FileArg
		stdin bool
	}{
		{args: []string{"load", "t", "f.csv", "--at", "x"}, want: []FileArg{{Index: 2, Path: "f.csv"}}},
		{args: []string{"--quiet", "load", "--at", "x", "t", "dir/f.csv"}, want: []FileArg{{Index: 5, Path: "dir/f.csv"}}},
		{args: []string{"load", "t", "-", "--at", "x"}, want: []FileArg{{Index: 2, Path: "-"}}, stdin: true},
		{args: []string{"resolve", "t", "--facts=o.csv", "-o", "out.parquet"}, want: []FileArg{{Index: 2, Prefix: "--facts=", Path: "o.csv"}, {Index: 4, Path: "out.parquet", Output: true}}},
		{args: []string{"backfill", "t", "--left", "l.csv", "-oout.csv"}, want: []FileArg{{Index: 3, Path: "l.csv"}, {Index: 4, Prefix: "-o", Path: "out.csv", Output: true}}},
		{args: []string{"export", "--all", "--history", "-o=dump"}, want: []FileArg{{Index: 3, Prefix: "-o=", Path: "dump", Output: true}}},
		{args: []string{"import", "dump"}, want: []FileArg{{Index: 1, Path: "dump"}}},
		{args: []string{"backup", "--", "copy"}, want: []FileArg{{Index: 2, Path: "copy", Output: true}}},
		{args: []string{"history", "t", "k", "--svg", "k.svg"}, want: []FileArg{{Index: 4, Path: "k.svg", Output: true}}},
		{args: []string{"get", "t", "f.csv"}},
		{args: []string{"drop", "t"}, tty: true, stdin: true},
		{args: []string{"drop", "t", "--yes"}, tty: true},
		{args: []string{"drop", "t"}},
		{args: []string{"nosuchcommand", "x"}},
	} {
		got, stdin := FileArgs(c.args, c.tty)
		if !reflect.DeepEqual(got, c.want) || stdin != c.stdin {
			t.Errorf("%q: %+v stdin %v, want %+v stdin %v", c.args, got, stdin, c.want, c.stdin)
		}
	}
}

func TestCommandListNamesEachCommand(t *testing.T) {
	t.Parallel()
	a := newApp()
	for _, c := range a.commands() {
		if got := c.build().Name(); got != c.name {
			t.Errorf("command listed as %q is named %q", c.name, got)
		}
		if name := findCommand([]string{c.name, "--help"}); name != c.name {
			t.Errorf("findCommand(%q) = %q", c.name, name)
		}
		alone := a.rootCmdOf(c.name)
		if len(alone.Commands()) == 0 || alone.Commands()[0].Name() != c.name {
			t.Errorf("rootCmdOf(%q) holds %v", c.name, alone.Commands())
		}
	}
}
