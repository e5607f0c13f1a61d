package cli

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/bitempo/bitempo/store"
	"github.com/spf13/cobra"
)

func (a *app) importCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "import DIR --db NEW",
		Short: "Rebuild a store from a full-fidelity export (export --all --history)",
		Long: `Rebuild a store from the directory written by bitempo export --all --history
(docs/export-format.md): every table with its definition and attribute order,
every record with its valid and transaction periods and its sk, a changes
table's events, checkpoints and applied batch ids, and the last transaction
time. The new store's records, sks and transaction times are those of the
original (bitempo dump shows the same records), and new commits come after the
original's last one. This is also the way to move a store to another bitempo
format version: export with the old version, import with the new one.

--db names the new store, which must not exist yet (or be an empty directory).
The import streams the files, then verifies the new store; if anything fails
the new store is removed.`,
		Example: `  bitempo export --all --history -o ./export --db ./old.db
  bitempo import ./export --db ./new.db`,
		Args: argsRange(1, 1, "the export DIR"),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			return a.importDir(args[0])
		}),
	}
	return cmd
}

func (a *app) importDir(dir string) error {
	m, err := readManifest(dir)
	if err != nil {
		return err
	}
	if names, rerr := os.ReadDir(a.db); rerr == nil && len(names) > 0 {
		return fmt.Errorf("import: %s is not empty; import builds a new store", a.db)
	} else if rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
		return rerr
	}
	start := time.Now()
	db, err := a.openStore(store.Options{})
	if err != nil {
		return err
	}
	var rep *store.Report
	if err := closeAfter(db, func() (err error) {
		rep, err = rebuild(db, dir, m)
		return err
	}); err != nil {
		_ = os.RemoveAll(a.db)
		return err
	}
	if !a.quiet {
		fmt.Fprintf(a.stderr, "bitempo: imported %d tables, %d records from %s into %s in %s; verify: ok\n",
			len(m.Tables), rep.Records, dir, a.db, time.Since(start).Round(time.Millisecond))
	}
	return nil
}

// rebuild fills the new store db with the export in dir, described by m, and
// verifies it; a store that does not verify is an error.
func rebuild(db *store.DB, dir string, m *manifest) (*store.Report, error) {
	tables := make([]*store.Table, len(m.Tables))
	for i := range m.Tables {
		mt := &m.Tables[i]
		def, err := mt.tableDef()
		if err != nil {
			return nil, fmt.Errorf("%w: table %s: %v", errExportFormat, mt.Name, err)
		}
		if tables[i], err = db.CreateTable(def); err != nil {
			return nil, err
		}
		if err := db.DeclareAttrNames(tables[i], mt.Attrs); err != nil {
			return nil, err
		}
	}
	im, err := db.BeginImport()
	if err != nil {
		return nil, err
	}
	defer im.Abort()
	for i := range m.Tables {
		if err := importTable(dir, im, tables[i], &m.Tables[i]); err != nil {
			return nil, fmt.Errorf("import %s: %w", m.Tables[i].Name, err)
		}
	}
	if err := im.AdvanceTx(m.LastTx); err != nil {
		return nil, err
	}
	if err := im.Commit(); err != nil {
		return nil, err
	}
	rep, err := store.Verify(db)
	if err != nil {
		return nil, err
	}
	if !rep.OK() {
		return nil, fmt.Errorf("import: the rebuilt store does not verify, so it was removed: %s", rep)
	}
	return rep, nil
}
