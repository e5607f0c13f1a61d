package cli

import (
	"fmt"

	"github.com/bitempo/bitempo/store"
	"github.com/spf13/cobra"
)

func (a *app) verifyCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "verify",
		Short: "Check every invariant of the store; exit 1 with a report if one is broken",
		Long: `Check the store's invariants over one consistent snapshot: valid and
transaction periods are non-empty, records alive at one transaction time never
overlap in valid time, surrogate keys are unique and name one key, transaction
times increase, and every index (current state, sk index, transaction log, the
events of changes tables) agrees with the records. Prints the report; exits 0 when
the store is clean and 1 when it is not. It reads the store key by key;
except for the group index of grouped tables, it holds about 80 bytes per record at
most, not the records.`,
		Example: `  bitempo verify --db ./bitempo.db`,
		Args:    argsRange(0, 0, "no arguments"),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			return a.withStore(true, a.verify)
		}),
	}
}

// verify checks db's invariants and prints the report; a store that is not
// clean is an error (exit status 1).
func (a *app) verify(db *store.DB) error {
	rep, err := store.Verify(db)
	if err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "%s: %s\n", a.db, rep)
	if !rep.OK() {
		return fmt.Errorf("verify: %s has %d problems (report above)", a.db, len(rep.Problems))
	}
	return nil
}
