package cli

import (
	"fmt"
	"slices"
	"strings"

	"github.com/bitempo/bitempo/store"
	"github.com/spf13/cobra"
)

// resolveFlags are the flags of resolve.
type resolveFlags struct {
	out         outputFlags
	facts       string
	factsFormat string
	keys        []string
	at, tx      string
	miss        string
	attrs       []string
}

func (a *app) resolveCmd() *cobra.Command {
	var rf resolveFlags
	cmd := &cobra.Command{
		Use:   "resolve NAME --facts FILE --key COL[,COL...] --at COL [--attrs A,B]",
		Short: "Join facts to the version of a table in effect at each fact's time",
		Long: `Resolve a file of facts (CSV, JSONL or Parquet; - is stdin) against a table:
for each fact, find the version of key --key in effect at the fact's time --at, as known at --tx
(default: the latest commit), and write the fact back, in input order, with the
version's sk and attributes appended. An appended column whose name collides with
a fact column is prefixed with the table name (NAME_city). What happens when a
fact has no version (unknown key, before the first version, in a gap, after the
last version) is --miss: error (fail, naming the fact and the reason), skip (leave
the fact out) or null (keep it with empty sk and attributes). --attrs appends
only the named attributes, in that order, and decodes only those (a
projection); a name the table never stored is an empty column.

-o FILE writes the rows to FILE instead of stdout, as Parquet when it ends in
.parquet: each column is typed from its values (INT64, DOUBLE, BOOLEAN, else
STRING).`,
		Example: `  bitempo resolve customers --facts orders.csv --key customer_id --at ordered_on
  bitempo resolve customers --facts orders.jsonl --key customer_id --at ordered_on --miss null --format json
  bitempo resolve customers --facts orders.parquet --key customer_id --at ordered_on -o resolved.parquet`,
		Args: argsRange(1, 1, "a table NAME"),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			return a.resolve(args[0], &rf)
		}),
	}
	f := cmd.Flags()
	f.StringSliceVar(&rf.keys, "key", nil, "the fact columns holding the table's key, in key order (required)")
	f.StringVar(&rf.at, "at", "", "the fact column holding the valid time to resolve at (required)")
	f.StringVar(&rf.tx, "tx", "latest", "transaction time: resolve as the store knew it then")
	f.StringVar(&rf.miss, "miss", "error", "what a fact without a version does: error, skip or null")
	f.StringSliceVar(&rf.attrs, "attrs", nil, "attributes to append and decode, in order (default: all)")
	registerFileQuery(cmd, &rf.out, &rf.facts, &rf.factsFormat, "facts")
	return cmd
}

// resolved is the outcome of one fact: why it has no version, if it has
// none, and its output row.
type resolved struct {
	reason store.MissReason
	// cells are the fact's own cells, then the version's sk and attributes
	// (empty for a miss).
	cells []cell
}

