package cli

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/store"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/deprecated"
	"github.com/parquet-go/parquet-go/format"
)

// This file reads and writes Parquet with github.com/parquet-go/parquet-go.
//
// Writing: every column is optional (null for null attributes and open ends) and
// typed; rows go to the library's writer, which flushes a row group to the file
// each time one fills (parquetRowGroupRows rows), so memory stays bounded by a
// row group whatever the number of rows.
//
// Reading: a Parquet file becomes the same input a JSONL file does, so load,
// resolve and backfill treat its rows alike. Each column's Parquet type decides
// its values: integers (INT32, INT64, signed or unsigned) and DECIMALs are
// numbers, FLOAT and DOUBLE are numbers written with a decimal point (so a float
// column stays float64 even when its values are whole), BOOLEAN is a bool, STRING
// (and ENUM, JSON) is a string, other byte arrays are hex text (the way bytes
// keys are written), TIMESTAMP is an RFC 3339 instant in UTC and DATE is a
// YYYY-MM-DD day; the load's type inference then gives int64 to integer columns
// and float64 to float columns without --types. Nested columns (lists, maps,
// structs) and INT96 are refused, naming the column.

// parquetRowGroupRows is the number of rows after which the writer flushes a row
// group: large enough for good compression and fast scans in DuckDB and Spark,
// small enough that a row group of a wide table stays a few tens of MB.
const parquetRowGroupRows = 128 * 1024

// errParquet marks a Parquet file that cannot be read; the message names the
// file and, where known, the column and row group.
var errParquet = errors.New("bad Parquet file")

// pqKind is the type of a Parquet column the tool writes.
type pqKind uint8

const (
	pqString    pqKind = iota
	pqBytes            // BYTE_ARRAY without annotation
	pqInt64            // INT64
	pqUint64           // INT64 annotated unsigned
	pqDouble           // DOUBLE
	pqBool             // BOOLEAN
	pqTimestamp        // INT64 TIMESTAMP(MICROS, UTC); values are microseconds
	pqDate             // INT32 DATE; values are microseconds at midnight UTC
	pqDecimal          // INT64 DECIMAL(precision, scale); values are encoding.Decimal
)

// pqColumn is a column of a Parquet file to write.
type pqColumn struct {
	name string
	kind pqKind
	// precision and scale of a pqDecimal column.
	precision, scale int
}

func (c pqColumn) node() parquet.Node {
	var n parquet.Node
	switch c.kind {
	case pqBytes:
		n = parquet.Leaf(parquet.ByteArrayType)
	case pqInt64:
		n = parquet.Int(64)
	case pqUint64:
		n = parquet.Uint(64)
	case pqDouble:
		n = parquet.Leaf(parquet.DoubleType)
	case pqBool:
		n = parquet.Leaf(parquet.BooleanType)
	case pqTimestamp:
		n = parquet.TimestampAdjusted(parquet.Microsecond, true)
	case pqDate:
		n = parquet.Date()
	case pqDecimal:
		n = parquet.Decimal(c.scale, c.precision, parquet.Int64Type)
	default:
		n = parquet.String()
	}
	return parquet.Optional(n)
}

// orderedGroup is a Parquet group whose fields keep the given order;
// parquet.Group sorts its fields by name, and the tool's columns have an order
// (key columns, times, sk, then attributes).
type orderedGroup struct {
	parquet.Group
	fields []parquet.Field
}

func (g orderedGroup) Fields() []parquet.Field { return g.fields }

func parquetSchema(cols []pqColumn) (*parquet.Schema, error) {
	g := parquet.Group{}
	for _, c := range cols {
		if _, dup := g[c.name]; dup {
			return nil, fmt.Errorf("two columns are named %q", c.name)
		}
		g[c.name] = c.node()
	}
	byName := map[string]parquet.Field{}
	for _, f := range g.Fields() {
		byName[f.Name()] = f
	}
	og := orderedGroup{Group: g}
	for _, c := range cols {
		og.fields = append(og.fields, byName[c.name])
	}
	return parquet.NewSchema("bitempo", og), nil
}

