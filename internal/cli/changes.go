package cli

import (
	"fmt"
	"strings"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
	"github.com/spf13/cobra"
)

func (a *app) changesCmd() *cobra.Command {
	var (
		out          outputFlags
		since, until string
		attrs        []string
	)
	cmd := &cobra.Command{
		Use:   "changes NAME --since TX [--until TX] [--attrs A,B]",
		Short: "Print every record asserted or retired by the transactions in (since, until]",
		Long: `Print the change feed of a table: every record asserted or retired by a
transaction after --since and up to --until (default: the latest commit), in commit
order. Columns: tx (the transaction), op (asserted or retired), then the record with
its tx_from and tx_to, then erased_records and erasure_reason. An erasure
(bitempo erase) is a row of its own: op "erased", the erasing transaction in tx,
the record columns empty (the feed keeps no erased key, only its hash), the
number of records it removed in erased_records and the --reason given in
erasure_reason; those two columns are empty for other rows. A consumer that resolved facts at load time re-resolves the
facts whose key and valid time fall in a retired record's period: those are the
facts a later correction made stale. --since 0 starts at the first commit still
held: after a vacuum, right after the table's retention horizon (said on stderr),
since the changes before it were dropped.
--attrs prints only the named attributes, in that order, and decodes only those
(a projection: the others are skipped in each stored record); a name the table
never stored is an empty column.`,
		Example: `  bitempo changes customers --since 2024-05-01T10:00:00Z
  bitempo changes customers --since 0 --format json
  bitempo changes customers --since 0 --attrs city`,
		Args: argsRange(1, 1, "a table NAME"),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			if since == "" {
				return usagef("changes: --since TX is required (0 for the first commit)")
			}
			lo, err := parseSince(since)
			if err != nil {
				return usagef("--since: %v", err)
			}
			hi, err := parseTx(until)
			if err != nil {
				return usagef("--until: %v", err)
			}
			if hi != 0 && hi < lo {
				return usagef("changes: --since %s is later than --until %s: the interval (since, until] is empty", since, until)
			}
			db, t, err := a.openTable(args[0])
			if err != nil {
				return err
			}
			defer db.Close()
			if lo == 0 {
				// --since 0 is the first commit still held: after a vacuum the
				// feed starts at the table's retention horizon.
				h, err := tableHorizon(db, t)
				if err != nil {
					return err
				}
				if h > 0 {
					lo = h
					if !a.quiet {
						fmt.Fprintf(a.stderr, "changes: %s was vacuumed through %s: the feed starts after it (the changes before it are gone)\n", t.Name, formatInstant(h))
					}
				}
			}
			w, err := out.writer(a)
			if err != nil {
				return err
			}
			cols := newVersionColumns(db, t, true).project(attrs)
			header := append(append([]string{"tx", "op"}, cols.header()...), "erased_records", "erasure_reason")
			if err := w.header(header); err != nil {
				return err
			}
			rowAttrs := newAttrColumns(t, cols.attrs)
			var v encoding.Value
			err = changeFeed(db, t, lo, hi, attrs, func(c *query.ChangeRow) error {
				cells, err := changeCells(cols, rowAttrs, c, len(header), &v)
				if err != nil {
					return err
				}
				return w.row(cells)
			})
			if err != nil {
				return err
			}
			return w.close()
		}),
	}
	out.register(cmd, false)
	cmd.Flags().StringVar(&since, "since", "", "exclusive start: a transaction time (RFC 3339), or 0 (required)")
	cmd.Flags().StringVar(&until, "until", "latest", "inclusive end: a transaction time, now or latest")
	cmd.Flags().StringSliceVar(&attrs, "attrs", nil, "attributes to print and decode, in order (default: all)")
	return cmd
}

// changeCells lays out one change under the header tx, op, the record's
// columns, erased_records, erasure_reason. An erasure keeps no key or record
// (the key is the personal data it erased): its row has the op "erased", the
// erasing transaction in tx, empty record columns, and the number of records
// the erasure removed and its reason in the last two columns, which are empty
// for asserted and retired records.
func changeCells(cols *versionColumns, attrs *attrColumns, c *query.ChangeRow, n int, v *encoding.Value) ([]cell, error) {
	row := make([]cell, 0, n)
	row = append(row, txCell(c.Tx), valueCell(c.Op.String()))
	if c.Op != query.Erased || c.Erasure == nil {
		cells, err := cols.rowCells(c.Row, attrs, v)
		if err != nil {
			return nil, err
		}
		return append(append(row, cells...), cell{}, cell{}), nil
	}
	for len(row) < n-2 {
		row = append(row, cell{})
	}
	return append(row, valueCell(int64(c.Erasure.Records)), valueCell(c.Erasure.Reason)), nil
}

// tableHorizon returns t's retention horizon (0 when never vacuumed).
func tableHorizon(db *store.DB, t *store.Table) (int64, error) {
	s, err := db.Snapshot()
	if err != nil {
		return 0, err
	}
	defer s.Close()
	return s.Horizon(t)
}

// parseSince parses --since: a transaction time, or 0 / beginning for all.
func parseSince(s string) (int64, error) {
	switch strings.TrimSpace(s) {
	case "0", "beginning":
		return 0, nil
	}
	return parseTx(s)
}
