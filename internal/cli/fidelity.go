package cli

import (
	"bufio"
	"cmp"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/store"
)

// This file writes and reads the full-fidelity export (export --all --history,
// import), specified in docs/export-format.md: a directory with manifest.json
// and, per table, JSON-lines files of records, events, checkpoints and batch ids.
//
// Decided here: the records are JSON lines, not Parquet. JSON numbers carry
// int64 and uint64 exactly (read with json.Number), every line is
// self-describing, and one attribute may hold values of several types, or be
// absent rather than null, which typed Parquet columns cannot say without side
// columns. Types JSON lacks are tagged: {"bytes": base64}, {"time": RFC 3339 in
// UTC to the microsecond}, and floats always
// carry a decimal point or an exponent ({"float": "NaN"} and ±Inf as tags).

// exportFormatName and exportFormatVersion identify the full-fidelity format.
const (
	exportFormatName    = "bitempo-export"
	exportFormatVersion = 1
)

// errExportFormat marks a full-fidelity export that cannot be imported.
var errExportFormat = errors.New("bad bitempo export")

// manifest is manifest.json.
type manifest struct {
	Format  string          `json:"format"`
	Version int             `json:"version"`
	Created string          `json:"created"`
	LastTx  int64           `json:"last_tx"`
	Tables  []manifestTable `json:"tables"`
}

// manifestTable is a table's catalog definition, attribute order, surrogate-key
// counter and files.
type manifestTable struct {
	Name        string                     `json:"name"`
	Kind        string                     `json:"kind"`
	Axis        string                     `json:"axis"`
	Key         []manifestKeyColumn        `json:"key"`
	Track       []string                   `json:"track,omitempty"`
	TrackExcept []string                   `json:"track_except,omitempty"`
	Compare     map[string]manifestCompare `json:"compare,omitempty"`
	Granularity int64                      `json:"granularity,omitempty"`
	IgnoreNulls bool                       `json:"ignore_nulls,omitempty"`
	Lateness    int64                      `json:"lateness,omitempty"`
	RetainTx    int64                      `json:"retain_tx,omitempty"`
	GroupBy     []string                   `json:"group_by,omitempty"`
	MixedTypes  bool                       `json:"mixed_types,omitempty"`
	// Declarations is the table's column declaration over transaction
	// time, oldest first (Snapshot.Declarations); the last is its current
	// one. Absent for a table that never declared a column.
	Declarations []manifestDeclaration `json:"declarations,omitempty"`
	Attrs        []string              `json:"attrs"`
	NextSK       uint64                `json:"next_sk"`
	Files        map[string]string     `json:"files"`
	Counts       map[string]int64      `json:"counts"`
}

// manifestCompare is store.CompareOptions with the format's field names.
type manifestCompare struct {
	Round    bool `json:"round,omitempty"`
	Scale    int  `json:"scale,omitempty"`
	Trim     bool `json:"trim,omitempty"`
	FoldCase bool `json:"fold_case,omitempty"`
}

// manifestDeclaration is one declaration of a table: its columns as
// store.ParseColumns reads them, whether it is strict, and the transaction
// time it took effect (0: when the table was created).
type manifestDeclaration struct {
	Since   int64  `json:"since"`
	Columns string `json:"columns"`
	Strict  bool   `json:"strict,omitempty"`
}

type manifestKeyColumn struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

// The kinds of per-table files.
var fileKinds = []string{"records", "events", "checkpoints", "batches"}

type recordLine struct {
	Key       []any          `json:"key"`
	ValidFrom *int64         `json:"valid_from"`
	ValidTo   *int64         `json:"valid_to"`
	TxFrom    int64          `json:"tx_from"`
	TxTo      *int64         `json:"tx_to"`
	SK        uint64         `json:"sk"`
	Inferred  bool           `json:"inferred,omitempty"`
	Attrs     map[string]any `json:"attrs"`
}

type eventLine struct {
	Key   []any          `json:"key"`
	At    int64          `json:"at"`
	Seq   int64          `json:"seq"`
	Op    string         `json:"op"`
	Attrs map[string]any `json:"attrs"`
}

type checkpointLine struct {
	Key     []any          `json:"key"`
	Through int64          `json:"through"`
	Open    bool           `json:"open"`
	From    int64          `json:"from"`
	Attrs   map[string]any `json:"attrs"`
}

type batchLine struct {
	ID string `json:"id"`
	Tx int64  `json:"tx"`
}