// parquetSink writes typed rows to a Parquet file.
type parquetSink struct {
	w    *parquet.GenericWriter[any]
	cols []pqColumn
	buf  []parquet.Row
}

func newParquetSink(out io.Writer, cols []pqColumn) (*parquetSink, error) {
	schema, err := parquetSchema(cols)
	if err != nil {
		return nil, err
	}
	w := parquet.NewGenericWriter[any](out, schema, parquet.MaxRowsPerRowGroup(parquetRowGroupRows),
		parquet.Compression(&parquet.Zstd), parquet.CreatedBy("bitempo", "", ""))
	return &parquetSink{w: w, cols: cols}, nil
}

// add writes one row: a value per column, nil for null. Values are string,
// []byte, int64, uint64, float64 or bool; pqTimestamp and pqDate take int64
// microseconds.
func (s *parquetSink) add(vals []any) error {
	row := make(parquet.Row, len(s.cols))
	for i, c := range s.cols {
		v, err := pqValue(c, vals[i])
		if err != nil {
			return err
		}
		def := 1
		if v.IsNull() {
			def = 0
		}
		row[i] = v.Level(0, def, i)
	}
	s.buf = append(s.buf, row)
	if len(s.buf) == cap(s.buf) && len(s.buf) >= 1024 {
		return s.flush()
	}
	return nil
}

func (s *parquetSink) flush() error {
	if len(s.buf) == 0 {
		return nil
	}
	_, err := s.w.WriteRows(s.buf)
	s.buf = s.buf[:0]
	return err
}

func (s *parquetSink) close() error {
	if err := s.flush(); err != nil {
		return err
	}
	return s.w.Close()
}

// pqValue converts a value to the column's Parquet value.
func pqValue(c pqColumn, v any) (parquet.Value, error) {
	if v == nil {
		return parquet.NullValue(), nil
	}
	bad := func() (parquet.Value, error) {
		return parquet.Value{}, fmt.Errorf("column %s: a %T value (%v) in a %s column", c.name, v, v, c.kind)
	}
	switch c.kind {
	case pqString:
		if s, ok := v.(string); ok {
			return parquet.ByteArrayValue([]byte(s)), nil
		}
	case pqBytes:
		if b, ok := v.([]byte); ok {
			return parquet.ByteArrayValue(b), nil
		}
	case pqInt64, pqTimestamp:
		if n, ok := v.(int64); ok {
			return parquet.Int64Value(n), nil
		}
	case pqUint64:
		switch n := v.(type) {
		case uint64:
			return parquet.Int64Value(int64(n)), nil
		case int64:
			if n >= 0 {
				return parquet.Int64Value(n), nil
			}
		}
	case pqDouble:
		if f, ok := v.(float64); ok {
			return parquet.DoubleValue(f), nil
		}
	case pqBool:
		if b, ok := v.(bool); ok {
			return parquet.BooleanValue(b), nil
		}
	case pqDecimal:
		if d, ok := v.(encoding.Decimal); ok {
			if r, exact := d.Rescale(c.scale); exact && r.Digits() <= c.precision {
				return parquet.Int64Value(r.Coef()), nil
			}
			return parquet.Value{}, fmt.Errorf("column %s: %s does not fit DECIMAL(%d,%d)", c.name, d, c.precision, c.scale)
		}
	case pqDate:
		if n, ok := v.(int64); ok {
			if n%dayTicks != 0 {
				return parquet.Value{}, fmt.Errorf("column %s: %s is not a whole day, which a DATE column cannot hold", c.name, formatInstant(n))
			}
			return parquet.Int32Value(int32(n / dayTicks)), nil
		}
	}
	return bad()
}

func (k pqKind) String() string {
	return [...]string{"STRING", "BYTE_ARRAY", "INT64", "UINT64", "DOUBLE", "BOOLEAN", "TIMESTAMP", "DATE", "DECIMAL"}[k]
}

// pqAxisKind is the Parquet type of valid times on an axis.
func pqAxisKind(axis store.Axis) pqKind {
	switch axis {
	case store.AxisDate:
		return pqDate
	case store.AxisInt:
		return pqInt64
	}
	return pqTimestamp
}

