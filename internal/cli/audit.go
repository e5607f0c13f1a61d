package cli

import (
	"github.com/bitempo/bitempo/store"
	"github.com/spf13/cobra"
)

func (a *app) auditCmd() *cobra.Command {
	var (
		out           outputFlags
		prefix, attrs []string
	)
	cmd := &cobra.Command{
		Use:   "audit NAME KEY... [--prefix KEY...] [--attrs A,B]",
		Short: "Print every record of keys, retired ones included, in transaction order",
		Long: `Print the audit trail of a key: every record the store ever held for it, in the
order of the transactions that asserted them, with tx_from (the transaction that
asserted the record) and tx_to (the one that retired it; empty while current).
It answers "what did we believe, and when did that change".

KEY gives one value per key column. Several keys are their values one after the
other (audit customers c1 c2), printed key by key in the order given; fewer values
than key columns select the keys whose leading components equal them, and
--prefix the keys starting with its values (the earlier ones matching key
components whole, the last one, on a string or bytes key column, as a string
prefix: --prefix sku-1 matches sku-1, sku-10 and sku-1a; an integer column
matches whole), that have a version at the latest commit, in key order. --attrs prints only the named
attributes, in that order, and decodes only those (a projection: the others are
skipped in each stored record); a name the table never stored is an empty
column.`,
		Example: `  bitempo audit customers c1
  bitempo audit customers c1 c2 --format json
  bitempo audit prices --prefix sku-1
  bitempo audit customers c1 --attrs tier`,
		Args: argsRange(1, -1, "a table NAME and its KEY values"),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			return a.withSelection(args, prefix, func(db *store.DB, t *store.Table, sel keySelection) error {
				w, err := out.writer(a)
				if err != nil {
					return err
				}
				keys, err := selectedKeys(db, t, sel)
				if err != nil {
					return err
				}
				var records []store.Version
				for _, key := range keys {
					rs, err := keyAudit(db, t, key, attrs)
					if err != nil {
						return err
					}
					records = append(records, rs...)
				}
				return writeVersions(w, newVersionColumns(db, t, true).project(attrs), records)
			})
		}),
	}
	out.register(cmd, false)
	cmd.Flags().StringSliceVar(&prefix, "prefix", nil, "leading key values: every key starting with them, the last one as a string prefix (sku-1 matches sku-10)")
	cmd.Flags().StringSliceVar(&attrs, "attrs", nil, "attributes to print and decode, in order (default: all)")
	return cmd
}