// openEnd is nil for ±∞, else a pointer to t.
func openEnd(t int64) *int64 {
	if t == store.Infinity || t == store.NegInfinity {
		return nil
	}
	return &t
}

func encodeKey(key store.Key) []any {
	out := make([]any, len(key))
	for i, c := range key {
		if b, ok := c.([]byte); ok {
			out[i] = base64.StdEncoding.EncodeToString(b)
		} else {
			out[i] = c
		}
	}
	return out
}

// encodeAttrs encodes attribute values for JSON (see the file comment). A value
// of a type this format version does not know fails the export rather than
// being written in a form that would import as another type.
func encodeAttrs(attrs store.Attrs) (map[string]any, error) {
	if attrs == nil {
		return nil, nil
	}
	out := make(map[string]any, len(attrs))
	for name, v := range attrs {
		x, err := encodeValue(v)
		if err != nil {
			return nil, fmt.Errorf("attribute %q: %w", name, err)
		}
		out[name] = x
	}
	return out, nil
}

func encodeValue(v any) (any, error) {
	switch x := v.(type) {
	case nil, bool, int64, uint64, string:
		return x, nil
	case float64:
		switch {
		case math.IsNaN(x):
			return map[string]string{"float": "NaN"}, nil
		case math.IsInf(x, 1):
			return map[string]string{"float": "+Inf"}, nil
		case math.IsInf(x, -1):
			return map[string]string{"float": "-Inf"}, nil
		}
		s := strconv.FormatFloat(x, 'g', -1, 64)
		if !strings.ContainsAny(s, ".e") {
			s += ".0"
		}
		return json.Number(s), nil
	case []byte:
		return map[string]string{"bytes": base64.StdEncoding.EncodeToString(x)}, nil
	case time.Time:
		return map[string]string{"time": x.UTC().Format(time.RFC3339Nano)}, nil
	case encoding.Decimal:
		return map[string]string{"decimal": x.String()}, nil
	}
	return nil, fmt.Errorf("a %T value, which export format version %d cannot carry", v, exportFormatVersion)
}

func decodeValue(v any) (any, error) {
	switch x := v.(type) {
	case nil, bool, string:
		return x, nil
	case json.Number:
		s := x.String()
		if strings.ContainsAny(s, ".eE") {
			return strconv.ParseFloat(s, 64)
		}
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return n, nil
		}
		return strconv.ParseUint(s, 10, 64)
	case map[string]any:
		if len(x) == 1 {
			if b, ok := x["bytes"].(string); ok {
				return base64.StdEncoding.DecodeString(b)
			}
			if f, ok := x["float"].(string); ok && (f == "NaN" || f == "+Inf" || f == "-Inf") {
				return strconv.ParseFloat(f, 64)
			}
			if tm, ok := x["time"].(string); ok {
				return time.Parse(time.RFC3339Nano, tm)
			}
			if d, ok := x["decimal"].(string); ok {
				return encoding.ParseDecimal(d)
			}
		}
	}
	return nil, fmt.Errorf("value %v is not an attribute value of this format", v)
}

func decodeAttrs(m map[string]any) (store.Attrs, error) {
	if m == nil {
		return nil, nil
	}
	out := make(store.Attrs, len(m))
	for name, v := range m {
		x, err := decodeValue(v)
		if err != nil {
			return nil, fmt.Errorf("attribute %q: %w", name, err)
		}
		out[name] = x
	}
	return out, nil
}

func decodeKey(t *store.Table, raw []any) (store.Key, error) {
	if len(raw) != len(t.Key) {
		return nil, fmt.Errorf("key has %d components, the table's key has %d", len(raw), len(t.Key))
	}
	key := make(store.Key, len(raw))
	for i, c := range t.Key {
		var err error
		switch c.Type {
		case store.String:
			s, ok := raw[i].(string)
			if !ok {
				err = fmt.Errorf("not a string")
			}
			key[i] = s
		case store.Bytes:
			s, _ := raw[i].(string)
			key[i], err = base64.StdEncoding.DecodeString(s)
		case store.Int64:
			n, _ := raw[i].(json.Number)
			key[i], err = strconv.ParseInt(n.String(), 10, 64)
		case store.Uint64:
			n, _ := raw[i].(json.Number)
			key[i], err = strconv.ParseUint(n.String(), 10, 64)
		}
		if err != nil {
			return nil, fmt.Errorf("key column %s (%s): %v is not valid: %v", c.Name, c.Type, raw[i], err)
		}
	}
	return key, nil
}