// pqKeyKind is the Parquet type of a key column.
func pqKeyKind(t store.KeyType) pqKind {
	switch t {
	case store.Bytes:
		return pqBytes
	case store.Int64:
		return pqInt64
	case store.Uint64:
		return pqUint64
	}
	return pqString
}

// parquetRows is a rowWriter that writes a Parquet file, for commands whose
// column types are not known up front (resolve, backfill): it keeps the rows
// until close, then types each column from its values. Those commands hold
// their whole input in memory already, so keeping the output adds no new bound.
// A column whose values are all integers is INT64 (UINT64 when one is above
// the int64 range), all numbers DOUBLE, all booleans BOOLEAN, anything else (or
// a mixture) STRING with the text CSV output would show.
type parquetRows struct {
	open func() (io.WriteCloser, error)
	cols []string
	rows [][]cell
}

func (p *parquetRows) header(cols []string) error { p.cols = cols; return nil }

func (p *parquetRows) row(cells []cell) error {
	p.rows = append(p.rows, cells)
	return nil
}

func (p *parquetRows) close() error {
	cols := make([]pqColumn, len(p.cols))
	for i, name := range p.cols {
		cols[i] = pqColumn{name: name, kind: p.inferKind(i)}
	}
	f, err := p.open()
	if err != nil {
		return err
	}
	sink, err := newParquetSink(f, cols)
	if err != nil {
		_ = f.Close()
		return err
	}
	vals := make([]any, len(cols))
	for _, r := range p.rows {
		for i, c := range r {
			vals[i] = cellValue(cols[i].kind, c)
		}
		if err := sink.add(vals); err != nil {
			_ = f.Close()
			return err
		}
	}
	return errors.Join(sink.close(), f.Close())
}

// inferKind types column i from its cells' values.
func (p *parquetRows) inferKind(i int) pqKind {
	ints, uints, nums, bools, other, any := true, false, true, true, false, false
	for _, r := range p.rows {
		v := r[i].json
		if v == nil {
			continue
		}
		any = true
		switch x := v.(type) {
		case int64, int, uint32:
			bools = false
		case uint64:
			bools = false
			uints = uints || x > math.MaxInt64
		case float64:
			ints, bools = false, false
		case json.Number:
			bools = false
			if _, err := strconv.ParseInt(x.String(), 10, 64); err != nil {
				ints = false
			}
			if _, err := strconv.ParseFloat(x.String(), 64); err != nil {
				nums = false
			}
		case bool:
			ints, nums = false, false
		default:
			other = true
		}
	}
	switch {
	case !any || other:
		return pqString
	case bools:
		return pqBool
	case ints && uints:
		return pqUint64
	case ints:
		return pqInt64
	case nums:
		return pqDouble
	}
	return pqString
}

// cellValue is the value of a cell in a column of kind k (see inferKind).
func cellValue(k pqKind, c cell) any {
	if c.json == nil {
		return nil
	}
	switch k {
	case pqInt64, pqUint64:
		switch x := c.json.(type) {
		case int64:
			return x
		case int:
			return int64(x)
		case uint32:
			return int64(x)
		case uint64:
			if k == pqUint64 {
				return x
			}
			return int64(x)
		}
		if k == pqUint64 {
			n, _ := strconv.ParseUint(c.text, 10, 64)
			return n
		}
		n, _ := strconv.ParseInt(c.text, 10, 64)
		return n
	case pqDouble:
		switch x := c.json.(type) {
		case float64:
			return x
		case int64:
			return float64(x)
		}
		f, _ := strconv.ParseFloat(c.text, 64)
		return f
	case pqBool:
		b, _ := c.json.(bool)
		return b
	}
	return c.text
}

// pqReadColumn is a column of a Parquet file being read.
type pqReadColumn struct {
	name string
	// typ describes the column's type for messages, e.g. "DOUBLE" or "TIMESTAMP(MICROS)".
	typ string
	// conv converts a non-null value to the input's representation.
	conv func(parquet.Value) (any, error)
	// keyable: integers, strings and byte arrays may be key columns.
	keyable bool
	// precision and scale of a DECIMAL column that a decimal attribute can
	// hold (precision 0 otherwise): it loads as exact decimals.
	precision, scale int
}

