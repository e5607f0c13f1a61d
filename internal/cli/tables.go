package cli

import (
	"bufio"
	"fmt"
	"strings"

	"github.com/bitempo/bitempo/store"
	"github.com/spf13/cobra"
)

// This file holds the catalog commands: tables lists the tables, describe
// shows one, drop deletes one (asking first).

func (a *app) tablesCmd() *cobra.Command {
	var out outputFlags
	cmd := &cobra.Command{
		Use:   "tables",
		Short: "List the tables of the store",
		Long: `List the tables of the store, one per row: name, kind (periods or changes), key
columns with their types, valid-time axis and the attribute names seen so far.
bitempo describe NAME shows one table in full; bitempo stats counts its records.`,
		Example: `  bitempo tables
  bitempo tables --format json`,
		Args: argsRange(0, 0, "no arguments"),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			return a.reading(&out, func(db *store.DB, w rowWriter) error {
				if err := w.header([]string{"table", "kind", "key", "axis", "attributes"}); err != nil {
					return err
				}
				for _, t := range db.Tables() {
					key := make([]string, len(t.Key))
					for i, c := range t.Key {
						key[i] = c.Name + " " + c.Type.String()
					}
					if err := w.row([]cell{valueCell(t.Name), valueCell(t.Kind.String()), valueCell(strings.Join(key, ", ")),
						valueCell(t.Axis.String()), valueCell(strings.Join(db.AttrNames(t), ", "))}); err != nil {
						return err
					}
				}
				return w.close()
			})
		}),
	}
	out.register(cmd, false)
	return cmd
}

func (a *app) describeCmd() *cobra.Command {
	var txFlag string
	cmd := &cobra.Command{
		Use:   "describe NAME [--tx T]",
		Short: "Show a table's definition, declared columns and attributes",
		Long: `Show a table's definition (kind, key columns and types, valid-time axis,
tracked attributes, group index, granularity), the attribute names its writes
have used, in the order it first saw them, and the type each attribute
established (its declared type, or the type of its first stored value). Then
the declared columns with their types and nullability and whether the table
is strict, as of --tx (default: the latest declaration), and the declaration's
history: each change (create, alter --add-column, alter --widen) with its
transaction time.`,
		Example: `  bitempo describe customers
  bitempo describe prices --tx 2024-05-01T00:00:00Z`,
		Args: argsRange(1, 1, "a table NAME"),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			tx, err := parseTx(txFlag)
			if err != nil {
				return usagef("describe: --tx: %v", err)
			}
			db, t, err := a.openTable(args[0])
			if err != nil {
				return err
			}
			defer db.Close()
			fmt.Fprintf(a.stdout, "table %s: %s\n", t.Name, describeTable(t))
			if t.IgnoreNulls {
				fmt.Fprintln(a.stdout, "absent attributes keep their previous value (--ignore-nulls)")
			}
			attrs := db.AttrNames(t)
			if len(attrs) == 0 {
				fmt.Fprintln(a.stdout, "attributes: none yet")
			} else {
				fmt.Fprintf(a.stdout, "attributes: %s\n", strings.Join(attrs, ", "))
			}
			return a.describeSchema(db, t, tx, attrs)
		}),
	}
	cmd.Flags().StringVar(&txFlag, "tx", "", "show the declaration in effect at this transaction time (default: latest)")
	return cmd
}

// describeSchema prints the established attribute types, the declaration as
// of tx (0: the latest) and the declaration history.
func (a *app) describeSchema(db *store.DB, t *store.Table, tx int64, attrs []string) error {
	types := db.AttrTypes(t)
	var established []string
	for _, name := range attrs {
		if typ, ok := types[name]; ok {
			established = append(established, name+" "+typ.String())
		}
	}
	if len(established) > 0 {
		fmt.Fprintf(a.stdout, "attribute types: %s\n", strings.Join(established, ", "))
	}
	s, err := db.Snapshot()
	if err != nil {
		return err
	}
	defer s.Close()
	at := tx
	if at == 0 {
		at = store.Infinity - 1
	}
	d, err := s.Declaration(t, at)
	if err != nil {
		return err
	}
	history, err := s.Declarations(t)
	if err != nil {
		return err
	}
	asOf := "latest"
	if tx != 0 {
		asOf = "tx " + formatInstant(tx)
	}
	if len(d.Columns) == 0 {
		fmt.Fprintf(a.stdout, "columns (%s): none declared\n", asOf)
	} else {
		cols := make([]string, len(d.Columns))
		for i, c := range d.Columns {
			null := "nullable"
			if !c.Nullable {
				null = "not null"
			}
			cols[i] = fmt.Sprintf("%s %s %s", c.Name, c.Type, null)
		}
		fmt.Fprintf(a.stdout, "columns (%s): %s\n", asOf, strings.Join(cols, ", "))
		fmt.Fprintf(a.stdout, "strict (%s): %t\n", asOf, d.Strict)
	}
	declared := false
	for _, h := range history {
		declared = declared || len(h.Columns) > 0
	}
	if !declared {
		return nil
	}
	for _, h := range history {
		when := "created"
		if h.Since != 0 {
			when = "tx " + formatInstant(h.Since)
		}
		spec := store.FormatColumns(h.Columns)
		if spec == "" {
			spec = "none"
		}
		if h.Strict {
			spec += " (strict)"
		}
		fmt.Fprintf(a.stdout, "declaration %s: %s\n", when, spec)
	}
	return nil
}

func (a *app) dropCmd() *cobra.Command {
	var yes bool
	cmd := &cobra.Command{
		Use:   "drop NAME",
		Short: "Delete a table and its whole history",
		Long: `Delete a table: every version, every past record, its transaction log, its
events and indexes. This cannot be undone, and unlike a correction it leaves
nothing to read as of an earlier transaction time. On a terminal drop asks you to
type the table's name; otherwise (scripts) it refuses unless --yes is given.`,
		Example: `  bitempo drop scratch
  bitempo drop scratch --yes`,
		Args: argsRange(1, 1, "a table NAME"),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			name := args[0]
			return a.withStore(false, func(db *store.DB) error {
				t, err := a.table(db, name)
				if err != nil {
					return err
				}
				if !yes {
					if !a.stdinTTY {
						return usagef("drop: dropping %s deletes its whole history; give --yes to confirm (stdin is not a terminal to ask)", name)
					}
					fmt.Fprintf(a.stderr, "Drop table %s (%s) from %s, deleting its whole history? Type its name to confirm: ", name, describeTable(t), a.db)
					answer, _ := bufio.NewReader(a.stdin).ReadString('\n')
					if strings.TrimSpace(answer) != name {
						return fmt.Errorf("drop: not confirmed; %s is left as it was", name)
					}
				}
				if err := db.DropTable(name); err != nil {
					return err
				}
				fmt.Fprintf(a.stdout, "dropped table %s from %s\n", name, a.db)
				return nil
			})
		}),
	}
	cmd.Flags().BoolVar(&yes, "yes", false, "drop without asking")
	return cmd
}