// exportAll writes the full-fidelity export of the store to dir, which must not
// exist or be empty. It is written from one snapshot; a failure removes dir.
func (a *app) exportAll(dir string) (err error) {
	if names, rerr := os.ReadDir(dir); rerr == nil && len(names) > 0 {
		return fmt.Errorf("export: %s is not empty", dir)
	}
	db, err := a.open(true)
	if err != nil {
		return err
	}
	defer db.Close()
	s, err := db.Snapshot()
	if err != nil {
		return err
	}
	defer s.Close()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = os.RemoveAll(dir)
		}
	}()
	m := manifest{Format: exportFormatName, Version: exportFormatVersion,
		Created: time.Now().UTC().Format(time.RFC3339), LastTx: s.LastTx()}
	total := map[string]int64{}
	// Tables in catalog order (by table id), so that an import, creating them in
	// this order, gives them the same ids.
	tables := db.Tables()
	slices.SortFunc(tables, func(x, y *store.Table) int { return cmp.Compare(x.ID, y.ID) })
	for i, t := range tables {
		mt := manifestOf(t.TableDef)
		if mt.Declarations, err = manifestDeclarations(s, t); err != nil {
			return fmt.Errorf("export %s: %w", t.Name, err)
		}
		mt.Attrs = db.AttrNames(t)
		if mt.Attrs == nil {
			mt.Attrs = []string{}
		}
		kinds := fileKinds[:1]
		if t.Kind == store.Changes {
			kinds = fileKinds
		}
		for _, kind := range kinds {
			file := fmt.Sprintf("%04d.%s.jsonl", i+1, kind)
			n, err := writeLines(filepath.Join(dir, file), func(emit func(any) error) error {
				return exportLines(s, t, kind, emit, &mt.NextSK)
			})
			if err != nil {
				return fmt.Errorf("export %s %s: %w", t.Name, kind, err)
			}
			mt.Files[kind], mt.Counts[kind] = file, n
			total[kind] += n
		}
		if next := s.NextSK(t); next > mt.NextSK {
			mt.NextSK = next
		}
		m.Tables = append(m.Tables, mt)
	}
	data, err := json.MarshalIndent(&m, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "manifest.json"), append(data, '\n'), 0o644); err != nil {
		return err
	}
	if !a.quiet {
		fmt.Fprintf(a.stderr, "bitempo: exported %d tables to %s: %d records, %d events, %d checkpoints, %d batch ids (last tx %s)\n",
			len(m.Tables), dir, total["records"], total["events"], total["checkpoints"], total["batches"], orNone(formatInstant(m.LastTx)))
	}
	return nil
}

// exportLines emits the lines of one file of table t.
func exportLines(s *store.Snapshot, t *store.Table, kind string, emit func(any) error, nextSK *uint64) error {
	switch kind {
	case "records":
		for v, err := range s.Records(t) {
			if err != nil {
				return err
			}
			*nextSK = max(*nextSK, v.SK+1)
			attrs, err := encodeAttrs(v.Attrs)
			if err != nil {
				return fmt.Errorf("key %s: %w", v.Key, err)
			}
			line := recordLine{Key: encodeKey(v.Key), ValidFrom: openEnd(v.ValidFrom), ValidTo: openEnd(v.ValidTo),
				TxFrom: v.TxFrom, TxTo: openEnd(v.TxTo), SK: v.SK, Inferred: v.Inferred, Attrs: attrs}
			if line.Attrs == nil {
				line.Attrs = map[string]any{}
			}
			if err := emit(&line); err != nil {
				return err
			}
		}
	case "events":
		for e, err := range s.Events(t) {
			if err != nil {
				return err
			}
			attrs, err := encodeAttrs(e.Attrs)
			if err != nil {
				return fmt.Errorf("key %s event at %d: %w", e.Key, e.At, err)
			}
			if err := emit(&eventLine{Key: encodeKey(e.Key), At: e.At, Seq: e.Seq, Op: e.Op.String(), Attrs: attrs}); err != nil {
				return err
			}
		}
	case "checkpoints":
		for c, err := range s.Checkpoints(t) {
			if err != nil {
				return err
			}
			attrs, err := encodeAttrs(c.Attrs)
			if err != nil {
				return fmt.Errorf("key %s checkpoint: %w", c.Key, err)
			}
			line := checkpointLine{Key: encodeKey(c.Key), Through: c.Through, Open: c.Open, From: c.From, Attrs: attrs}
			if err := emit(&line); err != nil {
				return err
			}
		}
	case "batches":
		for b, err := range s.Batches(t) {
			if err != nil {
				return err
			}
			if err := emit(&batchLine{ID: b.ID, Tx: b.Tx}); err != nil {
				return err
			}
		}
	}
	return nil
}

