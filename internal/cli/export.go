package cli

import (
	"encoding/csv"
	"fmt"
	"io"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/store"
	"github.com/spf13/cobra"
)

// exportFlags are the flags of export.
type exportFlags struct {
	valid, tx string
	history   bool
	all       bool
	format    string
	out       string
}

func (a *app) exportCmd() *cobra.Command {
	var ef exportFlags
	cmd := &cobra.Command{
		Use:   "export NAME [--valid T] [--tx T] [--history] [--format parquet|csv|json] [-o FILE] | export --all --history -o DIR",
		Short: "Write a table's versions to Parquet, CSV or JSON, or the whole store's history to a directory",
		Long: `Write the versions of table NAME to a file (-o FILE) or stdout.

Without --history: the versions in effect as known at --tx (default: the latest
commit), over all valid time, or only those covering --valid when it is given.
Columns as scan prints them: the key columns, valid_from, valid_to, sk, then the
attributes in the order the table first saw them.
With --history: every record the table ever held, current and retired, with
tx_from and tx_to after valid_to, in key order, then by valid_from and tx_from.

The format is --format, else the extension of -o (.parquet, .csv, .json or
.jsonl), else CSV on stdout. CSV and JSON are written as scan writes them (an
open end is empty / null). Parquet columns are typed: key columns by key type
(STRING, BYTE_ARRAY, INT64, UINT64), valid times as TIMESTAMP(MICROS, UTC) on a
time axis, DATE on a date axis and INT64 on an int axis, transaction times as
TIMESTAMP(MICROS, UTC), sk as UINT64, and an open end as null. An attribute is
INT64, DOUBLE, BOOLEAN, STRING, BYTE_ARRAY or TIMESTAMP by the type of its values (UINT64
when it holds integers above the int64 range and no negative ones); an
attribute whose values have several types (say integers in some versions and
strings in others) is written as a STRING column holding the values as CSV
shows them, and export says so on stderr. Rows are streamed: memory stays
bounded by one Parquet row group (131,072 rows) whatever the table's size; a
Parquet export reads the table twice, once to type the attribute columns.

The file appears only when the export is complete (it is written beside -o
under a temporary name and renamed), so a failed export leaves nothing behind.

export --all --history -o DIR writes the whole store in bitempo's full-fidelity
export format (docs/export-format.md: manifest.json plus JSON-lines files):
every table's definition and attribute order, every record with both periods
and its sk, a changes table's events, checkpoints and applied batch ids, and the
last transaction time, from one consistent snapshot. bitempo import DIR --db NEW
rebuilds the store from it, also under another bitempo format version. DIR must
not exist or be empty; a failed export removes it.`,
		Example: `  bitempo export customers -o customers.parquet
  bitempo export customers --valid 2024-03-12 --tx 2024-05-01T00:00:00Z --format json
  bitempo export customers --history -o customers-history.parquet
  bitempo export --all --history -o ./export-2024-06-01`,
		Args: argsRange(0, 1, "a table NAME"),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			if ef.all {
				if len(args) != 0 {
					return usagef("export --all exports every table; give no NAME")
				}
				if !ef.history || ef.out == "" || ef.valid != "" || ef.tx != "" || ef.format != "" {
					return usagef("export --all takes --history and -o DIR only (a full-fidelity export is the whole history)")
				}
				return a.exportAll(ef.out)
			}
			if len(args) != 1 {
				return usagef("export: want a table NAME (or --all --history -o DIR)")
			}
			return a.exportTable(args[0], &ef)
		}),
	}
	f := cmd.Flags()
	f.StringVar(&ef.valid, "valid", "", "only the versions covering this valid time (default: all valid time)")
	f.StringVar(&ef.tx, "tx", "", "transaction time: the versions as known then (default: the latest commit)")
	f.BoolVar(&ef.history, "history", false, "every record ever held, with tx_from and tx_to")
	f.StringVar(&ef.format, "format", "", "parquet, csv or json (default: from -o's extension, else csv)")
	f.BoolVar(&ef.all, "all", false, "every table, in the full-fidelity export format (with --history -o DIR)")
	f.StringVarP(&ef.out, "output", "o", "", "the file to write (default: stdout); with --all, the directory")
	return cmd
}

