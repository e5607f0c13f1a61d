package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/bitempo/bitempo/store"
)

// app holds what every command shares: the global flags and the process's streams.
type app struct {
	db    string
	quiet bool
	// readOnly opens the store read-only for every command (--read-only);
	// wait is how long an open waits for a store another process holds (--wait).
	readOnly bool
	wait     time.Duration
	stdin    io.Reader
	stdout   io.Writer
	stderr   io.Writer
	// stdoutTTY and stderrTTY say whether the streams are terminals: the default
	// output format and the progress bar depend on it. stdinTTY says whether a
	// command may ask a question (drop).
	stdoutTTY, stderrTTY, stdinTTY bool
	// engines open --db URLs (engines.go); nil in the plain build.
	engines map[string]Opener
	// serve runs the serve command (serve.go); nil in a build without a server.
	serve ServeFunc
	// shared is the store a server runs this command on (shared.go), under
	// sharedName, refusing writes when sharedReadOnly; ctx is the request's
	// context. All zero when the tool runs on its own.
	shared         *store.DB
	sharedName     string
	sharedReadOnly bool
	ctx            context.Context
	// only, when not empty, is the one command the command line runs, found
	// before it runs (RunShared): the root is built with that command alone.
	only string
}

// Main runs the tool on the command line args (without the program name) with the
// process's standard streams and returns the exit status for os.Exit.
func Main(args []string) int { return newApp().run(args) }

func newApp() *app {
	return &app{
		stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr,
		stdoutTTY: isTerminal(os.Stdout), stderrTTY: isTerminal(os.Stderr), stdinTTY: isTerminal(os.Stdin),
	}
}

// run executes one command line and returns the exit status. It never lets a
// panic escape as a Go stack trace: an internal error is one line on stderr.
func (a *app) run(args []string) (status int) {
	if url := remoteDB(args); url != "" && a.shared == nil {
		return a.runRemote(url, args)
	}
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(a.stderr, "bitempo: internal error: %v\n", r)
			status = exitFailure
		}
	}()
	root := a.rootCmdOf(a.only)
	root.SetArgs(args)
	cmd, err := root.ExecuteC()
	if err == nil {
		return exitOK
	}
	status = exitStatus(err)
	msg := message(err, a.db, a.wait)
	if strings.HasPrefix(err.Error(), "unknown command") {
		msg = unknownCommand(err)
	}
	if status == exitUsage {
		path := "bitempo"
		if cmd != nil {
			path = cmd.CommandPath()
		}
		msg += fmt.Sprintf(" (see: %s --help)", path)
	}
	fmt.Fprintln(a.stderr, msg)
	return status
}

func (a *app) rootCmd() *cobra.Command { return a.rootCmdOf("") }

// rootCmdOf builds the root command with every command, or with only the
// command named only when that is not empty: a command line whose command is
// known (findCommand) needs no other, and building all of them costs more
// than a point read (the server runs one command line per request).
func (a *app) rootCmdOf(only string) *cobra.Command {
	root := &cobra.Command{
		Use:   "bitempo",
		Short: "Load, query, picture and check a bitempo store",
		Long: `bitempo is the command line tool of the bitempo bitemporal store: it creates
tables, loads CSV and JSONL files, writes or deletes one key over a valid period
(put, delete), answers as-of questions, computes point-in-time
features (backfill), draws timelines, dumps the raw keys and verifies the store's
invariants. It also reads and writes Parquet (load, resolve, backfill, export),
backs up an open store (backup) and moves a whole store's history to a new store
(export --all --history, import).

Start with the demo, which builds ./bitempo-demo.db and explains what it shows:

  bitempo demo

Every command takes --db DIR (default ./bitempo.db), or --db http://HOST:PORT
to run on a store that bitempo serve shares. Flags may come before or
after the arguments. Valid times are read and printed according to the table's
axis: RFC 3339 (time), YYYY-MM-DD (date) or integers (int); transaction times are
always RFC 3339. Output is a table on a terminal and CSV otherwise (--format).

The build of this tool with the etcd engine (cd etcd && go run ./cmd/bitempo)
also takes --db etcd://HOST:PORT[,HOST:PORT...]/PREFIX for a store on an etcd
cluster; see docs/replication.md.`,
		SilenceErrors: true,
		SilenceUsage:  true,
		Version:       version(),
	}
	root.SetVersionTemplate("bitempo {{.Version}}\n")
	root.SetIn(a.stdin)
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	root.PersistentFlags().StringVar(&a.db, "db", "./bitempo.db", "store directory, http://HOST:PORT (or https://) of a bitempo serve, or etcd://HOST:PORT[,HOST:PORT...]/PREFIX in the etcd build")
	root.PersistentFlags().BoolVarP(&a.quiet, "quiet", "q", false, "no progress bar and no summary lines on stderr")
	root.PersistentFlags().BoolVar(&a.readOnly, "read-only", false, "open the store read-only: nothing in its directory is created or changed (it may be a read-only directory), other read-only opens may run beside it, and commands that write fail")
	root.PersistentFlags().DurationVar(&a.wait, "wait", 0, "how long to wait for a store another process holds (e.g. 5s), instead of failing at once")
	if a.shared != nil {
		a.db = a.sharedName // defining --db set its default
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{err.Error()} })
	for _, c := range a.commands() {
		if only == "" || c.name == only {
			root.AddCommand(c.build())
		}
	}
	return root
}

