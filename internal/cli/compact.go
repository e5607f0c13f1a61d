package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/bitempo/bitempo/store"
)

func (a *app) compactCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "compact",
		Short: "Rewrite the store into its read-optimised shape (after bulk loads)",
		Long: `Compact the whole store (store.DB.Compact): Pebble's background compaction
falls behind a bulk load and leaves a deep level 0 that every read consults, which
made point reads about 2.5x slower in the peer benchmark until compacted. load
compacts by itself after 100,000 rows; run compact after other large writes (many
smaller loads, a CDC backfill through the library) before serving reads. It also
finishes a pending purge of erased data (see bitempo erase). Prints the
store's size before and after on stderr (not with --quiet).

On etcd (--db etcd://...) compact has nothing to do and says so: etcd keeps its
keys in a B-tree, not in levels; compacting etcd's history of old revisions and
defragmenting its files are the cluster operator's (etcdctl compaction, etcdctl
defrag, or the members' --auto-compaction-retention).`,
		Example: `  bitempo compact --db ./bitempo.db`,
		Args:    argsRange(0, 0, "no arguments"),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			var before int64
			var start time.Time
			if err := a.withStore(false, func(db *store.DB) (err error) {
				if !a.onPebble() {
					fmt.Fprintf(a.stderr, "compact: nothing to do on the %s engine: it has no levels to rewrite; compacting the cluster's history and defragmenting are the operator's (etcdctl compaction REV; etcdctl defrag)\n", db.EngineName())
					return nil
				}
				if before, _, err = dirSize(a.db); err != nil {
					return err
				}
				start = time.Now()
				return db.Compact(context.Background())
			}); err != nil || !a.onPebble() {
				return err
			}
			took := time.Since(start).Round(time.Millisecond)
			after, files, err := dirSize(a.db)
			if err != nil {
				return err
			}
			if !a.quiet {
				fmt.Fprintf(a.stderr, "compacted %s in %s: %s -> %s in %d files\n", a.db, took, humanBytes(before), humanBytes(after), files)
			}
			return nil
		}),
	}
}
