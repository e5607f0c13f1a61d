package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/bitempo/bitempo/store"
	"github.com/spf13/cobra"
)

// demoDir is where the demo builds its store unless --db is given.
const demoDir = "./bitempo-demo.db"

func (a *app) demoCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "demo",
		Short: "Build a small store and walk through what bitempo answers",
		Long: `Build a small store (by default ./bitempo-demo.db) and run the tool's own
commands on it, explaining each: a customer dimension with moves and a revert, an
as-of lookup, orders resolved against the dimension, a CDC feed with late and
duplicated events, a correction, a timeline, the state as known before the
correction, and a verify. The demo's data files are kept in the store's
demo-files directory, so every command it shows can be run by hand afterwards.

The demo marks the stores it builds (a DEMO file in the store directory) and
rebuilds only those: it refuses a store it did not create, and any directory
that holds something else, so --db can never wipe your data.`,
		Example: `  bitempo demo
  bitempo demo --db /tmp/demo.db
  go run ./tools/bitempo demo`,
		Args: argsRange(0, 0, "no arguments"),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			dir := a.db
			if !cmd.Flags().Changed("db") {
				dir = demoDir
			}
			a.db = dir
			if err := resetDemoDir(dir); err != nil {
				return err
			}
			files := filepath.Join(dir, demoFilesDir)
			if err := os.MkdirAll(files, 0o755); err != nil {
				return err
			}
			d := &demo{a: a, dir: dir, files: files}
			return d.run()
		}),
	}
}

// demoMarker is the file that marks a store as built by the demo, and
// demoFilesDir the directory of its data files, both inside the store directory
// (Pebble ignores files it does not know). A marker file rather than a key in
// the store: the demo must be able to tell its stores apart without opening
// one, and a store copied elsewhere keeps it.
const (
	demoMarker   = "DEMO"
	demoFilesDir = "demo-files"
)

// resetDemoDir removes a previous demo store and creates a fresh, marked one.
// It refuses a directory that is not an empty directory or a store the demo
// built, so a mistyped --db cannot delete anyone's files or tables.
func resetDemoDir(dir string) error {
	db, err := store.Open(dir, store.Options{ReadOnly: true, MustExist: true, Logger: discardLogger()})
	switch {
	case errors.Is(err, store.ErrNotExist):
		if entries, rerr := os.ReadDir(dir); rerr == nil && len(entries) > 0 {
			return fmt.Errorf("demo: %s exists and is not an empty bitempo store; give another --db", dir)
		}
	case err != nil:
		return err
	default:
		if err := db.Close(); err != nil {
			return err
		}
		if _, err := os.Stat(filepath.Join(dir, demoMarker)); err != nil {
			return fmt.Errorf("demo: %s is a bitempo store the demo did not create; it is left alone: give another --db (or remove it yourself)", dir)
		}
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("demo: remove the previous demo store: %w", err)
		}
	}
	db, err = store.Open(dir, store.Options{Logger: discardLogger()})
	if err != nil {
		return err
	}
	if err := db.Close(); err != nil {
		return err
	}
	marker := "This store was built by bitempo demo, which deletes and rebuilds it when run again.\n"
	return os.WriteFile(filepath.Join(dir, demoMarker), []byte(marker), 0o644)
}

// demo runs the tool's own commands on the demo store and explains them.
type demo struct {
	a     *app
	dir   string
	files string
	step  int
}