// command is one of the tool's commands: its name and its constructor.
type command struct {
	name  string
	build func() *cobra.Command
}

// commands lists the tool's commands in the order help shows them.
func (a *app) commands() []command {
	return []command{
		{"demo", a.demoCmd},
		{"create", a.createCmd},
		{"load", a.loadCmd},
		{"put", a.putCmd},
		{"delete", a.deleteCmd},
		{"get", a.getCmd},
		{"history", a.historyCmd},
		{"audit", a.auditCmd},
		{"scan", a.scanCmd},
		{"changes", a.changesCmd},
		{"resolve", a.resolveCmd},
		{"backfill", a.backfillCmd},
		{"dump", a.dumpCmd},
		{"verify", a.verifyCmd},
		{"stats", a.statsCmd},
		{"compact", a.compactCmd},
		{"recover", a.recoverCmd},
		{"tables", a.tablesCmd},
		{"describe", a.describeCmd},
		{"alter", a.alterCmd},
		{"drop", a.dropCmd},
		{"backup", a.backupCmd},
		{"export", a.exportCmd},
		{"import", a.importCmd},
		{"erase", a.eraseCmd},
		{"vacuum", a.vacuumCmd},
		{"serve", a.serveCmd},
	}
}

// unknownCommand rewrites cobra's several-line "unknown command" error, with
// its suggestions, as one line.
func unknownCommand(err error) string {
	lines := strings.Split(err.Error(), "\n")
	msg := "bitempo: " + strings.TrimSpace(lines[0])
	var suggestions []string
	for _, l := range lines[1:] {
		if strings.HasPrefix(l, "\t") && strings.TrimSpace(l) != "" {
			suggestions = append(suggestions, strings.TrimSpace(l))
		}
	}
	if len(suggestions) > 0 {
		msg += "; did you mean " + strings.Join(suggestions, " or ") + "?"
	}
	return msg
}

// version is the tool's version: the module version it was built from
// (go install ...@v1.2.3), else the VCS revision of a build in the repository.
func version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown version)"
	}
	v := info.Main.Version
	var rev, modified string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = ", modified"
			}
		}
	}
	if v == "" || v == "(devel)" {
		v = "devel"
	}
	if rev != "" {
		v += fmt.Sprintf(" (commit %.12s%s)", rev, modified)
	}
	return v + ", " + info.GoVersion
}

// action wraps a command's work so that its errors exit with status 1, while
// usage errors keep status 2.
func action(fn func(cmd *cobra.Command, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		err := fn(cmd, args)
		if err == nil {
			return nil
		}
		if _, ok := err.(*usageError); ok {
			return err
		}
		if _, ok := err.(*failure); ok {
			return err
		}
		return &failure{err: err}
	}
}

// argsRange checks the number of positional arguments with a usage error.
func argsRange(lo, hi int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < lo || (hi >= 0 && len(args) > hi) {
			return usagef("%s: want %s, got %d arguments", cmd.Name(), what, len(args))
		}
		return nil
	}
}

// open opens the store of --db. Read commands open it read-only, so they run
// beside a writer's lock-free readers and can never change it; every command but
// create and demo requires the store to exist.
func (a *app) open(readOnly bool) (*store.DB, error) {
	return a.openStore(store.Options{ReadOnly: readOnly, MustExist: true})
}

// withStore runs fn on the store of --db (read-only when readOnly) and closes
// it when fn returns; a failed Close is the command's error when fn succeeded.
func (a *app) withStore(readOnly bool, fn func(db *store.DB) error) error {
	db, err := a.open(readOnly)
	if err != nil {
		return err
	}
	return closeAfter(db, func() error { return fn(db) })
}

// closeAfter runs fn and then closes db; a failed Close is the error when fn
// succeeded.
func closeAfter(db *store.DB, fn func() error) (err error) {
	defer func() {
		if cerr := db.Close(); err == nil {
			err = cerr
		}
	}()
	return fn()
}

