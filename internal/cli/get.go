package cli

import (
	"errors"
	"fmt"

	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
	"github.com/spf13/cobra"
)

func (a *app) getCmd() *cobra.Command {
	var (
		out        outputFlags
		valid, txs string
		attrs      []string
	)
	cmd := &cobra.Command{
		Use:   "get NAME KEY... [--valid T] [--tx T] [--attrs A,B]",
		Short: "Print the version of a key in effect at a valid time, as known at a transaction time",
		Long: `Print the version of a key in effect at valid time --valid (default now), as the
store knew it at transaction time --tx (default: the latest commit). KEY gives one
value per key column. When there is no such version, get exits with status 1 and
says why: unknown key, before the first version, in a gap, or after the last
version. --attrs prints only the named attributes, in that order, and decodes
only those (a projection: the others are skipped in the stored record); a name
the table never stored is an empty column.`,
		Example: `  bitempo get customers c1 --valid 2024-03-08
  bitempo get customers c1 --valid 2024-03-12 --tx 2024-05-01T10:00:00Z --format json
  bitempo get customers c1 --attrs city,tier`,
		Args: argsRange(2, -1, "a table NAME and its KEY values"),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			db, t, key, err := a.openKey(args)
			if err != nil {
				return err
			}
			defer db.Close()
			at, err := parseAsOf(t, valid, txs)
			if err != nil {
				return err
			}
			w, err := out.writer(a)
			if err != nil {
				return err
			}
			v, err := query.Get(db, t.Name, key, at, query.GetOptions{Project: attrs})
			var miss *query.Miss
			if errors.As(err, &miss) {
				return fmt.Errorf("get %s %s at valid %s, %s: %s", t.Name, key, valid, describeTx(at.Tx), miss.Reason)
			}
			if err != nil {
				return err
			}
			return writeVersions(w, newVersionColumns(db, t, out.withTx).project(attrs), []store.Version{v})
		}),
	}
	out.register(cmd, true)
	cmd.Flags().StringVar(&valid, "valid", "now", "valid time (the table's axis, or now)")
	cmd.Flags().StringVar(&txs, "tx", "latest", "transaction time: RFC 3339, now or latest")
	cmd.Flags().StringSliceVar(&attrs, "attrs", nil, "attributes to print and decode, in order (default: all)")
	return cmd
}

// parseAsOf parses --valid and --tx for table t.
func parseAsOf(t *store.Table, valid, tx string) (query.AsOf, error) {
	v, err := parseAxisValue(t.Axis, valid)
	if err != nil {
		return query.AsOf{}, usagef("--valid: %v", err)
	}
	x, err := parseTx(tx)
	if err != nil {
		return query.AsOf{}, usagef("--tx: %v", err)
	}
	return query.AsOf{Valid: v, Tx: x}, nil
}

// describeTx names a transaction time in messages.
func describeTx(tx int64) string {
	if tx == query.Latest {
		return "as of the latest commit"
	}
	return "as known at " + formatInstant(tx)
}
