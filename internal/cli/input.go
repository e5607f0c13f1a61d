package cli

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// absent marks a JSONL field that a line does not have (as opposed to null).
type absentField struct{}

var absent any = absentField{}

// input is a whole CSV or JSONL file, read into memory: loads validate every row
// before they commit anything, and the content hash names a CDC batch.
type input struct {
	name string // for messages: the path, or "stdin"
	data []byte
	cols []string
	rows []inputRow
	// bad holds the rows that could not even be split into fields (a CSV line
	// with the wrong number of fields, a JSONL line that is not an object).
	bad []*rowError
	// isJSON: values are JSON values (decoded with UseNumber), not strings.
	isJSON bool
	// parquet describes the columns of a Parquet file (whose values are read
	// as JSON values, see parquet.go); nil for CSV and JSONL.
	parquet []pqReadColumn
	// isParquet: a streamed load reads the file as Parquet (load_stream.go).
	isParquet bool
	// stats sums up each column's values for type inference when the file is
	// streamed rather than held (load_stream.go); nil when rows holds the file.
	stats []colStats
}

type inputRow struct {
	line int
	vals []any // by column; CSV: string; JSONL: a JSON value or absent
}

// rowError is a row that does not fit: file, line, column and what is wrong.
type rowError struct {
	file string
	line int
	col  int // 1-based column number; 0 when the whole row is wrong
	name string
	err  error
}

func (e *rowError) Error() string {
	if e.col == 0 && e.name == "" {
		return fmt.Sprintf("%s line %d: %v", e.file, e.line, e.err)
	}
	if e.col == 0 {
		return fmt.Sprintf("%s line %d, column %q: %v", e.file, e.line, e.name, e.err)
	}
	return fmt.Sprintf("%s line %d, column %d (%s): %v", e.file, e.line, e.col, e.name, e.err)
}

func (e *rowError) Unwrap() error { return e.err }

// inputFormat picks csv, jsonl or parquet from --format or the file's extension.
func inputFormat(flag, path string) (string, error) {
	switch flag {
	case "csv", "jsonl", "parquet":
		return flag, nil
	case "json", "ndjson":
		return "jsonl", nil
	case "":
	default:
		return "", usagef("unknown input format %q (want csv, jsonl or parquet)", flag)
	}
	if path == "-" {
		return "csv", nil
	}
	switch strings.ToLower(filepath.Ext(path)) {
	case ".csv":
		return "csv", nil
	case ".jsonl", ".ndjson", ".json":
		return "jsonl", nil
	case ".parquet", ".pq":
		return "parquet", nil
	}
	return "", usagef("cannot tell the format of %s from its extension; give --format csv, jsonl or parquet", path)
}

// readInput reads a whole CSV or JSONL file ("-" is stdin).
func readInput(path, format string, stdin io.Reader) (*input, error) {
	return readInputAs(path, path, format, stdin)
}

// readInputAs is readInput naming the file name in messages (a spooled
// stdin's copy is "stdin").
func readInputAs(path, name, format string, stdin io.Reader) (*input, error) {
	in := &input{name: name}
	var err error
	if path == "-" {
		in.name = "stdin"
		in.data, err = io.ReadAll(stdin)
	} else {
		in.data, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", in.name, err)
	}
	if format == "parquet" {
		return readParquetInput(in.name, in.data)
	}
	if format == "jsonl" {
		in.isJSON = true
		return in, in.parseJSONL()
	}
	return in, in.parseCSV()
}

func (in *input) parseCSV() error {
	data := bytes.TrimPrefix(in.data, []byte("\xef\xbb\xbf"))
	if bytes.HasPrefix(bytes.TrimSpace(data), []byte("{")) {
		return usagef("%s: the first line starts with '{': it looks like JSON lines, not CSV; give --format jsonl (CSV is the default for stdin and .csv files)", in.name)
	}
	return in.scanCSV(bytes.NewReader(data), bytes.NewReader(data), func(r inputRow) error {
		in.rows = append(in.rows, r)
		return nil
	})
}