// writeLines writes one JSON value per line to path and returns the count.
func writeLines(path string, fill func(emit func(any) error) error) (int64, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	var n int64
	err = fill(func(v any) error {
		n++
		return enc.Encode(v)
	})
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return n, err
}

// readLines decodes each JSON line of path into a fresh T and passes it to fn
// with its line number, streaming.
func readLines[T any](path string, fn func(line int, v *T) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 256<<20)
	for line := 1; sc.Scan(); line++ {
		var v T
		dec := json.NewDecoder(strings.NewReader(sc.Text()))
		dec.UseNumber()
		dec.DisallowUnknownFields()
		if err := dec.Decode(&v); err != nil {
			return fmt.Errorf("%w: %s line %d: %v", errExportFormat, path, line, err)
		}
		if err := fn(line, &v); err != nil {
			return fmt.Errorf("%s line %d: %w", path, line, err)
		}
	}
	return sc.Err()
}

// readManifest reads and checks dir/manifest.json.
func readManifest(dir string) (*manifest, error) {
	data, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		return nil, fmt.Errorf("%w: %s has no manifest.json (written last by bitempo export --all --history): %v", errExportFormat, dir, err)
	}
	var m manifest
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("%w: %s/manifest.json: %v", errExportFormat, dir, err)
	}
	if m.Format != exportFormatName {
		return nil, fmt.Errorf("%w: %s/manifest.json: format %q, want %q", errExportFormat, dir, m.Format, exportFormatName)
	}
	if m.Version < 1 || m.Version > exportFormatVersion {
		return nil, fmt.Errorf("%w: %s is export format version %d; this bitempo reads version %d", errExportFormat, dir, m.Version, exportFormatVersion)
	}
	return &m, nil
}

// manifestOf is the manifest entry of a table definition, without attributes,
// counter and files.
func manifestOf(d store.TableDef) manifestTable {
	mt := manifestTable{Name: d.Name, Kind: d.Kind.String(), Axis: d.Axis.String(), Track: d.Track,
		TrackExcept: d.TrackExcept, Granularity: d.Granularity, IgnoreNulls: d.IgnoreNulls,
		Lateness: d.Lateness, RetainTx: d.RetainTx, GroupBy: d.GroupBy, MixedTypes: d.MixedTypes, NextSK: 1, Files: map[string]string{}, Counts: map[string]int64{}}
	for _, c := range d.Key {
		mt.Key = append(mt.Key, manifestKeyColumn{c.Name, c.Type.String()})
	}
	if len(d.Compare) > 0 {
		mt.Compare = map[string]manifestCompare{}
		for name, c := range d.Compare {
			mt.Compare[name] = manifestCompare(c)
		}
	}
	return mt
}

// manifestDeclarations lists table t's declarations, or none when it never
// declared a column.
func manifestDeclarations(s *store.Snapshot, t *store.Table) ([]manifestDeclaration, error) {
	decls, err := s.Declarations(t)
	if err != nil {
		return nil, err
	}
	var out []manifestDeclaration
	declared := false
	for _, d := range decls {
		declared = declared || len(d.Columns) > 0 || d.Strict
		out = append(out, manifestDeclaration{Since: d.Since, Columns: store.FormatColumns(d.Columns), Strict: d.Strict})
	}
	if !declared {
		return nil, nil
	}
	return out, nil
}

// declarations reads the declarations of a manifest table.
func (mt *manifestTable) declarations() ([]store.Declaration, error) {
	out := make([]store.Declaration, 0, len(mt.Declarations))
	for _, d := range mt.Declarations {
		var cols []store.Column
		if strings.TrimSpace(d.Columns) != "" {
			var err error
			if cols, err = store.ParseColumns(d.Columns); err != nil {
				return nil, fmt.Errorf("declaration at tx %d: %v", d.Since, err)
			}
		}
		out = append(out, store.Declaration{Columns: cols, Strict: d.Strict, Since: d.Since})
	}
	return out, nil
}

