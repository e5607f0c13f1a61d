package cli

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/bitempo/bitempo/store"
	"github.com/spf13/cobra"
)

func (a *app) createCmd() *cobra.Command {
	var (
		keys, keyTypes, track, trackExcept []string
		groupBy                            []string
		kind, axis, granularity            string
		retainTx                           string
		ignoreNulls                        bool
		columns, columnsFrom, fromFormat   string
		ignore                             []string
		strict, mixedTypes                 bool
	)
	cmd := &cobra.Command{
		Use:   "create NAME --key COL[,COL...]",
		Short: "Create a table (and the store, if it does not exist yet)",
		Long: `Create a table in the catalog. The key columns name the natural key; key types
default to string. A periods table takes versions and SCD2 changes (load --from/--to
or --at); a changes table is owned by a CDC feed (load --at [--seq] [--op-col]).
Tracked attributes decide what makes a new version: all non-key attributes by
default, or only --track, or all but --track-except. Pick the kind for what your
rows are: states or corrections you load in order (periods), or events that may
arrive late, repeated or split across files in any order (changes, whose versions
do not depend on arrival order). Without --kind the table is a periods table and
create says so. The axis says how valid times
are written: time (RFC 3339), date (YYYY-MM-DD) or int. --group-by declares a
temporal index on attributes (contracts grouped by user_id) for backfill, which
aggregates a group's versions in effect at each requested time.

--columns declares attribute columns with their types, name:type,... (string,
int64, uint64, float64, bool, bytes, time, date, decimal(P,S); nullable unless
followed by "not null"): loads then read each cell as its column's type, and a
cell that does not fit is a bad row. --strict refuses attributes the
declaration does not name. --columns-from FILE infers the declaration once
from a sample of a CSV, JSONL or Parquet file (numbers with a fixed number of
decimals become decimal(P,S), integers int64, YYYY-MM-DD dates date,
timestamps time, the rest string), prints it as a --columns line to edit and
reuse, and creates the table with it. Undeclared attributes keep the type
their first value established; --mixed-types lets them change type from write
to write instead.`,
		Example: `  bitempo create customers --key customer_id --axis date
  bitempo create prices --key sku,store --key-types string,int64 --track price
  bitempo create accounts --key account_id --kind changes --granularity day
  bitempo create contracts --key contract_id --axis date --group-by user_id
  bitempo create prices --key id --columns 'price:decimal(10,2),category:string,updated:time'
  bitempo create prices --key id --columns-from prices.csv --ignore changed_on`,
		Args: argsRange(1, 1, "a table NAME"),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			def, err := tableDef(args[0], keys, keyTypes, kind, axis, granularity, track, trackExcept)
			if err != nil {
				return err
			}
			def.IgnoreNulls = ignoreNulls
			if retainTx != "" {
				if def.RetainTx, err = parseRetention(retainTx); err != nil {
					return usagef("create: --retain-tx: %v", err)
				}
			}
			for _, g := range groupBy {
				g = strings.TrimSpace(g)
				if g == "" || slices.Contains(def.GroupBy, g) {
					return usagef("create: --group-by %q: want distinct attribute names", strings.Join(groupBy, ","))
				}
				def.GroupBy = append(def.GroupBy, g)
			}
			if err := a.declareColumns(cmd.Context(), &def, columns, columnsFrom, fromFormat, ignore); err != nil {
				return err
			}
			def.Strict, def.MixedTypes = strict, mixedTypes
			if strict && len(def.Columns) == 0 {
				return usagef("create: --strict needs --columns or --columns-from (a strict table takes only declared columns)")
			}
			db, err := a.openStore(store.Options{})
			if err != nil {
				return err
			}
			defer db.Close()
			t, err := db.CreateTable(def)
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "created table %s in %s: %s\n", t.Name, a.db, describeTable(t))
			if !cmd.Flags().Changed("kind") {
				fmt.Fprintln(a.stdout, "  (the default kind, periods: it keeps versions, so a change equal to the version in effect is dropped and")
				fmt.Fprintln(a.stdout, "  late changes only rewrite up to the next stored one; for event feeds with late, repeated or")
				fmt.Fprintln(a.stdout, "  out-of-order rows, create it with --kind changes; --kind periods says you chose this)")
			}
			return nil
		}),
	}
	f := cmd.Flags()
	f.StringSliceVar(&keys, "key", nil, "key columns, in order (required)")
	f.StringSliceVar(&keyTypes, "key-types", nil, "types of the key columns: string, int64, uint64 or bytes (hex) (default string)")
	f.StringVar(&kind, "kind", "periods", "table kind: periods or changes")
	f.StringSliceVar(&track, "track", nil, "tracked attributes: only a change to one of these makes a new version")
	f.StringSliceVar(&trackExcept, "track-except", nil, "attributes that are not tracked (changes overwrite them in place)")
	f.StringVar(&axis, "axis", "time", "valid-time axis: time (RFC 3339), date (YYYY-MM-DD) or int")
	f.StringVar(&granularity, "granularity", "", "valid-time granularity of a changes table: day, hour, minute, second or a tick count")
	f.BoolVar(&ignoreNulls, "ignore-nulls", false, "changes tables: an attribute absent from an event keeps its previous value")
	f.StringVar(&retainTx, "retain-tx", "", "transaction-time retention, e.g. 400d or 36h: bitempo vacuum drops records retired longer ago")
	f.StringSliceVar(&groupBy, "group-by", nil, "attributes whose values group the versions, indexed for backfill (strings or integers)")
	f.StringVar(&columns, "columns", "", "declared attribute columns, name:type[ not null],... with type one of "+typeNames)
	f.StringVar(&columnsFrom, "columns-from", "", "infer --columns from a sample of this CSV, JSONL or Parquet file (printed, then used)")
	f.StringVar(&fromFormat, "format", "", "format of the --columns-from file: csv, jsonl or parquet (default: by extension)")
	f.StringSliceVar(&ignore, "ignore", nil, "with --columns-from: columns of the file not to declare (time and operation columns)")
	f.BoolVar(&strict, "strict", false, "take no attribute the declaration does not name")
	f.BoolVar(&mixedTypes, "mixed-types", false, "let undeclared attributes hold values of different types from write to write")
	return cmd
}

