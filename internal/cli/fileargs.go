package cli

import (
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// FileArg is an argument of a command line that names a file or directory on
// the machine the tool runs on: an input a command reads (load's FILE,
// resolve --facts) or an output it writes (export -o, history --svg). A
// command run through a server reads and writes them on the client's side:
// the client uploads the inputs, the server runs the command on stand-ins and
// sends the outputs back.
type FileArg struct {
	Index  int    // the index in the command line of the token holding the path
	Prefix string // what precedes the path in that token ("--facts=", "-o"), "" when the token is the path
	Path   string
	Output bool // the command writes it; otherwise it reads it
}

// commandIndex is one tree of the tool's commands, built on first use and
// never executed, for looking up the command and flags of a command line
// (FileArgs, RunShared) without building a tree per request. Finding a
// command parses no flag values into the tree, but cobra and pflag fill
// caches in it as they look, so its users hold the lock.
var commandIndex lookupTree

type lookupTree struct {
	sync.Mutex
	root *cobra.Command
}

// tree returns the index's tree, building it on first use; the caller holds
// the lock.
func (l *lookupTree) tree() *cobra.Command {
	if l.root == nil {
		a := &app{stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard}
		l.root = a.rootCmd()
	}
	return l.root
}

// findCommand returns the name of the command that args run ("" when they
// name none: the root, or a mistake that running them reports).
func findCommand(args []string) string {
	commandIndex.Lock()
	defer commandIndex.Unlock()
	root := commandIndex.tree()
	cmd, _, err := root.Find(args)
	if err != nil || cmd == root {
		return ""
	}
	return cmd.Name()
}

// fileSpec says which arguments of a command name files.
type fileSpec struct {
	inPos, outPos   int // the positional argument naming an input or output, or -1
	inFlag, outFlag []string
}

// fileSpecs lists the commands that read or write files of their user's.
var fileSpecs = map[string]fileSpec{
	"load":     {inPos: 1, outPos: -1},
	"resolve":  {inPos: -1, outPos: -1, inFlag: []string{"facts"}, outFlag: []string{"output"}},
	"backfill": {inPos: -1, outPos: -1, inFlag: []string{"left"}, outFlag: []string{"output"}},
	"export":   {inPos: -1, outPos: -1, outFlag: []string{"output"}},
	"import":   {inPos: 0, outPos: -1},
	"backup":   {inPos: -1, outPos: 0},
	"history":  {inPos: -1, outPos: -1, outFlag: []string{"svg"}},
	"create":   {inPos: -1, outPos: -1, inFlag: []string{"columns-from"}},
}

// FileArgs returns the arguments of the command line args (without the
// program name) that name files, and whether the command reads standard
// input: an input named "-", or drop asking its question on a terminal
// (stdinTTY). A command line that does not parse names none; running it
// reports the mistake.
func FileArgs(args []string, stdinTTY bool) (files []FileArg, stdin bool) {
	commandIndex.Lock()
	defer commandIndex.Unlock()
	root := commandIndex.tree()
	cmd, _, err := root.Find(args)
	if err != nil || cmd == root {
		return nil, false
	}
	spec, ok := fileSpecs[cmd.Name()]
	if !ok {
		spec = fileSpec{inPos: -1, outPos: -1}
	}
	names := len(strings.Fields(cmd.CommandPath())) - 1 // the command's own words
	pos := 0
	yes := false
	add := func(i int, prefix, path string, output bool) {
		files = append(files, FileArg{Index: i, Prefix: prefix, Path: path, Output: output})
	}
	flagged := func(name string, i int, prefix, value string) {
		switch {
		case slices.Contains(spec.inFlag, name):
			add(i, prefix, value, false)
		case slices.Contains(spec.outFlag, name):
			add(i, prefix, value, true)
		case name == "yes":
			yes = value != "false"
		}
	}
	positional := func(i int) {
		if names > 0 {
			names--
			return
		}
		switch pos {
		case spec.inPos:
			add(i, "", args[i], false)
		case spec.outPos:
			add(i, "", args[i], true)
		}
		pos++
	}
	for i := 0; i < len(args); i++ {
		t := args[i]
		switch {
		case t == "--":
			for j := i + 1; j < len(args); j++ {
				positional(j)
			}
			i = len(args)
		case strings.HasPrefix(t, "--"):
			name, value, eq := strings.Cut(t[2:], "=")
			f := lookupFlag(cmd, name, 0)
			if f == nil {
				continue
			}
			switch {
			case eq:
				flagged(name, i, "--"+name+"=", value)
			case f.NoOptDefVal != "":
				flagged(name, i, "", f.NoOptDefVal)
			case i+1 < len(args):
				flagged(name, i+1, "", args[i+1])
				i++
			}
		case strings.HasPrefix(t, "-") && len(t) > 1:
			for j := 1; j < len(t); j++ {
				f := lookupFlag(cmd, "", t[j])
				if f == nil || f.NoOptDefVal != "" {
					continue
				}
				if j+1 < len(t) {
					prefix := t[:j+1]
					if t[j+1] == '=' {
						prefix = t[:j+2]
					}
					flagged(f.Name, i, prefix, t[len(prefix):])
				} else if i+1 < len(args) {
					flagged(f.Name, i+1, "", args[i+1])
					i++
				}
				break
			}
		default:
			positional(i)
		}
	}
	for _, f := range files {
		if f.Path == "-" && !f.Output {
			stdin = true
		}
	}
	if cmd.Name() == "drop" && !yes && stdinTTY {
		stdin = true
	}
	return files, stdin
}

// lookupFlag finds a flag of cmd or its parents by name or shorthand.
func lookupFlag(cmd *cobra.Command, name string, short byte) *pflag.Flag {
	for _, fs := range []*pflag.FlagSet{cmd.Flags(), cmd.InheritedFlags()} {
		if name != "" {
			if f := fs.Lookup(name); f != nil {
				return f
			}
		} else if f := fs.ShorthandLookup(string(short)); f != nil {
			return f
		}
	}
	return nil
}