// tableDef is the catalog definition of a manifest table.
func (mt *manifestTable) tableDef() (store.TableDef, error) {
	def := store.TableDef{Name: mt.Name, Track: mt.Track, TrackExcept: mt.TrackExcept,
		Granularity: mt.Granularity, IgnoreNulls: mt.IgnoreNulls, Lateness: mt.Lateness, RetainTx: mt.RetainTx, GroupBy: mt.GroupBy,
		MixedTypes: mt.MixedTypes}
	decls, err := mt.declarations()
	if err != nil {
		return def, err
	}
	if n := len(decls); n > 0 {
		def.Columns, def.Strict = decls[n-1].Columns, decls[n-1].Strict
	}
	if len(mt.Compare) > 0 {
		def.Compare = map[string]store.CompareOptions{}
		for name, c := range mt.Compare {
			def.Compare[name] = store.CompareOptions(c)
		}
	}
	if def.Kind, err = store.ParseKind(mt.Kind); err != nil {
		return def, err
	}
	if def.Axis, err = store.ParseAxis(mt.Axis); err != nil {
		return def, err
	}
	for _, c := range mt.Key {
		typ, err := store.ParseKeyType(c.Type)
		if err != nil {
			return def, err
		}
		def.Key = append(def.Key, store.KeyColumn{Name: c.Name, Type: typ})
	}
	return def, nil
}

// importTable imports the files of one manifest table.
func importTable(dir string, im *store.Importer, t *store.Table, mt *manifestTable) error {
	file := func(kind string) string { return filepath.Join(dir, mt.Files[kind]) }
	if mt.Files["records"] == "" {
		return fmt.Errorf("%w: table %s has no records file", errExportFormat, mt.Name)
	}
	if len(mt.Declarations) > 0 {
		decls, err := mt.declarations()
		if err != nil {
			return fmt.Errorf("%w: table %s: %v", errExportFormat, mt.Name, err)
		}
		if err := im.Declarations(t, decls); err != nil {
			return err
		}
	}
	err := readLines(file("records"), func(_ int, r *recordLine) error {
		key, err := decodeKey(t, r.Key)
		if err != nil {
			return err
		}
		attrs, err := decodeAttrs(r.Attrs)
		if err != nil {
			return err
		}
		from, to, txTo := int64(store.NegInfinity), int64(store.Infinity), int64(store.Infinity)
		if r.ValidFrom != nil {
			from = *r.ValidFrom
		}
		if r.ValidTo != nil {
			to = *r.ValidTo
		}
		if r.TxTo != nil {
			txTo = *r.TxTo
		}
		return im.Record(t, key, from, to, r.TxFrom, txTo, r.SK, r.Inferred, attrs)
	})
	if err != nil {
		return err
	}
	if t.Kind == store.Changes {
		err = readOptional(file, mt, "events", func(_ int, e *eventLine) error {
			key, err := decodeKey(t, e.Key)
			if err != nil {
				return err
			}
			attrs, err := decodeAttrs(e.Attrs)
			if err != nil {
				return err
			}
			ev := store.LogEvent{At: e.At, Seq: e.Seq, Attrs: attrs}
			switch e.Op {
			case "upsert":
				ev.Op = store.EventUpsert
			case "delete":
				ev.Op = store.EventDelete
			default:
				return fmt.Errorf("%w: unknown op %q", errExportFormat, e.Op)
			}
			return im.Event(t, key, ev)
		})
		if err == nil {
			err = readOptional(file, mt, "checkpoints", func(_ int, c *checkpointLine) error {
				key, err := decodeKey(t, c.Key)
				if err != nil {
					return err
				}
				attrs, err := decodeAttrs(c.Attrs)
				if err != nil {
					return err
				}
				return im.Checkpoint(t, key, store.Checkpoint{Through: c.Through, Open: c.Open, From: c.From, Attrs: attrs})
			})
		}
		if err == nil {
			err = readOptional(file, mt, "batches", func(_ int, b *batchLine) error { return im.Batch(t, b.ID, b.Tx) })
		}
		if err != nil {
			return err
		}
	}
	return im.ReserveSK(t, mt.NextSK)
}

func readOptional[T any](file func(string) string, mt *manifestTable, kind string, fn func(int, *T) error) error {
	if mt.Files[kind] == "" {
		return nil
	}
	return readLines(file(kind), fn)
}