// reading runs fn on the store of --db opened read-only, with the row writer of
// out, for the commands that print rows about the whole store.
func (a *app) reading(out *outputFlags, fn func(db *store.DB, w rowWriter) error) error {
	return a.withStore(true, func(db *store.DB) error {
		w, err := out.writer(a)
		if err != nil {
			return err
		}
		return fn(db, w)
	})
}

// openTable opens the store read-only and finds table name in it. The caller
// closes the store; on error it is closed already.
func (a *app) openTable(name string) (*store.DB, *store.Table, error) {
	db, err := a.open(true)
	if err != nil {
		return nil, nil, err
	}
	t, err := a.table(db, name)
	if err != nil {
		_ = db.Close()
		return nil, nil, err
	}
	return db, t, nil
}

// openKey is openTable for the commands that take NAME KEY...: args[0] names
// the table, the rest are its key values.
func (a *app) openKey(args []string) (*store.DB, *store.Table, store.Key, error) {
	db, t, err := a.openTable(args[0])
	if err != nil {
		return nil, nil, nil, err
	}
	key, err := parseKeyArgs(t, args[1:])
	if err != nil {
		_ = db.Close()
		return nil, nil, nil, err
	}
	return db, t, key, nil
}

// openSelection is openTable for the commands that take NAME [KEY...] and
// --prefix: args[0] names the table, the rest select its keys.
func (a *app) openSelection(args, prefix []string) (*store.DB, *store.Table, keySelection, error) {
	db, t, err := a.openTable(args[0])
	if err != nil {
		return nil, nil, keySelection{}, err
	}
	sel, err := parseKeySelection(t, args[1:], prefix)
	if err != nil {
		_ = db.Close()
		return nil, nil, keySelection{}, err
	}
	return db, t, sel, nil
}

// withSelection runs fn on the table and keys that args and --prefix select
// (openSelection), and closes the store when fn returns.
func (a *app) withSelection(args, prefix []string, fn func(db *store.DB, t *store.Table, sel keySelection) error) error {
	db, t, sel, err := a.openSelection(args, prefix)
	if err != nil {
		return err
	}
	defer db.Close()
	return fn(db, t, sel)
}

// registerFileQuery registers the flags of a command that answers for the
// rows of an input file: the output's, and --NAME FILE and --NAME-format.
func registerFileQuery(cmd *cobra.Command, out *outputFlags, path, format *string, name string) {
	out.register(cmd, false)
	out.registerFile(cmd)
	cmd.Flags().StringVar(path, name, "", "the "+name+" file, CSV, JSONL or Parquet (- is stdin) (required)")
	cmd.Flags().StringVar(format, name+"-format", "", "format of the "+name+" file: csv, jsonl or parquet (default: from its extension)")
}

// fileQuery is a command that answers for the rows of an input file (resolve,
// backfill), ready to run: the table, the file's rows, --tx and the output.
type fileQuery struct {
	db *store.DB
	t  *store.Table
	in *input
	tx int64
	w  rowWriter
}

// openFileQuery checks the flags those commands share (the file's format, --tx
// and the output), opens table, checks it with check, then reads the file at
// path; a row the file could not read fails the command, named cmd. The caller
// closes q.db; on error it is closed already.
func (a *app) openFileQuery(cmd, table, path, formatFlag, txFlag string, out *outputFlags, check func(*store.Table) error) (q fileQuery, err error) {
	format, err := inputFormat(formatFlag, path)
	if err != nil {
		return q, err
	}
	if q.tx, err = parseTx(txFlag); err != nil {
		return q, usagef("--tx: %v", err)
	}
	if q.w, err = out.writer(a); err != nil {
		return q, err
	}
	if q.db, q.t, err = a.openTable(table); err != nil {
		return q, err
	}
	defer func() {
		if err != nil {
			_ = q.db.Close()
		}
	}()
	if err = check(q.t); err != nil {
		return q, err
	}
	if q.in, err = readInput(path, format, a.stdin); err != nil {
		return q, err
	}
	if len(q.in.bad) > 0 {
		return q, fmt.Errorf("%s %s: %w", cmd, q.t.Name, q.in.bad[0])
	}
	return q, nil
}

// discardLogger silences Pebble's log: the tool reports errors itself, on one line.
func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// isTerminal reports whether f is a character device (a terminal).
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// table looks a table up, listing the store's tables when the name is unknown.
func (a *app) table(db *store.DB, name string) (*store.Table, error) {
	t, err := db.Table(name)
	if !errors.Is(err, store.ErrUnknownTable) {
		return t, err
	}
	var names []string
	for _, t := range db.Tables() {
		names = append(names, t.Name)
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("%w; %s has no tables yet (bitempo create NAME --key COL)", err, a.db)
	}
	return nil, fmt.Errorf("%w; the tables of %s are: %s", err, a.db, strings.Join(names, ", "))
}