// exportFormat picks the format from the flag or the file's extension.
func exportFormat(flag, path string) (string, error) {
	switch flag {
	case "parquet", "csv", "json":
		return flag, nil
	case "jsonl":
		return "json", nil
	case "":
	default:
		return "", usagef("unknown --format %q (want parquet, csv or json)", flag)
	}
	switch strings.ToLower(filepath.Ext(path)) {
	case ".parquet", ".pq":
		return "parquet", nil
	case ".json", ".jsonl", ".ndjson":
		return "json", nil
	}
	return "csv", nil
}

func (a *app) exportTable(name string, ef *exportFlags) error {
	format, err := exportFormat(ef.format, ef.out)
	if err != nil {
		return err
	}
	if ef.history && (ef.valid != "" || ef.tx != "") {
		return usagef("export --history writes every record; --valid and --tx select versions and do not go with it")
	}
	tx, err := parseTx(ef.tx)
	if err != nil {
		return usagef("--tx: %v", err)
	}
	db, t, err := a.openTable(name)
	if err != nil {
		return err
	}
	defer db.Close()
	var valid int64
	hasValid := ef.valid != ""
	if hasValid {
		if valid, err = parseAxisValue(t.Axis, ef.valid); err != nil {
			return usagef("--valid: %v", err)
		}
	}
	s, err := db.Snapshot()
	if err != nil {
		return err
	}
	defer s.Close()
	if tx == 0 {
		tx = s.LastTx()
	}
	source := func() iter.Seq2[store.Version, error] {
		switch {
		case ef.history:
			return s.Records(t)
		case hasValid:
			return s.ScanAt(t, store.Span{}, valid, tx)
		}
		return s.ScanHistory(t, store.Span{}, tx, store.NegInfinity, store.Infinity, nil)
	}
	ex := &tableExport{t: t, attrs: db.AttrNames(t), history: ef.history}
	return a.writeOutput(ef.out, func(w io.Writer) error {
		if format == "parquet" {
			return ex.parquet(a, w, source)
		}
		var rw rowWriter = &jsonWriter{w: w}
		if format == "csv" {
			rw = &csvWriter{w: csv.NewWriter(w)}
		}
		return ex.rows(rw, source())
	})
}

// writeOutput runs write on the file path (writeFileWhole), or on stdout when
// path is empty or "-".
func (a *app) writeOutput(path string, write func(io.Writer) error) error {
	if path == "" || path == "-" {
		return write(a.stdout)
	}
	return writeFileWhole(path, write)
}

// writeFileWhole runs write on a temporary file in path's directory and renames
// it to path when write succeeds, so a failed write leaves no file and an
// existing one untouched.
func writeFileWhole(path string, write func(io.Writer) error) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	err = write(f)
	if err == nil {
		err = f.Chmod(0o644) // CreateTemp's 0600 is for the unfinished file
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		_ = os.Remove(f.Name())
	}
	return err
}

// tableExport lays out the versions of one table.
type tableExport struct {
	t       *store.Table
	attrs   []string
	history bool
}

func (ex *tableExport) header() []string {
	var cols []string
	for _, k := range ex.t.Key {
		cols = append(cols, k.Name)
	}
	cols = append(cols, "valid_from", "valid_to")
	if ex.history {
		cols = append(cols, "tx_from", "tx_to")
	}
	cols = append(cols, "sk")
	return append(cols, ex.attrs...)
}

func (ex *tableExport) rows(w rowWriter, versions iter.Seq2[store.Version, error]) error {
	if err := w.header(ex.header()); err != nil {
		return err
	}
	for v, err := range versions {
		if err != nil {
			return err
		}
		cells := make([]cell, 0, len(ex.t.Key)+5+len(ex.attrs))
		for _, k := range v.Key {
			cells = append(cells, valueCell(k))
		}
		cells = append(cells, validCell(ex.t.Axis, v.ValidFrom), validCell(ex.t.Axis, v.ValidTo))
		if ex.history {
			cells = append(cells, txCell(v.TxFrom), txCell(v.TxTo))
		}
		cells = append(cells, valueCell(v.SK))
		for _, name := range ex.attrs {
			cells = append(cells, attrCell(ex.t, name, v.Attrs[name]))
		}
		if err := w.row(cells); err != nil {
			return err
		}
	}
	return w.close()
}