// declareColumns sets def.Columns from --columns or, inferred and printed,
// from a sample of the --columns-from file.
func (a *app) declareColumns(ctx context.Context, def *store.TableDef, columns, from, format string, ignore []string) error {
	switch {
	case columns != "" && from != "":
		return usagef("create: give --columns or --columns-from, not both")
	case columns != "":
		cols, err := store.ParseColumns(columns)
		if err != nil {
			return usagef("create: --columns: %s", clean(err))
		}
		def.Columns = cols
	case from != "":
		format, err := inputFormat(format, from)
		if err != nil {
			return err
		}
		skip := slices.Clone(ignore)
		for _, k := range def.Key {
			skip = append(skip, k.Name)
		}
		cols, err := inferColumns(ctx, from, format, skip)
		if err != nil {
			return err
		}
		def.Columns = cols
		fmt.Fprintf(a.stdout, "columns inferred from %s (edit and pass as --columns to change them):\n  --columns '%s'\n", from, store.FormatColumns(cols))
	case len(ignore) > 0:
		return usagef("create: --ignore goes with --columns-from")
	}
	return nil
}

// tableDef builds a table definition from create's flags.
func tableDef(name string, keys, keyTypes []string, kind, axis, granularity string, track, trackExcept []string) (store.TableDef, error) {
	def := store.TableDef{Name: name, Track: track, TrackExcept: trackExcept}
	if err := checkTableName(name); err != nil {
		return def, err
	}
	if len(keys) == 0 {
		return def, usagef("create: --key is required (the natural key columns, e.g. --key customer_id)")
	}
	if len(keyTypes) > 0 && len(keyTypes) != len(keys) {
		return def, usagef("create: --key-types has %d types for %d key columns", len(keyTypes), len(keys))
	}
	if len(track) > 0 && len(trackExcept) > 0 {
		return def, usagef("create: give --track or --track-except, not both")
	}
	for i, k := range keys {
		col := store.KeyColumn{Name: strings.TrimSpace(k), Type: store.String}
		if len(keyTypes) > 0 {
			typ, err := store.ParseKeyType(strings.TrimSpace(keyTypes[i]))
			if err != nil {
				return def, usagef("create: --key-types: %s", clean(err))
			}
			col.Type = typ
		}
		def.Key = append(def.Key, col)
	}
	var err error
	if def.Kind, err = store.ParseKind(kind); err != nil {
		return def, usagef("create: --kind: %s", clean(err))
	}
	if def.Axis, err = store.ParseAxis(axis); err != nil {
		return def, usagef("create: --axis: %s", clean(err))
	}
	if granularity != "" {
		if def.Granularity, err = parseGranularity(def.Axis, granularity); err != nil {
			return def, usagef("create: --granularity: %v", err)
		}
	}
	return def, nil
}

// checkTableName rejects a table name that would have to be quoted on every
// command line: spaces and other white space, control characters, or none.
func checkTableName(name string) error {
	if name == "" {
		return usagef("create: the table name is empty")
	}
	for _, r := range name {
		if unicode.IsSpace(r) || unicode.IsControl(r) || !unicode.IsPrint(r) {
			return usagef("create: table name %q has a space or control character; use letters, digits, _ or - (e.g. %q)",
				name, strings.Map(func(r rune) rune {
					if unicode.IsSpace(r) || !unicode.IsPrint(r) {
						return '_'
					}
					return r
				}, name))
		}
	}
	return nil
}

// describeTable summarises a table definition in one line.
func describeTable(t *store.Table) string {
	cols := make([]string, len(t.Key))
	for i, c := range t.Key {
		cols[i] = c.Name + " " + c.Type.String()
	}
	s := fmt.Sprintf("%s table, key (%s), %s axis", t.Kind, strings.Join(cols, ", "), t.Axis)
	switch {
	case len(t.Track) > 0:
		s += ", tracking " + strings.Join(t.Track, ", ")
	case len(t.TrackExcept) > 0:
		s += ", tracking all but " + strings.Join(t.TrackExcept, ", ")
	}
	if len(t.GroupBy) > 0 {
		s += ", grouped by " + strings.Join(t.GroupBy, ", ")
	}
	if t.Granularity > 0 {
		s += fmt.Sprintf(", granularity %d ticks", t.Granularity)
	}
	if t.RetainTx > 0 {
		s += ", retaining retired records for " + formatRetention(t.RetainTx)
	}
	if len(t.Columns) > 0 {
		s += ", columns " + store.FormatColumns(t.Columns)
	}
	if t.Strict {
		s += ", strict"
	}
	if t.MixedTypes {
		s += ", mixed types"
	}
	return s
}