// The demo's data: a customer dimension given as SCD2 changes, orders to resolve
// against it, a CDC feed in two deliveries (the second late and with a duplicate)
// and a correction.
const (
	demoCustomers = `customer_id,changed_on,event,name,city
c1,2024-01-01,change,Ada,Oslo
c1,2024-03-11,change,Ada,Bergen
c1,2024-06-01,change,Ada,Oslo
c2,2024-01-15,change,Bo,Trondheim
c2,2024-04-20,change,Bo,Stavanger
c3,2024-02-01,change,Cy,Tromsø
c3,2024-05-01,leave,,
c3,2024-07-01,change,Cy,Tromsø
`
	demoOrders = `order_id,customer_id,ordered_on,amount
o1,c1,2024-03-08,120
o2,c1,2024-03-12,80
o3,c1,2024-06-15,45
o4,c2,2024-04-15,300
o5,c3,2024-06-01,60
o6,c9,2024-03-01,10
`
	demoFeed1 = `account_id,ts,lsn,op,plan
a1,2024-01-10T09:00:00Z,1,upsert,basic
a2,2024-02-01T12:00:00Z,2,upsert,basic
a1,2024-03-01T09:00:00Z,3,upsert,pro
`
	demoFeed2 = `account_id,ts,lsn,op,plan
a1,2024-03-01T09:00:00Z,3,upsert,pro
a1,2024-02-01T08:00:00Z,5,upsert,plus
a2,2024-04-01T00:00:00Z,4,delete,
`
	demoCorrection = `customer_id,changed_on,event,name,city
c2,2024-04-10,change,Bo,Stavanger
`
)

func (d *demo) run() error {
	for name, content := range map[string]string{
		"customers.csv": demoCustomers, "orders.csv": demoOrders, "feed-1.csv": demoFeed1,
		"feed-2.csv": demoFeed2, "correction.csv": demoCorrection,
	} {
		if err := os.WriteFile(filepath.Join(d.files, name), []byte(content), 0o644); err != nil {
			return err
		}
	}
	d.say(fmt.Sprintf(`bitempo demo: a bitemporal store in %s. Every command below is the tool
itself, run with --db %s; run them again by hand afterwards (the data files
are in %s).`, d.dir, d.dir, d.files))

	d.section("A customer dimension with history", `customers.csv holds changes: Ada moves Oslo -> Bergen on 11 March and back to
Oslo on 1 June; Bo moves on 20 April; Cy leaves on 1 May and returns on 1 July.
Loaded as SCD2 changes (--at), each change closes the version in effect.`)
	d.show("customers.csv", demoCustomers)
	steps := [][]string{
		{"create", "customers", "--key", "customer_id", "--axis", "date"},
		{"load", "customers", d.file("customers.csv"), "--at", "changed_on", "--delete-col", "event", "--delete-value", "leave"},
	}
	for _, args := range steps {
		if err := d.cmd(exitOK, args...); err != nil {
			return err
		}
	}
	d.section("A history", `The revert is three versions, not two: each change is compared with the
version in effect, never with "any earlier version". Each version has its own
surrogate key (sk), which facts store.`)
	if err := d.cmd(exitOK, "history", "customers", "c1"); err != nil {
		return err
	}

	d.section("As-of lookups", `Which city was Ada in on 8 March, and on 12 March? A miss says why: on 1 June
Cy had left (1 May) and was not back yet (1 July), so the date is in a gap.`)
	for _, args := range [][]string{
		{"get", "customers", "c1", "--valid", "2024-03-08"},
		{"get", "customers", "c1", "--valid", "2024-03-12"},
	} {
		if err := d.cmd(exitOK, args...); err != nil {
			return err
		}
	}
	if err := d.cmd(exitFailure, "get", "customers", "c3", "--valid", "2024-06-01"); err != nil {
		return err
	}

	d.section("Orders resolved against the dimension", `Each order joins the customer version in effect on its date: o1 (8 March) is
Oslo, o2 (12 March) Bergen, o3 (15 June) Oslo again, as a new version. o5 falls
in Cy's gap and o6 names an unknown customer: with --miss null they stay, empty.`)
	d.show("orders.csv", demoOrders)
	if err := d.cmd(exitOK, "resolve", "customers", "--facts", d.file("orders.csv"), "--key", "customer_id", "--at", "ordered_on", "--miss", "null"); err != nil {
		return err
	}

	d.section("A CDC feed with late and duplicated events", `A changes table derives its versions from the set of events received, whatever
their order. The second delivery repeats the 'pro' event, brings a late 'plus'
change from 1 February and deletes a2. Loading it twice changes nothing: the
batch id is the file's content hash.`)
	d.show("feed-1.csv", demoFeed1)
	d.show("feed-2.csv", demoFeed2)
	for _, args := range [][]string{
		{"create", "subscriptions", "--key", "account_id", "--kind", "changes"},
		{"load", "subscriptions", d.file("feed-1.csv"), "--at", "ts", "--seq", "lsn", "--op-col", "op", "--delete-value", "delete"},
		{"load", "subscriptions", d.file("feed-2.csv"), "--at", "ts", "--seq", "lsn", "--op-col", "op", "--delete-value", "delete"},
		{"load", "subscriptions", d.file("feed-2.csv"), "--at", "ts", "--seq", "lsn", "--op-col", "op", "--delete-value", "delete"},
		{"history", "subscriptions", "a1"},
	} {
		if err := d.cmd(exitOK, args...); err != nil {
			return err
		}
	}

	before, err := d.lastTx()
	if err != nil {
		return err
	}
	d.section("A correction", `We learn that Bo moved to Stavanger on 10 April, not 20 April. The correction
is a new transaction: the old belief stays readable at its transaction time.`)
	d.show("correction.csv", demoCorrection)
	for _, args := range [][]string{
		{"load", "customers", d.file("correction.csv"), "--at", "changed_on", "--delete-col", "event", "--delete-value", "leave"},
		{"get", "customers", "c2", "--valid", "2024-04-15"},
	} {
		if err := d.cmd(exitOK, args...); err != nil {
			return err
		}
	}

	d.section("The state as known before the correction", `The same question, asked as of the transaction before the correction: order o4
(15 April) was resolved to Trondheim then, and audits can still see why.`)
	if err := d.cmd(exitOK, "get", "customers", "c2", "--valid", "2024-04-15", "--tx", formatInstant(before)); err != nil {
		return err
	}
	d.say(`
The change feed since then lists what the correction retired and asserted, so
facts resolved at load time can be found and re-resolved:`)
	if err := d.cmd(exitOK, "changes", "customers", "--since", formatInstant(before)); err != nil {
		return err
	}

	d.section("A timeline", `Bo's versions after each transaction that changed them, on a valid-time axis
('+': asserted by that transaction).`)
	if err := d.cmd(exitOK, "history", "customers", "c2", "--timeline"); err != nil {
		return err
	}

	d.section("Verify", `Every invariant of the store, checked over one snapshot.`)
	if err := d.cmd(exitOK, "verify"); err != nil {
		return err
	}
	d.say(fmt.Sprintf("\nDone. Explore further, e.g.: bitempo audit customers c2 --db %s", d.dir))
	return nil
}