// attrKinds are the value types an attribute was seen with.
type attrKinds struct {
	ints, negInts, bigUints, floats, bools, strings, bytes, times, decimals bool
	// digits and scale: the most integer digits and the largest scale of
	// the decimal values.
	intDigits, scale int
}

func (k *attrKinds) see(v any) {
	switch x := v.(type) {
	case int64:
		k.ints = true
		k.negInts = k.negInts || x < 0
	case uint64:
		k.bigUints = true
	case float64:
		k.floats = true
	case bool:
		k.bools = true
	case string:
		k.strings = true
	case []byte:
		k.bytes = true
	case time.Time: // time attributes, where the store holds them
		k.times = true
	case encoding.Decimal:
		k.decimals = true
		k.intDigits = max(k.intDigits, x.Digits()-x.Scale())
		k.scale = max(k.scale, x.Scale())
	case nil:
	default:
		k.strings, k.bytes = true, true // an unknown type: a string column
	}
}

// kind is the Parquet type of the attribute, and whether its values have several
// types (written as text in a STRING column).
func (k *attrKinds) kind() (pqKind, bool) {
	n := 0
	for _, b := range []bool{k.ints || k.bigUints, k.floats, k.bools, k.strings, k.bytes, k.times, k.decimals} {
		if b {
			n++
		}
	}
	switch {
	case n == 0:
		return pqString, false
	case n > 1 || (k.bigUints && k.negInts):
		return pqString, true
	case k.bigUints:
		return pqUint64, false
	case k.ints:
		return pqInt64, false
	case k.floats:
		return pqDouble, false
	case k.bools:
		return pqBool, false
	case k.bytes:
		return pqBytes, false
	case k.times:
		return pqTimestamp, false
	case k.decimals:
		return pqDecimal, false
	}
	return pqString, false
}

// column is the Parquet column of attribute name of table t: a declared
// decimal column is a DECIMAL of its precision and scale and a date column a
// DATE; an undeclared attribute takes the kind of its values (decimals: the
// largest scale they have, with room for their integer digits).
func (k *attrKinds) column(t *store.Table, name string) (pqColumn, bool) {
	kind, several := k.kind()
	c := pqColumn{name: name, kind: kind}
	if several {
		return c, true
	}
	decl, declared := t.Column(name)
	switch {
	case declared && decl.Type.Kind == store.TypeDecimal:
		c.kind, c.precision, c.scale = pqDecimal, int(decl.Type.Precision), int(decl.Type.Scale)
	case declared && decl.Type.Kind == store.TypeDate && kind == pqTimestamp:
		c.kind = pqDate
	case kind == pqDecimal:
		c.precision, c.scale = min(k.intDigits+k.scale, encoding.MaxDecimalDigits), k.scale
		c.precision = max(c.precision, 1)
		if k.intDigits+k.scale > encoding.MaxDecimalDigits {
			c.kind = pqString // no one DECIMAL type holds them all: text
			return c, true
		}
	}
	return c, false
}

