package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
	"github.com/spf13/cobra"
)

func (a *app) putCmd() *cobra.Command {
	var (
		from, to  string
		sets      []string
		typeSpecs []string
	)
	cmd := &cobra.Command{
		Use:   "put NAME KEY... --from T [--to T] [--set COL=VALUE ...] [--types COL=TYPE]",
		Short: "Assert a version of a key over a valid period (FOR PORTION OF), in one transaction",
		Long: `Assert one version of a key over the valid period [--from, --to) in one
transaction, as the library's txn Put does, with SQL:2011 FOR PORTION OF
semantics: the versions the period overlaps are trimmed, or split in two when
it falls inside one, and their leftovers outside the period keep their
attributes; after the commit every instant of the period reads the new version.
--to is optional (default: open-ended, +inf). KEY gives one value per key
column, as get takes it.

The new version holds exactly the --set attributes (repeat the flag): an
attribute not given is absent from it, not carried over from the versions it
replaces. A value is read as a load reads a CSV cell: with --types COL=TYPE
(int64, float64, bool, string, time) when given, else with the type that
attribute has in the key's stored versions when the value reads as that type
(a text attribute keeps 0123 as text), else with the type a load infers from
the value (int64, then float64, then bool, else string; a number a float64
cannot hold exactly stays text). --set COL= (empty) is null, as an empty cell
loads; the tool, like a CSV load, has no way to store an empty string.

It prints one summary line on stderr (none with --quiet): versions inserted,
closed (the overlapped versions: trimmed, split, or replaced whole) and
unchanged (the key already held exactly that version: nothing is written), the
records asserted (the new version and the leftovers of the closed ones) and
retired, and the transaction time. A changes (CDC) table is refused: its versions come from its
feed. An unknown table, a bad key, time or value writes nothing.`,
		Example: `  bitempo put prices sku-1 --from 2024-03-01 --to 2024-04-01 --set price=9.5 --set currency=EUR
  bitempo put customers c1 --from 2024-06-01 --set city=Oslo --set tier=gold
  bitempo put stock eu sku-1 --from 0 --to 10 --set n=3 --types n=string`,
		Args: argsRange(2, -1, "a table NAME and its KEY values"),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			if from == "" {
				return usagef("put: --from T is required (the start of the valid period)")
			}
			types, err := parseTypes(typeSpecs)
			if err != nil {
				return err
			}
			names, values, err := parseSets(sets)
			if err != nil {
				return err
			}
			return a.writeKey("put", args, from, to, func(db *store.DB, tx *txn.Tx, t *store.Table, key store.Key, lo, hi int64, before []store.Version) error {
				attrs, warnings, err := setAttrs(t, db.AttrTypes(t), before, values, types)
				if err != nil {
					return err
				}
				if !a.quiet {
					for _, w := range warnings {
						fmt.Fprintln(a.stderr, "bitempo: "+w)
					}
				}
				// new attributes take the --set order, as a load's take its header's
				if err := tx.DeclareAttrNames(t.Name, names); err != nil {
					return err
				}
				return tx.Put(t.Name, key, attrs, lo, hi)
			})
		}),
	}
	cmd.Flags().StringVar(&from, "from", "", "start of the valid period (the table's axis; required)")
	cmd.Flags().StringVar(&to, "to", "", "end of the valid period, exclusive (default: open-ended)")
	cmd.Flags().StringArrayVar(&sets, "set", nil, "an attribute of the new version, COL=VALUE (repeat the flag; COL= is null)")
	cmd.Flags().StringSliceVar(&typeSpecs, "types", nil, "column types, COL=TYPE with TYPE one of "+typeNames)
	return cmd
}