// scanCSV reads CSV from src, a header line first, and hands each row that
// splits into fields to emit, in file order; rows that do not are added to
// in.bad. An error from emit stops the scan and is returned. raw reads the
// same bytes as src from their start: a quoting error reads its record again
// from there to name the field its quote opened in.
func (in *input) scanCSV(src io.Reader, raw io.ReaderAt, emit func(inputRow) error) error {
	r := csv.NewReader(src)
	header, err := r.Read()
	if err == io.EOF {
		return fmt.Errorf("%s: empty file, want a header line", in.name)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", in.name, err)
	}
	for i, h := range header {
		if at := invalidUTF8(h); at >= 0 {
			return &rowError{file: in.name, line: 1, col: i + 1, err: fmt.Errorf("invalid UTF-8 in the header at byte %d of the cell", at+1)}
		}
		in.cols = append(in.cols, strings.TrimSpace(h))
	}
	if err := in.checkHeader(); err != nil {
		return err
	}
	r.FieldsPerRecord = len(header)
	for {
		recStart := r.InputOffset()
		rec, err := r.Read()
		if err == io.EOF {
			return nil
		}
		var pe *csv.ParseError
		if errors.As(err, &pe) && errors.Is(pe.Err, csv.ErrFieldCount) {
			in.bad = append(in.bad, &rowError{file: in.name, line: pe.StartLine,
				err: fmt.Errorf("%d fields, the header has %d", len(rec), len(header))})
			continue
		}
		if errors.As(err, &pe) {
			return in.quoteError(raw, recStart, pe)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", in.name, err)
		}
		line, _ := r.FieldPos(0)
		vals := make([]any, len(rec))
		var bad *rowError
		for i, s := range rec {
			if at := invalidUTF8(s); at >= 0 && bad == nil {
				fline, _ := r.FieldPos(i)
				bad = &rowError{file: in.name, line: fline, col: i + 1, name: in.cols[i],
					err: fmt.Errorf("invalid UTF-8 (byte 0x%02x at byte %d of the cell); bitempo stores text as UTF-8: convert the file (e.g. iconv -f LATIN1 -t UTF-8)", s[at], at+1)}
			}
			vals[i] = s
		}
		if bad != nil {
			in.bad = append(in.bad, bad)
			continue
		}
		if err := emit(inputRow{line: line, vals: vals}); err != nil {
			return err
		}
	}
}

// quoteError describes a CSV record that does not parse (a quote left open,
// or a stray quote), read again from its start at offset off of raw: the line
// and the column of the field the faulty quote is in. encoding/csv gives only
// the byte where it gave up, which for a quote left open is the end of the file.
func (in *input) quoteError(raw io.ReaderAt, off int64, pe *csv.ParseError) error {
	fallback := &rowError{file: in.name, line: pe.Line, err: fmt.Errorf("%v (at byte %d of the line)", pe.Err, pe.Column)}
	if raw == nil {
		return fallback
	}
	br := bufio.NewReader(io.NewSectionReader(raw, off, 1<<62))
	at := func(line, field int, err error) error {
		if field < len(in.cols) {
			return &rowError{file: in.name, line: line, col: field + 1, name: in.cols[field], err: err}
		}
		return &rowError{file: in.name, line: line, err: err}
	}
	line, field := pe.StartLine, 0
	// Blank lines before the record are skipped by encoding/csv, and not
	// counted in StartLine's record.
	for {
		b, err := br.ReadByte()
		if err != nil {
			return fallback
		}
		if b != '\n' && b != '\r' {
			_ = br.UnreadByte()
			break
		}
	}
	for {
		b, err := br.ReadByte()
		if err != nil {
			return fallback
		}
		if b != '"' { // an unquoted field: up to a comma or the end of the line
			for b != ',' && b != '\n' {
				if b == '"' {
					return at(line, field, errors.New(`a quote inside an unquoted field: quote the whole field ("a ""b"" c")`))
				}
				if b, err = br.ReadByte(); err != nil {
					return fallback
				}
			}
			if b == '\n' {
				return fallback // the record ended without the error
			}
			field++
			continue
		}
		open := line
		for { // a quoted field
			b, err := br.ReadByte()
			if err != nil {
				if field < len(in.cols) {
					return at(open, field, fmt.Errorf("unterminated quoted field starting on line %d: its closing quote never comes", open))
				}
				return at(open, field, fmt.Errorf("unterminated quoted field starting on line %d", open))
			}
			if b == '\n' {
				line++
			}
			if b != '"' {
				continue
			}
			next, err := br.ReadByte()
			if err != nil {
				return fallback
			}
			if next == '"' {
				continue
			}
			if next == ',' {
				break
			}
			if next == '\n' || next == '\r' {
				return fallback
			}
			return at(line, field, errors.New(`text after the closing quote of a quoted field: double a quote inside a quoted field ("a ""b"" c")`))
		}
		field++
	}
}

