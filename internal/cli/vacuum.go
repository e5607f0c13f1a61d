package cli

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/bitempo/bitempo/store"
)

func (a *app) vacuumCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "vacuum",
		Short: "Drop records retired longer ago than their table's --retain-tx",
		Long: `Vacuum (store.DB.Vacuum) drops, from every table created with --retain-tx, the
records retired longer ago than the retention, with the change-feed entries of
those transactions, and then purges them from the store's files. Reads at a
transaction time at or after the new horizon answer as before; a read before it
fails ("before the retention horizon") rather than answer from partial history.
Valid-time history is never dropped: a version that ended long ago in valid time
but is still believed stays. Prints what it dropped per table on stderr.`,
		Example: `  bitempo create customers --key customer_id --retain-tx 400d
  bitempo vacuum --db ./bitempo.db`,
		Args: argsRange(0, 0, "no arguments"),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			var res []store.VacuumResult
			if err := a.withStore(false, func(db *store.DB) (err error) {
				res, err = db.Vacuum(context.Background())
				return err
			}); err != nil {
				return err
			}
			for _, r := range res {
				if a.quiet {
					continue
				}
				if r.Horizon == 0 {
					fmt.Fprintf(a.stderr, "%s: nothing to drop\n", r.Table)
					continue
				}
				fmt.Fprintf(a.stderr, "%s: horizon %s; dropped %d retired records, %d change-feed entries, %d sk-index entries\n",
					r.Table, formatInstant(r.Horizon), r.Records, r.LogEntries, r.SKEntries)
			}
			return nil
		}),
	}
}

// parseRetention parses a retention: a number of days ("400d") or a Go
// duration ("36h", "90m"), into ticks (microseconds).
func parseRetention(s string) (int64, error) {
	if n, ok := strings.CutSuffix(s, "d"); ok {
		days, err := strconv.ParseInt(n, 10, 64)
		if err != nil || days <= 0 || days > 100_000_000 {
			return 0, fmt.Errorf("%q: want a positive number of days (400d) or a duration (36h)", s)
		}
		return days * dayTicks, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%q: want a positive number of days (400d) or a duration (36h)", s)
	}
	return d.Microseconds(), nil
}

// formatRetention renders a retention in days when it is whole days.
func formatRetention(ticks int64) string {
	if ticks%dayTicks == 0 {
		return fmt.Sprintf("%dd", ticks/dayTicks)
	}
	return (time.Duration(ticks) * time.Microsecond).String()
}
