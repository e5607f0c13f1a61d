package cli

import (
	"github.com/spf13/cobra"
)

func (a *app) scanCmd() *cobra.Command {
	var (
		out        outputFlags
		valid, txs string
		prefix     []string
		attrs      []string
	)
	cmd := &cobra.Command{
		Use:   "scan NAME [--valid T] [--tx T] [--prefix KEY...] [--attrs A,B]",
		Short: "Print the version of every key in effect at a valid time, as known at a transaction time",
		Long: `Print one row per key: the version in effect at --valid (default now) as known at
--tx (default: the latest commit), in key order. Keys with no version then are
left out. --prefix restricts the scan to keys starting with the given leading
key values (repeat the flag, or separate values with commas): the earlier ones
match key components whole and the last one, on a string (or bytes) key
column, as a string prefix (--prefix sku-1 matches sku-1, sku-10 and sku-1a);
an integer column matches whole. --attrs prints
only the named attributes, in that order, and decodes only those (a projection:
the others are skipped in each stored record); a name the table never stored
is an empty column.`,
		Example: `  bitempo scan customers --valid 2024-03-12
  bitempo scan prices --prefix sku-1 --valid now --tx 2024-05-01T00:00:00Z --with-tx
  bitempo scan customers --attrs city,tier`,
		Args: argsRange(1, 1, "a table NAME"),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			db, t, err := a.openTable(args[0])
			if err != nil {
				return err
			}
			defer db.Close()
			at, err := parseAsOf(t, valid, txs)
			if err != nil {
				return err
			}
			pk, err := prefixRange(t, prefix)
			if err != nil {
				return err
			}
			w, err := out.writer(a)
			if err != nil {
				return err
			}
			cols := newVersionColumns(db, t, out.withTx).project(attrs)
			if err := w.header(cols.header()); err != nil {
				return err
			}
			if err := scanRows(db, t, pk, at.Valid, at.Tx, cols, w); err != nil {
				return err
			}
			return w.close()
		}),
	}
	out.register(cmd, true)
	cmd.Flags().StringVar(&valid, "valid", "now", "valid time (the table's axis, or now)")
	cmd.Flags().StringVar(&txs, "tx", "latest", "transaction time: RFC 3339, now or latest")
	cmd.Flags().StringSliceVar(&prefix, "prefix", nil, "leading key values: every key starting with them, the last one as a string prefix (sku-1 matches sku-10)")
	cmd.Flags().StringSliceVar(&attrs, "attrs", nil, "attributes to print and decode, in order (default: all)")
	return cmd
}