func (a *app) resolve(table string, rf *resolveFlags) error {
	switch {
	case rf.facts == "":
		return usagef("resolve: --facts FILE is required")
	case len(rf.keys) == 0:
		return usagef("resolve: --key COL is required")
	case rf.at == "":
		return usagef("resolve: --at COL is required")
	case !slices.Contains([]string{"error", "skip", "null"}, rf.miss):
		return usagef("resolve: --miss %q: want error, skip or null", rf.miss)
	}
	q, err := a.openFileQuery("resolve", table, rf.facts, rf.factsFormat, rf.tx, &rf.out, func(t *store.Table) error {
		if len(rf.keys) != len(t.Key) {
			return usagef("resolve: table %s has %d key columns, --key names %d", t.Name, len(t.Key), len(rf.keys))
		}
		return nil
	})
	if err != nil {
		return err
	}
	defer q.db.Close()
	db, t, in, tx := q.db, q.t, q.in, q.tx
	if err := in.checkParquetKeys("--key", rf.keys); err != nil {
		return err
	}
	facts, err := parseFacts(in, t, rf)
	if err != nil {
		return err
	}
	names := db.AttrNames(t)
	if len(rf.attrs) > 0 {
		names = rf.attrs
	}
	results, err := lookupFacts(db, t, facts, tx, in, newAttrColumns(t, names), rf.attrs)
	if err != nil {
		return err
	}
	misses := 0
	for i, r := range results {
		if r.reason == store.Found {
			continue
		}
		misses++
		if rf.miss == "error" {
			f := &facts[i]
			return fmt.Errorf("resolve %s: %s line %d: key %s at %s, %s: %s (--miss skip or null keeps going)",
				t.Name, in.name, in.rows[i].line, f.Key, formatAxisValue(t.Axis, f.Valid), describeTx(tx), r.reason)
		}
	}
	if err := writeResolved(q.w, t, in, names, results, rf.miss == "skip"); err != nil {
		return err
	}
	if !a.quiet {
		verb := map[string]string{"skip": "skipped", "null": "left empty"}[rf.miss]
		line := fmt.Sprintf("bitempo: resolved %d facts against %s: %d found", len(results), t.Name, len(results)-misses)
		if misses > 0 {
			line += fmt.Sprintf(", %d without a version (%s)", misses, verb)
		}
		fmt.Fprintln(a.stderr, line)
	}
	return nil
}

// fact is one fact to resolve: its key and valid time.
type fact struct {
	Key   store.Key
	Valid int64
}

// parseFacts reads the key and time of every fact; a fact that does not parse
// fails the command with its file, line and column.
func parseFacts(in *input, t *store.Table, rf *resolveFlags) ([]fact, error) {
	keyCols := make([]int, len(rf.keys))
	for i, name := range rf.keys {
		c, err := in.column(strings.TrimSpace(name), "--key")
		if err != nil {
			return nil, err
		}
		keyCols[i] = c
	}
	atCol, err := in.column(rf.at, "--at")
	if err != nil {
		return nil, err
	}
	facts := make([]fact, len(in.rows))
	for i := range in.rows {
		r := &in.rows[i]
		key := make(store.Key, len(keyCols))
		for k, c := range keyCols {
			s := in.text(r.vals[c])
			if s == "" {
				return nil, fmt.Errorf("resolve %s: %w", t.Name, in.cellErr(r, c, fmt.Errorf("missing key")))
			}
			if key[k], err = parseKeyComponent(t.Key[k], s); err != nil {
				return nil, fmt.Errorf("resolve %s: %w", t.Name, in.cellErr(r, c, err))
			}
		}
		at, err := parseDataTime(t.Axis, in.text(r.vals[atCol]))
		if err != nil {
			return nil, fmt.Errorf("resolve %s: %w", t.Name, in.cellErr(r, atCol, err))
		}
		facts[i] = fact{Key: key, Valid: at}
	}
	return facts, nil
}

// writeResolved writes the facts in input order with sk and the version's
// attributes appended (those named attrs).
func writeResolved(w rowWriter, t *store.Table, in *input, attrs []string, results []resolved, skipMisses bool) error {
	taken := map[string]bool{}
	for _, c := range in.cols {
		taken[c] = true
	}
	cols := slices.Clone(in.cols)
	for _, name := range append([]string{"sk"}, attrs...) {
		if taken[name] {
			name = t.Name + "_" + name
		}
		cols = append(cols, name)
	}
	if err := w.header(cols); err != nil {
		return err
	}
	for _, r := range results {
		if r.reason != store.Found && skipMisses {
			continue
		}
		if err := w.row(r.cells); err != nil {
			return err
		}
	}
	return w.close()
}

// inputCell renders a fact's own cell as read: CSV text, or the JSON value.
func inputCell(v any) cell {
	switch x := v.(type) {
	case string:
		return cell{x, x}
	case nil:
		return cell{}
	}
	if v == absent {
		return cell{}
	}
	return cell{jsonText(v), v}
}