// readParquetInput reads a whole Parquet file into an input whose values are
// those of a JSONL file (see the file comment).
func readParquetInput(name string, data []byte) (*input, error) {
	in := &input{name: name, data: data, isJSON: true}
	err := in.scanParquet(bytes.NewReader(data), int64(len(data)), func(r inputRow) error {
		in.rows = append(in.rows, r)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return in, nil
}

// scanParquet reads a Parquet file row group by row group, setting the
// input's columns and handing each row to emit (numbered from 1, as lines
// are). Only the pages of the row group being read are in memory, so a load
// can read a file larger than memory twice (load_stream.go).
func (in *input) scanParquet(r io.ReaderAt, size int64, emit func(inputRow) error) error {
	name := in.name
	f, err := parquet.OpenFile(r, size)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", errParquet, name, err)
	}
	cols, err := parquetColumns(name, f.Schema())
	if err != nil {
		return err
	}
	in.cols = in.cols[:0]
	for _, c := range cols {
		in.cols = append(in.cols, c.name)
	}
	if err := in.checkHeader(); err != nil {
		return err
	}
	in.parquet = cols
	rowNum := 0
	buf := make([]parquet.Row, 512)
	for g, rg := range f.RowGroups() {
		rows := rg.Rows()
		for {
			n, err := rows.ReadRows(buf)
			for _, r := range buf[:n] {
				rowNum++
				vals := make([]any, len(cols))
				for _, v := range r {
					i := v.Column()
					if i < 0 || i >= len(cols) || v.IsNull() {
						continue
					}
					x, cerr := cols[i].conv(v)
					if cerr != nil {
						_ = rows.Close()
						return fmt.Errorf("%w: %s row group %d of %d, column %q, row %d: %v", errParquet, name, g+1, len(f.RowGroups()), cols[i].name, rowNum, cerr)
					}
					vals[i] = x
				}
				if err := emit(inputRow{line: rowNum, vals: vals}); err != nil {
					_ = rows.Close()
					return err
				}
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				_ = rows.Close()
				return fmt.Errorf("%w: %s row group %d of %d%s: %v", errParquet, name, g+1, len(f.RowGroups()), failingColumn(rg, cols), err)
			}
		}
		if err := rows.Close(); err != nil {
			return fmt.Errorf("%w: %s row group %d of %d: %v", errParquet, name, g+1, len(f.RowGroups()), err)
		}
	}
	return nil
}

// parquetRowCount is the number of rows a Parquet file's footer states.
func parquetRowCount(path string) (int64, error) {
	fh, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return 0, err
	}
	f, err := parquet.OpenFile(fh, st.Size())
	if err != nil {
		return 0, err
	}
	return f.NumRows(), nil
}

// failingColumn finds the column of a row group whose pages do not read, for
// the message of a read error; "" when each reads on its own.
func failingColumn(rg parquet.RowGroup, cols []pqReadColumn) string {
	vals := make([]parquet.Value, 256)
	for i, cc := range rg.ColumnChunks() {
		pages := cc.Pages()
		err := func() error {
			defer pages.Close()
			for {
				p, err := pages.ReadPage()
				if err == io.EOF {
					return nil
				}
				if err != nil {
					return err
				}
				r := p.Values()
				for {
					_, err := r.ReadValues(vals)
					if err == io.EOF {
						break
					}
					if err != nil {
						parquet.Release(p)
						return err
					}
				}
				parquet.Release(p)
			}
		}()
		if err != nil && i < len(cols) {
			return fmt.Sprintf(", column %q", cols[i].name)
		}
	}
	return ""
}

// parquetColumns checks that the schema is flat and picks each column's
// conversion.
func parquetColumns(name string, schema *parquet.Schema) ([]pqReadColumn, error) {
	var cols []pqReadColumn
	for _, path := range schema.Columns() {
		leaf, _ := schema.Lookup(path...)
		colName := strings.Join(path, ".")
		if len(path) != 1 || leaf.MaxRepetitionLevel > 0 {
			return nil, fmt.Errorf("%w: %s: column %q is nested (a list, map or struct); only flat columns can be read", errParquet, name, colName)
		}
		c, err := pqConverter(colName, leaf.Node.Type())
		if err != nil {
			return nil, fmt.Errorf("%w: %s: column %q: %v", errParquet, name, colName, err)
		}
		cols = append(cols, c)
	}
	if len(cols) == 0 {
		return nil, fmt.Errorf("%w: %s has no columns", errParquet, name)
	}
	return cols, nil
}

