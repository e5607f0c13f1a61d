package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/bitempo/bitempo/store"
	"github.com/spf13/cobra"
)

func (a *app) statsCmd() *cobra.Command {
	var out outputFlags
	var keyspaces bool
	cmd := &cobra.Command{
		Use:   "stats",
		Short: "Count keys, versions, records and events per table, and the store's size",
		Long: `Print one row per table: keys (natural keys with any record), versions (the
current records: the table's state now), records (every record ever asserted),
retired (records a later transaction replaced) and events (CDC events kept by a
changes table). A first line gives the store's size on disk (Pebble's files) and
its last transaction; with --format csv or json it goes to stderr, so stdout
holds only rows.

--keyspaces prints instead one row per keyspace of the store's layout: its
entries and their logical bytes (keys and values as written, before the
engine's compression). Divided by the number of versions, they are what the
layout costs per version.`,
		Example: `  bitempo stats
  bitempo stats --format json
  bitempo stats --keyspaces`,
		Args: argsRange(0, 0, "no arguments"),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			return a.reading(&out, func(db *store.DB, w rowWriter) error {
				var size int64
				var files int
				if a.onPebble() {
					var err error
					if size, files, err = dirSize(a.db); err != nil {
						return err
					}
				}
				s, err := db.Snapshot()
				if err != nil {
					return err
				}
				defer s.Close()
				line := fmt.Sprintf("store %s: %d tables, last tx %s, pebble size %d bytes (%s) in %d files",
					a.db, len(db.Tables()), orNone(formatInstant(s.LastTx())), size, humanBytes(size), files)
				if !a.onPebble() {
					line = fmt.Sprintf("store %s: %d tables, last tx %s, on %s",
						a.db, len(db.Tables()), orNone(formatInstant(s.LastTx())), db.EngineName())
				}
				if _, ok := w.(*tableWriter); ok {
					fmt.Fprintln(a.stdout, line)
				} else if !a.quiet {
					fmt.Fprintln(a.stderr, "bitempo: "+line)
				}
				if keyspaces {
					return keyspaceRows(s, w)
				}
				if err := w.header([]string{"table", "kind", "keys", "versions", "records", "retired", "events"}); err != nil {
					return err
				}
				for _, t := range db.Tables() {
					st, err := s.TableStats(t)
					if err != nil {
						return err
					}
					err = w.row([]cell{valueCell(t.Name), valueCell(t.Kind.String()), valueCell(st.Keys),
						valueCell(st.Versions), valueCell(st.Records), valueCell(st.Retired), valueCell(st.Events)})
					if err != nil {
						return err
					}
				}
				return w.close()
			})
		}),
	}
	out.register(cmd, false)
	cmd.Flags().BoolVar(&keyspaces, "keyspaces", false, "print entries and logical bytes per keyspace instead of per table")
	return cmd
}

// keyspaceRows writes one row per keyspace of the layout and a total.
func keyspaceRows(s *store.Snapshot, w rowWriter) error {
	stats, err := s.KeyspaceStats()
	if err != nil {
		return err
	}
	if err := w.header([]string{"keyspace", "name", "entries", "key_bytes", "value_bytes", "bytes"}); err != nil {
		return err
	}
	var total store.KeyspaceStats
	for _, k := range stats {
		total.Entries += k.Entries
		total.KeyBytes += k.KeyBytes
		total.ValueBytes += k.ValueBytes
		err := w.row([]cell{valueCell(fmt.Sprintf("0x%02x", k.Prefix)), valueCell(k.Name), valueCell(k.Entries),
			valueCell(k.KeyBytes), valueCell(k.ValueBytes), valueCell(k.KeyBytes + k.ValueBytes)})
		if err != nil {
			return err
		}
	}
	err = w.row([]cell{valueCell("all"), valueCell(""), valueCell(total.Entries), valueCell(total.KeyBytes),
		valueCell(total.ValueBytes), valueCell(total.KeyBytes + total.ValueBytes)})
	if err != nil {
		return err
	}
	return w.close()
}

// dirSize sums the sizes of the regular files under dir and counts them.
func dirSize(dir string) (int64, int, error) {
	size, files, err := treeSize(os.DirFS(dir))
	if err != nil {
		return 0, 0, fmt.Errorf("size of %s: %w", dir, err)
	}
	return size, files, nil
}

// treeSize sums the sizes of the regular files in fsys. The store may be open
// while it walks, and Pebble deletes obsolete files in the background (after a
// compaction, or on open), so a file or directory that vanishes between listing
// and stat is skipped rather than failing the walk: the sum is the size at about
// that moment. Only a missing root is an error.
func treeSize(fsys fs.FS) (int64, int, error) {
	var size int64
	var files int
	err := fs.WalkDir(fsys, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path != "." && errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		size += info.Size()
		files++
		return nil
	})
	return size, files, err
}

func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

func orNone(s string) string {
	if s == "" || s == formatInstant(0) {
		return "none"
	}
	return s
}