func (in *input) checkHeader() error {
	seen := map[string]bool{}
	for i, c := range in.cols {
		if c == "" {
			return fmt.Errorf("%s line 1: column %d has no name", in.name, i+1)
		}
		if seen[c] {
			return fmt.Errorf("%s line 1: column %q appears twice", in.name, c)
		}
		seen[c] = true
	}
	return nil
}

// parseJSONL reads one JSON object per line; the columns are the union of the
// objects' fields in the order they first appear.
func (in *input) parseJSONL() error {
	err := in.scanJSONL(bytes.NewReader(in.data), func(r inputRow) error {
		in.rows = append(in.rows, r)
		return nil
	})
	if err != nil {
		return err
	}
	for i := range in.rows { // rows read before a column appeared lack it
		in.rows[i].pad(len(in.cols))
	}
	return nil
}

// pad gives a JSONL row read before some columns appeared those columns, absent.
func (r *inputRow) pad(cols int) {
	for len(r.vals) < cols {
		r.vals = append(r.vals, absent)
	}
}

// scanJSONL reads JSON lines from src and hands each object to emit, in file
// order, with the columns seen so far (pad gives it the later ones); lines that
// are not objects are added to in.bad. An error from emit stops the scan.
func (in *input) scanJSONL(src io.Reader, emit func(inputRow) error) error {
	sc := bufio.NewScanner(src)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	index := map[string]int{}
	for i, name := range in.cols { // a second pass over the file knows them all
		index[name] = i
	}
	for line := 1; sc.Scan(); line++ {
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		if at := invalidUTF8(string(text)); at >= 0 {
			in.bad = append(in.bad, &rowError{file: in.name, line: line,
				err: fmt.Errorf("invalid UTF-8 (byte 0x%02x at byte %d of the line); JSON text must be UTF-8", text[at], at+1)})
			continue
		}
		names, values, err := decodeObject(text)
		if err != nil {
			in.bad = append(in.bad, &rowError{file: in.name, line: line, err: err})
			continue
		}
		vals := make([]any, len(in.cols), len(in.cols)+len(names))
		for i := range vals {
			vals[i] = absent
		}
		for i, name := range names {
			j, ok := index[name]
			if !ok {
				j = len(in.cols)
				index[name] = j
				in.cols = append(in.cols, name)
				vals = append(vals, absent)
			}
			vals[j] = values[i]
		}
		if err := emit(inputRow{line: line, vals: vals}); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: %w", in.name, err)
	}
	return nil
}

// decodeObject decodes one JSON object, keeping its field order.
func decodeObject(text []byte) ([]string, []any, error) {
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, nil, fmt.Errorf("not a JSON object")
	}
	var names []string
	var values []any
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, fmt.Errorf("invalid JSON: %v", err)
		}
		name, _ := tok.(string)
		if seen[name] {
			return nil, nil, fmt.Errorf("field %q appears twice", name)
		}
		seen[name] = true
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, nil, fmt.Errorf("invalid JSON: %v", err)
		}
		names = append(names, name)
		values = append(values, v)
	}
	if _, err := dec.Token(); err != nil {
		return nil, nil, fmt.Errorf("invalid JSON: %v", err)
	}
	if dec.More() {
		return nil, nil, fmt.Errorf("invalid JSON: more than one value on the line")
	}
	return names, values, nil
}

// invalidUTF8 returns the offset of the first byte of s that is not valid
// UTF-8, or -1. Input text must be UTF-8: a cell that is not fails with its
// line and column (docs/design/load-utf8.md).
func invalidUTF8(s string) int {
	if utf8.ValidString(s) {
		return -1
	}
	for i, r := range s {
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(s[i:]); size == 1 {
				return i
			}
		}
	}
	return -1
}

// column returns the index of a named column, or an error naming the file.
func (in *input) column(name, role string) (int, error) {
	for i, c := range in.cols {
		if c == name {
			return i, nil
		}
	}
	return -1, fmt.Errorf("%s has no column %q (%s); its columns are: %s", in.name, name, role, strings.Join(in.cols, ", "))
}

// text returns a cell as text: CSV cells as they are, JSON values rendered.
func (in *input) text(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	if v == absent {
		return ""
	}
	return jsonText(v)
}

// cellErr builds the error of a cell.
func (in *input) cellErr(r *inputRow, col int, err error) *rowError {
	e := &rowError{file: in.name, line: r.line, name: in.cols[col], err: err}
	if !in.isJSON {
		e.col = col + 1
	}
	return e
}
