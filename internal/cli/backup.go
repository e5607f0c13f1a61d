package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/bitempo/bitempo/store"
)

func (a *app) backupCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "backup DEST",
		Short: "Write a consistent copy of the store to a new directory",
		Long: `Write a consistent copy of the store of --db to DEST, a directory that must not
exist yet (store.DB.Backup: a Pebble checkpoint). The copy holds every commit up
to one transaction time and none after, opens as a store as it is, and verifies
clean. Files are hard-linked when DEST is on the same file system, so the copy is
fast and at first takes little extra space.

A store is locked by the process that has it open, so this command backs up a
store no other process is using. To back up a store while a service keeps
writing to it, call DB.Backup(ctx, dest) from that service: writers keep
committing while the copy is taken.

To restore: stop the service, move the damaged store aside, move (or copy) the
backup into its place, and start the service again; or point --db (Open) at the
backup directly.`,
		Example: `  bitempo backup --db ./bitempo.db ./backups/2024-06-01
  bitempo verify --db ./backups/2024-06-01`,
		Args: argsRange(1, 1, "a DEST directory"),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			// Opened for writing: Pebble checkpoints only an engine opened so.
			// The store's content is not changed.
			return a.withStore(false, func(db *store.DB) error {
				start := time.Now()
				if err := db.Backup(context.Background(), args[0]); err != nil {
					return err
				}
				if !a.quiet {
					fmt.Fprintf(a.stderr, "bitempo: backed up %s to %s (last tx %s) in %s\n",
						a.db, args[0], orNone(formatInstant(db.LastTx())), time.Since(start).Round(time.Millisecond))
				}
				return nil
			})
		}),
	}
	return cmd
}
