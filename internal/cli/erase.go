package cli

import (
	"fmt"

	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
	"github.com/spf13/cobra"
)

func (a *app) eraseCmd() *cobra.Command {
	var (
		reason string
		check  bool
	)
	cmd := &cobra.Command{
		Use:   "erase NAME KEY... [--reason TEXT] [--check]",
		Short: "Erase every trace of a key (right to erasure), or check whether it was erased",
		Long: `Erase removes every trace of one key's data from table NAME (txn.Tx.Erase): all
its records at every transaction time, their surrogate-key index entries and
group-index copies, its transaction-log entries and, in a changes table, its
events. Reads at every transaction time then answer as for a key that never
existed; get-by-sk of one of its surrogate keys says "erased". KEY gives one value
per key column, as for get.

What stays is an erasure entry in the change feed at the erasing transaction: the
time, --reason (which must hold no personal data) and a keyed hash of the key
(HMAC-SHA256 under a secret kept in the store), not the key. --check answers "was
this key erased?" from that hash, without erasing anything.

The erased bytes leave the store's files before erase returns: the store is
flushed, the affected key ranges compacted, old write-ahead logs deleted (never
recycled) and the MANIFEST rewritten when the store closes. Copies made before
(backups, file-system snapshots, replicas) still hold the data: erase the key in
each of them too, or destroy them.`,
		Example: `  bitempo erase customers c1 --reason "request 2026-114"
  bitempo erase customers c1 --check`,
		Args: argsRange(2, -1, "a table NAME and its KEY values"),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			if check {
				return a.checkErased(args)
			}
			db, err := a.open(false)
			if err != nil {
				return err
			}
			t, err := a.table(db, args[0])
			if err != nil {
				_ = db.Close()
				return err
			}
			key, err := parseKeyArgs(t, args[1:])
			if err != nil {
				_ = db.Close()
				return err
			}
			c, err := txn.Update(db, func(tx *txn.Tx) error { return tx.EraseFor(t.Name, key, reason) })
			if cerr := db.Close(); err == nil {
				err = cerr // Close finishes the purge (store/purge.go)
			}
			if err != nil {
				return err
			}
			switch {
			case a.quiet:
			case a.onPebble():
				fmt.Fprintf(a.stderr, "erased %s %s at transaction %s; no file of %s holds its data any more\n", t.Name, key, formatInstant(c.Tx), a.db)
			default:
				fmt.Fprintf(a.stderr, "erased %s %s at transaction %s; its data stays in the etcd cluster's history until the cluster is compacted past this commit and defragmented (etcdctl compaction, etcdctl defrag)\n", t.Name, key, formatInstant(c.Tx))
			}
			return nil
		}),
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why the key is erased, kept in the change feed (no personal data)")
	cmd.Flags().BoolVar(&check, "check", false, "only report whether (and when) the key was erased; exit 1 if it never was (the key exists, or is unknown)")
	return cmd
}

// checkErased reports the erasures of a key: exit status 1 when there is none.
func (a *app) checkErased(args []string) error {
	db, t, key, err := a.openKey(args)
	if err != nil {
		return err
	}
	defer db.Close()
	s, err := db.Snapshot()
	if err != nil {
		return err
	}
	defer s.Close()
	txs, err := s.Erasures(t, key)
	if err != nil {
		return err
	}
	if len(txs) == 0 {
		for _, err := range query.Audit(db, t.Name, key, query.AuditOptions{RawAttrs: true}) {
			if err != nil {
				return err
			}
			return fmt.Errorf("%s %s exists and was not erased", t.Name, key)
		}
		return fmt.Errorf("%s %s was never erased: %w", t.Name, key, store.ErrUnknownKey)
	}
	for _, tx := range txs {
		fmt.Fprintf(a.stdout, "%s %s erased at transaction %s\n", t.Name, key, formatInstant(tx))
	}
	return nil
}