// cmd echoes a command line and runs it in-process, checking its exit status.
func (d *demo) cmd(want int, args ...string) error {
	shown := make([]string, len(args))
	for i, s := range args {
		shown[i] = s
		if strings.ContainsAny(shown[i], " ") {
			shown[i] = fmt.Sprintf("%q", shown[i])
		}
	}
	fmt.Fprintf(d.a.stdout, "\n$ bitempo %s\n", strings.Join(shown, " "))
	var out bytes.Buffer
	sub := &app{stdin: strings.NewReader(""), stdout: &out, stderr: &out, stdoutTTY: true}
	got := sub.run(append(args, "--db", d.dir))
	if _, err := io.WriteString(d.a.stdout, out.String()); err != nil {
		return err
	}
	if got != want {
		return fmt.Errorf("demo: bitempo %s exited with status %d, expected %d", strings.Join(shown, " "), got, want)
	}
	return nil
}

func (d *demo) file(name string) string { return filepath.Join(d.files, name) }

func (d *demo) section(title, text string) {
	d.step++
	fmt.Fprintf(d.a.stdout, "\n== %d. %s ==\n%s\n", d.step, title, text)
}

func (d *demo) say(text string) { fmt.Fprintln(d.a.stdout, text) }

// show prints a data file, indented.
func (d *demo) show(name, content string) {
	fmt.Fprintf(d.a.stdout, "\n%s:\n", name)
	for _, line := range strings.Split(strings.TrimRight(content, "\n"), "\n") {
		fmt.Fprintf(d.a.stdout, "    %s\n", line)
	}
}

// lastTx reads the store's newest transaction time.
func (d *demo) lastTx() (int64, error) {
	db, err := store.Open(d.dir, store.Options{ReadOnly: true, MustExist: true, Logger: discardLogger()})
	if err != nil {
		return 0, err
	}
	defer db.Close()
	return db.LastTx(), nil
}