// pqConverter picks the conversion of a column of type t.
func pqConverter(name string, t parquet.Type) (pqReadColumn, error) {
	c := pqReadColumn{name: name}
	var lt format.LogicalTypeValue
	if l := t.LogicalType(); l != nil {
		lt = l.Value
	}
	ct := t.ConvertedType()
	is := func(want deprecated.ConvertedType) bool { return ct != nil && *ct == want }
	kind := t.Kind()
	switch {
	case isPqDecimal(lt, ct):
		scale := decimalScale(lt, t)
		c.typ, c.keyable = fmt.Sprintf("DECIMAL(scale %d)", scale), scale == 0
		if d, ok := lt.(*format.DecimalType); ok && d.Precision >= 1 && int(d.Precision) <= encoding.MaxDecimalDigits && d.Scale <= d.Precision {
			c.precision, c.scale = int(d.Precision), scale
		}
		c.conv = func(v parquet.Value) (any, error) { return decimalValue(v, scale) }
		return c, nil
	case isTimestamp(lt, ct):
		unit := timestampUnit(lt, ct)
		c.typ = "TIMESTAMP"
		c.conv = func(v parquet.Value) (any, error) {
			return formatInstant(unit(v.Int64())), nil
		}
		return c, nil
	case isDate(lt, ct):
		c.typ = "DATE"
		c.conv = func(v parquet.Value) (any, error) {
			return time.Unix(int64(v.Int32())*86400, 0).UTC().Format(dateLayout), nil
		}
		return c, nil
	}
	switch kind {
	case parquet.Boolean:
		c.typ = "BOOLEAN"
		c.conv = func(v parquet.Value) (any, error) { return v.Boolean(), nil }
	case parquet.Int32, parquet.Int64:
		unsigned := is(deprecated.Uint8) || is(deprecated.Uint16) || is(deprecated.Uint32) || is(deprecated.Uint64)
		if it, ok := lt.(*format.IntType); ok {
			unsigned = !it.IsSigned
		}
		c.typ, c.keyable = kind.String(), true
		switch {
		case unsigned && kind == parquet.Int64:
			c.typ = "UINT64"
			c.conv = func(v parquet.Value) (any, error) { return json.Number(strconv.FormatUint(v.Uint64(), 10)), nil }
		case unsigned:
			c.typ = "UINT32"
			c.conv = func(v parquet.Value) (any, error) {
				return json.Number(strconv.FormatUint(uint64(v.Uint32()), 10)), nil
			}
		case kind == parquet.Int64:
			c.conv = func(v parquet.Value) (any, error) { return json.Number(strconv.FormatInt(v.Int64(), 10)), nil }
		default:
			c.conv = func(v parquet.Value) (any, error) { return json.Number(strconv.FormatInt(int64(v.Int32()), 10)), nil }
		}
	case parquet.Float:
		c.typ = "FLOAT"
		c.conv = func(v parquet.Value) (any, error) { return floatNumber(float64(v.Float()), 32), nil }
	case parquet.Double:
		c.typ = "DOUBLE"
		c.conv = func(v parquet.Value) (any, error) { return floatNumber(v.Double(), 64), nil }
	case parquet.ByteArray, parquet.FixedLenByteArray:
		c.keyable = true
		_, isString := lt.(*format.StringType)
		_, isEnum := lt.(*format.EnumType)
		_, isJSON := lt.(*format.JsonType)
		if isString || isEnum || isJSON || is(deprecated.UTF8) || is(deprecated.Enum) || is(deprecated.Json) {
			c.typ = "STRING"
			c.conv = func(v parquet.Value) (any, error) { return string(v.ByteArray()), nil }
		} else {
			c.typ = "BYTE_ARRAY"
			c.conv = func(v parquet.Value) (any, error) { return hex.EncodeToString(v.ByteArray()), nil }
		}
	default:
		return c, fmt.Errorf("type %s is not supported (INT96 timestamps: write TIMESTAMP instead)", kind)
	}
	return c, nil
}