func (a *app) deleteCmd() *cobra.Command {
	var from, to string
	cmd := &cobra.Command{
		Use:   "delete NAME KEY... [--from T] [--to T]",
		Short: "Remove a key over a valid period (DELETE FOR PORTION OF), in one transaction",
		Long: `Remove a key over the valid period [--from, --to) in one transaction, as the
library's txn Delete does (SQL:2011 DELETE ... FOR PORTION OF): the versions the
period overlaps are trimmed, or split in two around it, and the period is left
a gap. Without --from the period starts at -inf, without --to it ends at +inf:
with neither, the key's whole timeline is deleted. The key's records stay in
the audit trail (this is not erase). KEY gives one value per key column, as get
takes it.

It prints one summary line on stderr (none with --quiet): versions inserted
(always 0) and closed (the overlapped versions: trimmed, split, or removed
whole), the records asserted (the leftovers of the closed versions) and
retired, and the transaction time; nothing is written when no version overlaps
the period. A changes (CDC) table is refused: its
versions come from its feed. An unknown table, a bad key or time writes
nothing.`,
		Example: `  bitempo delete prices sku-1 --from 2024-03-01 --to 2024-04-01
  bitempo delete customers c1 --from 2025-01-01
  bitempo delete customers c2`,
		Args: argsRange(2, -1, "a table NAME and its KEY values"),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			return a.writeKey("delete", args, from, to, func(_ *store.DB, tx *txn.Tx, t *store.Table, key store.Key, lo, hi int64, _ []store.Version) error {
				return tx.Delete(t.Name, key, lo, hi)
			})
		}),
	}
	cmd.Flags().StringVar(&from, "from", "", "start of the valid period (the table's axis; default -inf)")
	cmd.Flags().StringVar(&to, "to", "", "end of the valid period, exclusive (default +inf)")
	return cmd
}

// writeKey runs write (of the command verb) in one transaction on the key of
// args over the valid period [from, to) and prints its summary. write gets the
// key's versions as they stood before it; nothing is written before the table,
// key and period are checked.
func (a *app) writeKey(verb string, args []string, from, to string, write func(db *store.DB, tx *txn.Tx, t *store.Table, key store.Key, lo, hi int64, before []store.Version) error) error {
	var summary string
	err := a.withStore(false, func(db *store.DB) error {
		t, err := a.table(db, args[0])
		if err != nil {
			return err
		}
		key, err := parseKeyArgs(t, args[1:])
		if err != nil {
			return err
		}
		lo, hi, err := parseWindow(t, from, to)
		if err != nil {
			return err
		}
		var before, after []store.Version
		c, err := txn.Update(db, func(tx *txn.Tx) error {
			var err error
			if t.Kind == store.Periods {
				// a changes table is refused by write, with the library's error
				if before, err = tx.Versions(t.Name, key); err != nil {
					return err
				}
			}
			if err := write(db, tx, t, key, lo, hi, before); err != nil {
				return err
			}
			after, err = tx.Versions(t.Name, key)
			return err
		})
		if err != nil {
			return err
		}
		summary = writeSummary(verb, t, key, lo, hi, before, after, c)
		return nil
	})
	if err != nil {
		return err
	}
	if !a.quiet {
		fmt.Fprintln(a.stderr, summary)
	}
	return nil
}

// writeSummary describes what a put or delete over [lo, hi) did to a key's
// versions, in the words of a load summary.
func writeSummary(verb string, t *store.Table, key store.Key, lo, hi int64, before, after []store.Version, c txn.Commit) string {
	kept := map[string]bool{}
	for _, v := range after {
		kept[versionID(v)] = true
	}
	// A version the write overlapped is closed: its record is retired, and
	// what lies outside [lo, hi) is kept as a new record of it.
	var closed, trimmed, split, whole int
	for _, v := range before {
		if kept[versionID(v)] {
			continue
		}
		closed++
		switch left, right := v.ValidFrom < lo, v.ValidTo > hi; {
		case left && right:
			split++
		case left || right:
			trimmed++
		default:
			whole++
		}
	}
	// Put asserts its version unless the key held exactly that one already
	// (then nothing is written); the leftovers of trimmed and split versions
	// are in the records asserted, not in the versions inserted.
	inserted, unchanged := 0, 0
	if verb == "put" {
		if c.Tx == 0 {
			unchanged = 1
		} else {
			inserted = 1
		}
	}
	var b strings.Builder
	wholeWord := "replaced whole"
	if verb == "delete" {
		wholeWord = "removed whole"
	}
	fmt.Fprintf(&b, "bitempo: %s %s %s over [%s, %s): versions inserted %d / closed %d (trimmed %d, split %d, %s %d)",
		verb, t.Name, key, periodEnd(t, lo, "-inf"), periodEnd(t, hi, "+inf"), inserted, closed, trimmed, split, wholeWord, whole)
	if verb == "put" {
		fmt.Fprintf(&b, " / unchanged %d", unchanged)
	}
	fmt.Fprintf(&b, "; records asserted %d, retired %d; ", c.Asserted, c.Retired)
	b.WriteString(describeTxs(commitTxs(c)))
	return b.String()
}

