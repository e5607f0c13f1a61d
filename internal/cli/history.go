package cli

import (
	"fmt"

	"github.com/bitempo/bitempo/store"
	"github.com/spf13/cobra"
)

func (a *app) historyCmd() *cobra.Command {
	var (
		out              outputFlags
		from, to, txFlag string
		svg              string
		timeline         bool
		prefix, attrs    []string
	)
	cmd := &cobra.Command{
		Use:   "history NAME KEY... [--prefix KEY...] [--from T] [--to T] [--tx T] [--timeline] [--attrs A,B]",
		Short: "Print the versions of keys overlapping a valid-time window, as known at a transaction time",
		Long: `Print the versions of a key whose valid period overlaps [--from, --to), in valid
order, as the store knew them at --tx (default: the latest commit).

KEY gives one value per key column. Several keys are their values one after the
other (history customers c1 c2 c3), printed key by key in the order given; fewer
values than key columns select every key whose leading components equal them,
in key order. --prefix selects the keys starting with its values: the earlier
ones match key components whole and the last one, on a string (or bytes) key
column, as a string prefix (--prefix sku-1 matches sku-1, sku-10 and sku-1a);
an integer column matches whole. --attrs prints only the named attributes, in that order, and decodes
only those (a projection: the others are skipped in each stored record); a name
the table never stored is an empty column.

--timeline draws the key's history instead: one block per transaction that changed
the key, showing its versions as they stood after that transaction as bars on a
valid-time axis (one row per version, '+' marks the rows that transaction
asserted). It fits an 80-column terminal; use --from/--to to zoom in on a key with
a long history. With --attrs, the timeline labels versions with those
attributes only.

--svg FILE draws the bitemporal diagram of one key into FILE instead: valid time
across, transaction time up, one rectangle per record (its valid period by the
transaction-time period the store asserted it), labelled with the attributes
that changed from the version before; a correction shows as rectangles cut off
in transaction time under the ones that replaced them, and open ends reach the
edge with an arrow. The output depends only on the key's records.`,
		Example: `  bitempo history customers c1
  bitempo history customers c1 c2 --from 2024-01-01 --to 2025-01-01 --with-tx
  bitempo history prices --prefix sku-1
  bitempo history customers c1 --timeline
  bitempo history customers c1 --attrs city,tier
  bitempo history customers c1 --svg c1.svg`,
		Args: argsRange(1, -1, "a table NAME and its KEY values"),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			return a.withSelection(args, prefix, func(db *store.DB, t *store.Table, sel keySelection) error {
				lo, hi, err := parseWindow(t, from, to)
				if err != nil {
					return err
				}
				tx, err := parseTx(txFlag)
				if err != nil {
					return usagef("--tx: %v", err)
				}
				if svg != "" {
					if sel.keys == nil || len(sel.keys) != 1 {
						return usagef("--svg draws one key: give all its KEY values")
					}
					return writeSVG(svg, db, t, sel.keys[0])
				}
				if timeline {
					keys, err := selectedKeys(db, t, sel)
					if err != nil {
						return err
					}
					for i, key := range keys {
						if i > 0 {
							fmt.Fprintln(a.stdout)
						}
						if err := a.printTimeline(db, t, key, lo, hi, tx, attrs); err != nil {
							return err
						}
					}
					return nil
				}
				w, err := out.writer(a)
				if err != nil {
					return err
				}
				cols := newVersionColumns(db, t, out.withTx).project(attrs)
				if sel.keys == nil {
					return writeRangeHistory(db, t, sel.prefix, lo, hi, tx, cols, w)
				}
				var versions []store.Version
				for _, key := range sel.keys {
					var vs []store.Version
					if vs, err = keyHistory(db, t, key, lo, hi, tx, attrs); err != nil {
						break
					}
					versions = append(versions, vs...)
				}
				if err != nil {
					return err
				}
				return writeVersions(w, cols, versions)
			})
		}),
	}
	out.register(cmd, true)
	cmd.Flags().StringSliceVar(&prefix, "prefix", nil, "leading key values: every key starting with them, the last one as a string prefix (sku-1 matches sku-10)")
	cmd.Flags().StringVar(&from, "from", "", "start of the valid-time window (default: the beginning of time)")
	cmd.Flags().StringVar(&to, "to", "", "end of the valid-time window, exclusive (default: the end of time)")
	cmd.Flags().StringVar(&txFlag, "tx", "latest", "transaction time: RFC 3339, now or latest")
	cmd.Flags().StringVar(&svg, "svg", "", "draw the bitemporal diagram of one key into this SVG file")
	cmd.Flags().BoolVar(&timeline, "timeline", false, "draw the history as a timeline, one block per transaction")
	cmd.Flags().StringSliceVar(&attrs, "attrs", nil, "attributes to print and decode, in order (default: all)")
	return cmd
}

// parseWindow parses --from and --to; empty means an open end.
func parseWindow(t *store.Table, from, to string) (int64, int64, error) {
	lo, hi := store.NegInfinity, store.Infinity
	var err error
	if from != "" {
		if lo, err = parseAxisValue(t.Axis, from); err != nil {
			return 0, 0, usagef("--from: %v", err)
		}
	}
	if to != "" {
		if hi, err = parseAxisValue(t.Axis, to); err != nil {
			return 0, 0, usagef("--to: %v", err)
		}
	}
	if lo >= hi {
		return 0, 0, usagef("--from %s is not before --to %s", from, to)
	}
	return lo, hi, nil
}

// printTimeline draws a key's timeline from its audit trail, labelling the
// versions with the attributes in project (all when it is empty).
func (a *app) printTimeline(db *store.DB, t *store.Table, key store.Key, from, to, tx int64, project []string) error {
	records, err := keyAudit(db, t, key, project)
	if err != nil {
		return err
	}
	limit := store.Infinity
	if tx != 0 {
		limit = tx
	}
	title := fmt.Sprintf("%s %s", t.Name, key)
	names := db.AttrNames(t)
	if len(project) > 0 {
		names = project
	}
	return renderTimeline(a.stdout, title, records, timelineOpts{
		axis: t.Axis, attrs: names, from: from, to: to, tx: limit, table: t,
	})
}