func isPqDecimal(lt format.LogicalTypeValue, ct *deprecated.ConvertedType) bool {
	_, ok := lt.(*format.DecimalType)
	return ok || (lt == nil && ct != nil && *ct == deprecated.Decimal)
}

func decimalScale(lt format.LogicalTypeValue, t parquet.Type) int {
	if d, ok := lt.(*format.DecimalType); ok {
		return int(d.Scale)
	}
	return 0
}

func isTimestamp(lt format.LogicalTypeValue, ct *deprecated.ConvertedType) bool {
	_, ok := lt.(*format.TimestampType)
	return ok || (lt == nil && ct != nil && (*ct == deprecated.TimestampMicros || *ct == deprecated.TimestampMillis))
}

func isDate(lt format.LogicalTypeValue, ct *deprecated.ConvertedType) bool {
	_, ok := lt.(*format.DateType)
	return ok || (lt == nil && ct != nil && *ct == deprecated.Date)
}

// timestampUnit returns the conversion of a timestamp's ticks to microseconds
// (nanoseconds are truncated toward the earlier microsecond).
func timestampUnit(lt format.LogicalTypeValue, ct *deprecated.ConvertedType) func(int64) int64 {
	micros := func(n int64) int64 { return n }
	millis := func(n int64) int64 { return n * 1000 }
	if ts, ok := lt.(*format.TimestampType); ok {
		switch ts.Unit.Value.(type) {
		case *format.MilliSeconds:
			return millis
		case *format.NanoSeconds:
			return func(n int64) int64 { return floorDiv(n, 1000) }
		}
		return micros
	}
	if ct != nil && *ct == deprecated.TimestampMillis {
		return millis
	}
	return micros
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// floatNumber renders a float as a JSON-like number that always reads as a
// float: with a decimal point or an exponent, or NaN / +Inf / -Inf.
func floatNumber(f float64, bits int) json.Number {
	s := strconv.FormatFloat(f, 'g', -1, bits)
	if !strings.ContainsAny(s, ".eEIN") {
		s += ".0"
	}
	return json.Number(s)
}

// decimalValue renders a DECIMAL as a decimal number.
func decimalValue(v parquet.Value, scale int) (any, error) {
	var unscaled big.Int
	switch v.Kind() {
	case parquet.Int32:
		unscaled.SetInt64(int64(v.Int32()))
	case parquet.Int64:
		unscaled.SetInt64(v.Int64())
	case parquet.ByteArray, parquet.FixedLenByteArray:
		b := v.ByteArray()
		unscaled.SetBytes(b)
		if len(b) > 0 && b[0]&0x80 != 0 { // two's complement, big-endian
			unscaled.Sub(&unscaled, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
		}
	default:
		return nil, fmt.Errorf("a DECIMAL stored as %s", v.Kind())
	}
	s := unscaled.String()
	if scale <= 0 {
		return json.Number(s), nil
	}
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for len(s) <= scale {
		s = "0" + s
	}
	s = s[:len(s)-scale] + "." + s[len(s)-scale:]
	if neg {
		s = "-" + s
	}
	return json.Number(s), nil
}

// checkParquetKeys refuses key columns of a type that cannot be a key (a float,
// a bool, a time), naming the file and column. Files that are not Parquet pass.
func (in *input) checkParquetKeys(what string, names []string) error {
	if in.parquet == nil {
		return nil
	}
	for _, name := range names {
		for i, c := range in.parquet {
			if in.cols[i] == strings.TrimSpace(name) && !c.keyable {
				return fmt.Errorf("%w: %s: column %q is %s, which cannot be %s (keys are integers, strings or bytes)", errParquet, in.name, c.name, c.typ, what)
			}
		}
	}
	return nil
}

// keyNames returns the names of a table's key columns.
func keyNames(t *store.Table) []string {
	names := make([]string, len(t.Key))
	for i, c := range t.Key {
		names[i] = c.Name
	}
	return names
}