func commitTxs(c txn.Commit) []int64 {
	if c.Tx == 0 {
		return nil
	}
	return []int64{c.Tx}
}

// versionID identifies a version by its period, sk and attributes: a version
// the write left alone has the same one after it.
func versionID(v store.Version) string {
	return fmt.Sprintf("%d %d %d %v", v.ValidFrom, v.ValidTo, v.SK, v.Attrs)
}

func periodEnd(t *store.Table, x int64, inf string) string {
	if x == store.Infinity || x == store.NegInfinity {
		return inf
	}
	return formatAxisValue(t.Axis, x)
}

// parseSets splits the --set COL=VALUE flags, refusing a repeated column; it
// returns the columns in the order given and their values.
func parseSets(sets []string) ([]string, map[string]string, error) {
	out := make(map[string]string, len(sets))
	var names []string
	for _, s := range sets {
		col, val, ok := strings.Cut(s, "=")
		col = strings.TrimSpace(col)
		if !ok || col == "" {
			return nil, nil, usagef("--set %q: want COL=VALUE", s)
		}
		if _, dup := out[col]; dup {
			return nil, nil, usagef("--set names %s twice", col)
		}
		out[col] = val
		names = append(names, col)
	}
	return names, out, nil
}

// setAttrs converts the --set values to attributes as a load converts a CSV
// cell: a declared column's type (a --types type must agree with it), else the
// type the attribute established in the table, else the --types type, else
// (a MixedTypes table) the type the attribute has in the key's stored versions
// (the latest one holding it) when the value reads as that type (so 0123
// stays text for a text attribute), else the type a load infers from the value
// alone; an empty value is null.
func setAttrs(t *store.Table, established map[string]store.ColumnType, before []store.Version, values map[string]string, types map[string]attrType) (store.Attrs, []string, error) {
	attrs := make(store.Attrs, len(values))
	var warnings []string
	if t.MixedTypes {
		established = nil
	}
	for col, s := range values {
		typ, declared := types[col]
		if c, ok := t.Column(col); ok {
			if declared && !typesAgree(c.Type, typ) {
				return nil, nil, usagef("--types %s=%s: table %s declares column %s as %s", col, typ, t.Name, col, c.Type)
			}
			typ, declared = c.Type, true
		} else if e, ok := established[col]; ok && !declared {
			typ, declared = e, true
		}
		if !declared {
			var stored bool
			typ, stored = storedType(before, col)
			if stored && s != "" {
				if _, err := convertText(typ, s); err != nil {
					stored = false // 9.5 into an int64 attribute: read it afresh
				}
			}
			if !stored {
				typ = inferType([]string{s})
				if typ == typeFloat64 && !exactFloat(s) {
					typ = typeString
					warnings = append(warnings, fmt.Sprintf("--set %s=%s: a float64 cannot hold it exactly, so it is kept as text (--types %s=float64 rounds it instead)", col, s, col))
				}
			}
		}
		v, err := convertText(typ, s)
		if err != nil {
			return nil, nil, usagef("--set %s: %v", col, err)
		}
		attrs[col] = v
	}
	for col := range types {
		if _, ok := values[col]; !ok {
			return nil, nil, usagef("--types names %s, which no --set gives", col)
		}
	}
	return attrs, warnings, nil
}

// storedType is the type of attribute col in the latest of versions that
// holds a value of it.
func storedType(versions []store.Version, col string) (attrType, bool) {
	for i := len(versions) - 1; i >= 0; i-- {
		switch versions[i].Attrs[col].(type) {
		case int64:
			return typeInt64, true
		case float64:
			return typeFloat64, true
		case bool:
			return typeBool, true
		case string:
			return typeString, true
		case time.Time:
			return typeTime, true
		}
	}
	return attrType{}, false
}
