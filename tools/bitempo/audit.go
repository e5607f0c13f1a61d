package main

import (
	"github.com/spf13/cobra"
)

func (a *app) auditCmd() *cobra.Command {
	var out outputFlags
	cmd := &cobra.Command{
		Use:   "audit NAME KEY...",
		Short: "Print every record of a key, retired ones included, in transaction order",
		Long: `Print the audit trail of a key: every record the store ever held for it, in the
order of the transactions that asserted them, with tx_from (the transaction that
asserted the record) and tx_to (the one that retired it; empty while current).
It answers "what did we believe, and when did that change".`,
		Example: `  bitempo audit customers c1
  bitempo audit customers c1 --format json`,
		Args: argsRange(2, -1, "a table NAME and its KEY values"),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			db, t, key, err := a.openKey(args)
			if err != nil {
				return err
			}
			defer db.Close()
			w, err := out.writer(a)
			if err != nil {
				return err
			}
			records, err := keyAudit(db, t, key)
			if err != nil {
				return err
			}
			return writeVersions(w, newVersionColumns(db, t, true), records)
		}),
	}
	out.register(cmd, false)
	return cmd
}
