package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/bitempo/bitempo/store"
)

func (a *app) recoverCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "recover",
		Short: "Open a store whose write-ahead log is damaged, keeping every transaction before the damage",
		Long: `Open a store that other commands refuse because its write-ahead log is damaged
(bit rot or an overwritten block, not the torn last record a crash leaves, which
every open drops silently). The transactions before the damage are kept; the
damaged commit and every later one are dropped, so the store holds a prefix of
its history. The original log files are moved, untouched, into a lost-wal-*
directory inside the store. Prints which transactions were lost (the newest one
kept, the transaction times of the dropped ones that could still be read), then
verifies the store.

A store whose live write-ahead log was deleted (Open names the range of log
numbers it lies in) is opened with what its table files hold; the commits of
the missing log are lost and cannot be listed. Put the log back first if you can.

A store whose newest write-ahead log was cut short or deleted after commits in
it were synced (Open says how many acknowledged commits are lost) is opened
with what is left: recover accepts the loss and says how many were lost.

On a store whose log is intact, recover changes nothing and says so. Damage to
other files (table files, the MANIFEST) cannot be recovered this way: restore
the store from a backup.`,
		Example: `  bitempo recover --db ./bitempo.db`,
		Args:    argsRange(0, 0, "no arguments"),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			db, err := a.openStoreRecovering(store.Options{MustExist: true}, true)
			if err != nil {
				return err
			}
			defer db.Close()
			if r := db.Recovery(); r != nil {
				fmt.Fprintf(a.stdout, "%s: recovered: %s\n", a.db, r)
				for _, tx := range r.LostTxs {
					fmt.Fprintf(a.stdout, "lost tx %s (%d)\n", formatInstant(tx), tx)
				}
			} else {
				fmt.Fprintf(a.stdout, "%s: the write-ahead log is intact; nothing to recover\n", a.db)
			}
			return a.verify(db)
		}),
	}
}