func (ex *tableExport) parquet(a *app, w io.Writer, source func() iter.Seq2[store.Version, error]) error {
	kinds := make(map[string]*attrKinds, len(ex.attrs))
	for _, name := range ex.attrs {
		kinds[name] = &attrKinds{}
	}
	for v, err := range source() {
		if err != nil {
			return err
		}
		for _, name := range ex.attrs {
			kinds[name].see(ex.t.ConformValue(name, v.Attrs[name]))
		}
	}
	var cols []pqColumn
	for _, k := range ex.t.Key {
		cols = append(cols, pqColumn{name: k.Name, kind: pqKeyKind(k.Type)})
	}
	axis := pqAxisKind(ex.t.Axis)
	cols = append(cols, pqColumn{name: "valid_from", kind: axis}, pqColumn{name: "valid_to", kind: axis})
	if ex.history {
		cols = append(cols, pqColumn{name: "tx_from", kind: pqTimestamp}, pqColumn{name: "tx_to", kind: pqTimestamp})
	}
	cols = append(cols, pqColumn{name: "sk", kind: pqUint64})
	var mixed []string
	for _, name := range ex.attrs {
		col, several := kinds[name].column(ex.t, name)
		if several {
			mixed = append(mixed, name)
		}
		cols = append(cols, col)
	}
	if len(mixed) > 0 && !a.quiet {
		fmt.Fprintf(a.stderr, "bitempo: attributes %s hold values of several types; written as STRING columns\n", strings.Join(mixed, ", "))
	}
	sink, err := newParquetSink(w, cols)
	if err != nil {
		return fmt.Errorf("export %s: %w", ex.t.Name, err)
	}
	open := func(t int64) any {
		if t == store.Infinity || t == store.NegInfinity {
			return nil
		}
		return t
	}
	vals := make([]any, len(cols))
	for v, err := range source() {
		if err != nil {
			return err
		}
		vals = vals[:0]
		for _, k := range v.Key {
			vals = append(vals, k)
		}
		vals = append(vals, open(v.ValidFrom), open(v.ValidTo))
		if ex.history {
			vals = append(vals, open(v.TxFrom), open(v.TxTo))
		}
		vals = append(vals, v.SK)
		for _, name := range ex.attrs {
			x := ex.t.ConformValue(name, v.Attrs[name])
			if x != nil && slices.Contains(mixed, name) {
				x = valueCell(x).text
			} else if tm, ok := x.(time.Time); ok {
				x = tm.UnixMicro()
			}
			vals = append(vals, x)
		}
		if err := sink.add(vals); err != nil {
			return fmt.Errorf("export %s: key %s: %w", ex.t.Name, v.Key, err)
		}
	}
	if err := sink.close(); err != nil {
		return fmt.Errorf("export %s: %w", ex.t.Name, err)
	}
	return nil
}

// registerFile adds -o FILE to a command that prints rows: the rows go to FILE
// in the format of --format or of FILE's extension (.parquet, .csv, .json).
func (o *outputFlags) registerFile(cmd *cobra.Command) {
	cmd.Flags().StringVarP(&o.path, "output", "o", "", "write the rows to this file (.parquet, .csv or .json; default: stdout)")
	if f := cmd.Flags().Lookup("format"); f != nil {
		f.Usage = "output format: table, csv or json, or parquet with -o (default: from -o's extension; else table on a terminal, csv otherwise)"
	}
}

// fileWriter returns the row writer of -o FILE. The file is created under a
// temporary name when the rows are complete (Parquet) or when the header is
// written (CSV, JSON), and renamed to FILE by close; a command that fails
// before that leaves no file.
func (o *outputFlags) fileWriter() (rowWriter, error) {
	format, err := exportFormat(o.format, o.path)
	if err != nil {
		return nil, usagef("unknown --format %q with -o (want parquet, csv or json)", o.format)
	}
	ff := &fileRows{path: o.path}
	if format == "parquet" {
		return &parquetRows{open: ff.create}, nil
	}
	ff.format = format
	return ff, nil
}

// fileRows writes CSV or JSON rows to a file that it creates with the header.
type fileRows struct {
	path, format string
	f            *os.File
	rw           rowWriter
}

// create opens the temporary file; close renames it into place.
func (ff *fileRows) create() (io.WriteCloser, error) {
	f, err := os.CreateTemp(filepath.Dir(ff.path), "."+filepath.Base(ff.path)+".tmp-*")
	if err != nil {
		return nil, err
	}
	ff.f = f
	return ff, nil
}

func (ff *fileRows) Write(p []byte) (int, error) { return ff.f.Write(p) }

// Close closes the file and renames it into place, or removes it after an
// error.
func (ff *fileRows) Close() error {
	err := ff.f.Chmod(0o644) // CreateTemp's 0600 is for the unfinished file
	if cerr := ff.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(ff.f.Name(), ff.path)
	}
	if err != nil {
		_ = os.Remove(ff.f.Name())
	}
	return err
}

func (ff *fileRows) header(cols []string) error {
	if _, err := ff.create(); err != nil {
		return err
	}
	ff.rw = &jsonWriter{w: ff.f}
	if ff.format == "csv" {
		ff.rw = &csvWriter{w: csv.NewWriter(ff.f)}
	}
	return ff.rw.header(cols)
}

func (ff *fileRows) row(cells []cell) error { return ff.rw.row(cells) }

func (ff *fileRows) close() error {
	if ff.rw == nil {
		return nil
	}
	if err := ff.rw.close(); err != nil {
		_ = ff.f.Close()
		_ = os.Remove(ff.f.Name())
		return err
	}
	return ff.Close()
}
