package cli

import (
	"fmt"
	"strings"

	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
	"github.com/spf13/cobra"
)

// This file holds alter, which changes a table's column declaration in one
// transaction (txn's AddColumn and WidenColumn): the change takes effect at
// that transaction time, and reads as of earlier times see the declaration
// of their time. Stored versions are never rewritten.

func (a *app) alterCmd() *cobra.Command {
	var adds, widens []string
	cmd := &cobra.Command{
		Use:   "alter NAME --add-column COL:TYPE | --widen COL:TYPE",
		Short: "Add a declared column or widen one, in one transaction",
		Long: `Change a table's column declaration in one transaction. --add-column COL:TYPE
declares a new nullable column (versions stored before read null; an attribute
the table already holds may be declared only with the type it established).
--widen COL:TYPE changes a declared column's type to a wider one without
changing any stored value: int64 to decimal(P,S), or decimal(P,S) to one with
no fewer integer digits and no smaller scale. Values stored before the change
read as the new type. Both flags may be repeated; all the changes commit at one
transaction time, or none does. bitempo describe shows the declaration and its
history.`,
		Example: `  bitempo alter prices --add-column 'discount:decimal(10,2)'
  bitempo alter prices --widen 'price:decimal(12,2)'`,
		Args: argsRange(1, 1, "a table NAME"),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			if len(adds) == 0 && len(widens) == 0 {
				return usagef("alter: give --add-column COL:TYPE or --widen COL:TYPE")
			}
			addCols, err := alterColumns("--add-column", adds)
			if err != nil {
				return err
			}
			widenCols, err := alterColumns("--widen", widens)
			if err != nil {
				return err
			}
			for _, c := range addCols {
				if !c.Nullable {
					return usagef("alter %s: --add-column %s: an added column must be nullable (the versions already stored have no value of it)", args[0], c)
				}
			}
			return a.withStore(false, func(db *store.DB) error {
				t, err := a.table(db, args[0])
				if err != nil {
					return err
				}
				var changes []string
				c, err := txn.Update(db, func(tx *txn.Tx) error {
					changes = changes[:0]
					for _, col := range addCols {
						if err := tx.AddColumn(t.Name, col); err != nil {
							return fmt.Errorf("alter %s: add column %s: %w", t.Name, col, err)
						}
						changes = append(changes, "added "+col.Name+" "+col.Type.String())
					}
					for _, col := range widenCols {
						from, _ := t.Column(col.Name)
						if err := tx.WidenColumn(t.Name, col.Name, col.Type); err != nil {
							return fmt.Errorf("alter %s: widen column %s to %s: %w", t.Name, col.Name, col.Type, err)
						}
						changes = append(changes, fmt.Sprintf("widened %s from %s to %s", col.Name, from.Type, col.Type))
					}
					return nil
				})
				if err != nil {
					return err
				}
				fmt.Fprintf(a.stdout, "altered table %s: %s; tx %s\n", t.Name, strings.Join(changes, ", "), formatInstant(c.Tx))
				return nil
			})
		}),
	}
	cmd.Flags().StringArrayVar(&adds, "add-column", nil, "declare a new nullable column, COL:TYPE (repeatable)")
	cmd.Flags().StringArrayVar(&widens, "widen", nil, "widen a declared column, COL:TYPE (int64 to decimal, decimal to more digits; repeatable)")
	return cmd
}

// alterColumns parses the COL:TYPE values of one alter flag.
func alterColumns(flag string, specs []string) ([]store.Column, error) {
	var out []store.Column
	for _, spec := range specs {
		cols, err := store.ParseColumns(spec)
		if err != nil {
			return nil, usagef("alter: %s %q: %s", flag, spec, clean(err))
		}
		out = append(out, cols...)
	}
	return out, nil
}
