package store

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bitempo/bitempo/encoding"
)

// This file holds the column declarations of a table and the rules every write
// path enforces with them:
//
//   - A declared column (TableDef.Columns) has a type and says whether it may be
//     null. Every version a transaction asserts holds, for each declared column,
//     either nothing or null (when the column is nullable) or a value of the
//     column's type. Values are converted only where that is exact (an int64 to
//     a float64 column when it is within ±2^53, an int64 or a float64 to a
//     decimal column when it has an exact form at the column's scale, a decimal
//     to a larger scale); anything else is a *SchemaError and the transaction
//     writes nothing.
//   - A strict table (TableDef.Strict) takes no attribute it does not declare.
//   - Every attribute, declared or not, establishes a type with the first
//     non-null value a commit stores (the declared type, for a declared
//     column); the store keeps it (DB.AttrType). A write transaction holds
//     each new value of an undeclared attribute to it (Writer.Conform), with
//     the same exact conversions, so one write cannot re-type a column; the
//     tool reads the cells of a file by it, so a dirty file cannot turn a
//     float column into a string column. A table created with MixedTypes
//     opts out for its undeclared attributes (a schemaless table whose
//     attributes may hold any type from write to write).
//   - A declaration changes only by a transaction (txn's AddColumn and
//     WidenColumn), which records the new declaration at its transaction time;
//     Snapshot.Declaration reports the one in effect at any transaction time.
//     A change never rewrites stored versions: a column added later reads null
//     in older versions, and a widened column may hold values of its earlier
//     type (an int64 where the column is now a decimal), which readers convert
//     with Table.ConformValue.

// TypeKind is the kind of a column's type.
type TypeKind uint8

// Column type kinds.
const (
	TypeString TypeKind = iota + 1
	TypeInt64
	TypeUint64
	TypeFloat64
	TypeBool
	TypeBytes
	// TypeTime: a time.Time at microsecond precision, UTC.
	TypeTime
	// TypeDate: a day, held as a time.Time at midnight UTC.
	TypeDate
	// TypeDecimal: an encoding.Decimal of a declared precision and scale.
	TypeDecimal
)

var typeKindNames = [...]string{TypeString: "string", TypeInt64: "int64", TypeUint64: "uint64", TypeFloat64: "float64",
	TypeBool: "bool", TypeBytes: "bytes", TypeTime: "time", TypeDate: "date", TypeDecimal: "decimal"}

func (k TypeKind) String() string {
	if k > 0 && int(k) < len(typeKindNames) {
		return typeKindNames[k]
	}
	return fmt.Sprintf("TypeKind(%d)", uint8(k))
}

// ColumnType is a column's type: a kind, and for decimals a precision (total
// digits, 1 to encoding.MaxDecimalDigits) and a scale (digits after the point,
// 0 to the precision).
type ColumnType struct {
	Kind      TypeKind `msgpack:"kind"`
	Precision uint8    `msgpack:"precision,omitempty"`
	Scale     uint8    `msgpack:"scale,omitempty"`
}

// DecimalType returns decimal(precision, scale).
func DecimalType(precision, scale int) ColumnType {
	return ColumnType{Kind: TypeDecimal, Precision: uint8(precision), Scale: uint8(scale)}
}

// String prints the type as ParseColumnType reads it: "decimal(10,2)", "int64".
func (t ColumnType) String() string {
	if t.Kind == TypeDecimal {
		return fmt.Sprintf("decimal(%d,%d)", t.Precision, t.Scale)
	}
	return t.Kind.String()
}

// ParseColumnType parses a type name: string, int64, uint64, float64, bool,
// bytes, time, date or decimal(P,S); "decimal(P)" is decimal(P,0). A few common
// aliases are accepted (int, integer, bigint, float, double, boolean,
// timestamp, numeric(P,S), text, varchar) and stored as the type they name.
func ParseColumnType(s string) (ColumnType, error) {
	name := strings.ToLower(strings.TrimSpace(s))
	if rest, ok := cutAny(name, "decimal", "numeric"); ok {
		return parseDecimalArgs(s, strings.TrimSpace(rest))
	}
	aliases := map[string]TypeKind{"int": TypeInt64, "integer": TypeInt64, "bigint": TypeInt64, "float": TypeFloat64,
		"double": TypeFloat64, "boolean": TypeBool, "timestamp": TypeTime, "text": TypeString, "varchar": TypeString}
	if k, ok := aliases[name]; ok {
		return ColumnType{Kind: k}, nil
	}
	for k, n := range typeKindNames {
		if n != "" && n == name && TypeKind(k) != TypeDecimal {
			return ColumnType{Kind: TypeKind(k)}, nil
		}
	}
	return ColumnType{}, fmt.Errorf("%w: unknown column type %q (want string, int64, uint64, float64, bool, bytes, time, date or decimal(P,S))", ErrInvalidTable, s)
}

func cutAny(s string, prefixes ...string) (string, bool) {
	for _, p := range prefixes {
		if rest, ok := strings.CutPrefix(s, p); ok {
			return rest, true
		}
	}
	return "", false
}

func parseDecimalArgs(orig, args string) (ColumnType, error) {
	bad := fmt.Errorf("%w: column type %q: want decimal(P,S) with 1 <= P <= %d and 0 <= S <= P", ErrInvalidTable, orig, encoding.MaxDecimalDigits)
	if args == "" {
		return ColumnType{}, bad
	}
	inner, open := strings.CutPrefix(args, "(")
	inner, closed := strings.CutSuffix(inner, ")")
	if !open || !closed {
		return ColumnType{}, bad
	}
	ps, ss, hasScale := strings.Cut(inner, ",")
	p, err := strconv.Atoi(strings.TrimSpace(ps))
	if err != nil {
		return ColumnType{}, bad
	}
	sc := 0
	if hasScale {
		if sc, err = strconv.Atoi(strings.TrimSpace(ss)); err != nil {
			return ColumnType{}, bad
		}
	}
	if p < 1 || p > encoding.MaxDecimalDigits || sc < 0 || sc > p {
		return ColumnType{}, bad
	}
	return DecimalType(p, sc), nil
}

// validate checks a type of a declaration.
func (t ColumnType) validate() error {
	switch {
	case t.Kind < TypeString || t.Kind > TypeDecimal:
		return fmt.Errorf("unknown type kind %d", t.Kind)
	case t.Kind == TypeDecimal && (t.Precision < 1 || t.Precision > encoding.MaxDecimalDigits || t.Scale > t.Precision):
		return fmt.Errorf("decimal(%d,%d) needs 1 <= precision <= %d and scale <= precision", t.Precision, t.Scale, encoding.MaxDecimalDigits)
	case t.Kind != TypeDecimal && (t.Precision != 0 || t.Scale != 0):
		return fmt.Errorf("%s takes no precision or scale", t.Kind)
	}
	return nil
}

// Column declares one attribute of a table: its name, type, and whether it may
// be null (absent, or a nil value). The zero value of Nullable is NOT NULL.
type Column struct {
	Name     string     `msgpack:"name"`
	Type     ColumnType `msgpack:"type"`
	Nullable bool       `msgpack:"nullable,omitempty"`
}

// String prints the column as ParseColumns reads it: "price:decimal(10,2)",
// with " not null" when the column is not nullable.
func (c Column) String() string {
	s := c.Name + ":" + c.Type.String()
	if !c.Nullable {
		s += " not null"
	}
	return s
}

// ParseColumns parses a comma-separated list of column declarations
// "name:type", each nullable unless followed by "not null":
//
//	price:decimal(10,2) not null,category:string,updated:time
//
// Commas inside a type's parentheses belong to the type.
func ParseColumns(spec string) ([]Column, error) {
	var cols []Column
	for _, item := range SplitColumnList(spec) {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, typ, ok := strings.Cut(item, ":")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return nil, fmt.Errorf("%w: column %q: want name:type", ErrInvalidTable, item)
		}
		col := Column{Name: name, Nullable: true}
		lower := strings.ToLower(strings.Join(strings.Fields(typ), " "))
		if base, ok := strings.CutSuffix(lower, " not null"); ok {
			col.Nullable, typ = false, base
		} else if base, ok := strings.CutSuffix(lower, " null"); ok {
			typ = base
		}
		t, err := ParseColumnType(typ)
		if err != nil {
			return nil, fmt.Errorf("column %q: %w", name, err)
		}
		col.Type = t
		cols = append(cols, col)
	}
	if len(cols) == 0 {
		return nil, fmt.Errorf("%w: no columns in %q", ErrInvalidTable, spec)
	}
	return cols, nil
}

// FormatColumns prints columns as ParseColumns reads them.
func FormatColumns(cols []Column) string {
	parts := make([]string, len(cols))
	for i, c := range cols {
		parts[i] = c.String()
	}
	return strings.Join(parts, ",")
}

// SplitColumnList splits a comma-separated list of column or type
// specifications at the commas outside parentheses, so that a decimal(10,2)
// stays whole.
func SplitColumnList(s string) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}

// Declaration is a table's column declaration as of one transaction time.
type Declaration struct {
	Columns []Column `msgpack:"columns"`
	Strict  bool     `msgpack:"strict,omitempty"`
	// Since is the transaction time the declaration took effect (0: when the
	// table was created). It is not stored in the entry; its key holds it.
	Since int64 `msgpack:"-"`
}

// validateColumns checks the columns of a definition against its key.
func (d *TableDef) validateColumns() error {
	if d.Strict && len(d.Columns) == 0 {
		return fmt.Errorf("a strict table must declare its columns")
	}
	seen := map[string]bool{}
	for _, k := range d.Key {
		seen[k.Name] = true
	}
	for _, c := range d.Columns {
		if c.Name == "" || seen[c.Name] {
			return fmt.Errorf("column %q: names must be non-empty, distinct, and not a key column", c.Name)
		}
		seen[c.Name] = true
		if err := c.Type.validate(); err != nil {
			return fmt.Errorf("column %q: %v", c.Name, err)
		}
	}
	return nil
}

// SchemaError is returned for a value that does not fit a table's declaration
// (or, for a file read by the tool, the type its column established). It wraps
// ErrSchema.
type SchemaError struct {
	Table  string
	Column string
	// Type is the column's declared type ("" for an undeclared attribute of a
	// strict table).
	Type  string
	Value any
	// Reason says what is wrong ("does not fit", "is null", ...).
	Reason string
}

func (e *SchemaError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "bitempo: table %q column %q", e.Table, e.Column)
	if e.Type != "" {
		fmt.Fprintf(&b, " (%s)", e.Type)
	}
	if e.Value != nil {
		fmt.Fprintf(&b, ": value %s (%s)", quoteValue(e.Value), ValueTypeName(e.Value))
	}
	fmt.Fprintf(&b, ": %s", e.Reason)
	return b.String()
}

// Is makes errors.Is(err, ErrSchema) true.
func (e *SchemaError) Is(target error) bool { return target == ErrSchema }

func quoteValue(v any) string {
	switch x := v.(type) {
	case string:
		return strconv.Quote(x)
	case []byte:
		return fmt.Sprintf("%x", x)
	case time.Time:
		return x.Format(time.RFC3339Nano)
	}
	return fmt.Sprint(v)
}

// ValueTypeName names the type of a canonical attribute value as messages do:
// null, bool, int64, uint64, float64, string, bytes, time or decimal.
func ValueTypeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case int64:
		return "int64"
	case uint64:
		return "uint64"
	case float64:
		return "float64"
	case bool:
		return "bool"
	case []byte:
		return "bytes"
	case time.Time:
		return "time"
	case encoding.Decimal:
		return "decimal"
	}
	return fmt.Sprintf("%T", v)
}

// ValueType returns the type a non-null canonical attribute value establishes:
// its kind, and for a decimal, precision 18 and the value's own scale. ok is
// false for null and for a value of no attribute type.
func ValueType(v any) (ColumnType, bool) {
	switch x := v.(type) {
	case string:
		return ColumnType{Kind: TypeString}, true
	case int64:
		return ColumnType{Kind: TypeInt64}, true
	case uint64:
		return ColumnType{Kind: TypeUint64}, true
	case float64:
		return ColumnType{Kind: TypeFloat64}, true
	case bool:
		return ColumnType{Kind: TypeBool}, true
	case []byte:
		return ColumnType{Kind: TypeBytes}, true
	case time.Time:
		return ColumnType{Kind: TypeTime}, true
	case encoding.Decimal:
		return DecimalType(encoding.MaxDecimalDigits, x.Scale()), true
	}
	return ColumnType{}, false
}

// ConvertValue returns the canonical attribute value v as a value of type t,
// converting only where that is exact: v itself when it is of the type already,
// an int64 to uint64 (not negative) or to float64 (within ±2^53), an int64 or
// float64 to a decimal that holds it exactly at the type's scale, a decimal to
// the type's scale when exact. A date must be a time at midnight UTC. A decimal
// must have at most the type's precision in digits. ok is false, with the
// reason, when v does not fit. A nil v converts to nil.
func ConvertValue(t ColumnType, v any) (out any, reason string, ok bool) {
	if v == nil {
		return nil, "", true
	}
	switch t.Kind {
	case TypeString:
		_, ok = v.(string)
	case TypeBytes:
		_, ok = v.([]byte)
	case TypeBool:
		_, ok = v.(bool)
	case TypeInt64:
		_, ok = v.(int64)
	case TypeUint64:
		switch x := v.(type) {
		case int64:
			if x < 0 {
				return nil, "is negative", false
			}
			ok = true
		case uint64:
			ok = true
		}
	case TypeFloat64:
		switch x := v.(type) {
		case float64:
			ok = true
		case int64:
			if x < -1<<53 || x > 1<<53 {
				return nil, "has no exact float64", false
			}
			return float64(x), "", true
		}
	case TypeTime:
		_, ok = v.(time.Time)
	case TypeDate:
		if x, isTime := v.(time.Time); isTime {
			if x.UnixMicro()%(86_400_000_000) != 0 {
				return nil, "is not a whole day (midnight UTC)", false
			}
			ok = true
		}
	case TypeDecimal:
		return convertDecimal(t, v)
	}
	if !ok {
		return nil, "does not fit", false
	}
	return v, "", true
}

func convertDecimal(t ColumnType, v any) (any, string, bool) {
	var d encoding.Decimal
	var ok bool
	switch x := v.(type) {
	case encoding.Decimal:
		d, ok = x.Rescale(int(t.Scale))
	case int64:
		whole, err := encoding.NewDecimal(x, 0)
		if err != nil {
			return nil, fmt.Sprintf("has more than %d digits", t.Precision), false
		}
		d, ok = whole.Rescale(int(t.Scale))
	case float64:
		d, ok = encoding.DecimalFromFloat(x, int(t.Scale))
	default:
		return nil, "does not fit", false
	}
	if !ok {
		return nil, fmt.Sprintf("has no exact form with %d digits after the point", t.Scale), false
	}
	if d.Digits() > int(t.Precision) && d.Coef() != 0 {
		return nil, fmt.Sprintf("has more than %d digits", t.Precision), false
	}
	return d, "", true
}

// Column returns the declared column of the given name.
func (t *Table) Column(name string) (Column, bool) {
	if i, ok := t.colIndex[name]; ok {
		return t.Columns[i], true
	}
	return Column{}, false
}

// Declared reports whether the table declares any column.
func (t *Table) Declared() bool { return len(t.Columns) > 0 }

// Conform checks attrs (canonical values, as encoding.Canonical gives them)
// against the table's declaration and returns them with every value converted
// to its column's type (ConvertValue). It returns attrs itself when nothing
// needed converting, and a *SchemaError for a value that does not fit, a null
// in a column that is not nullable, or an undeclared attribute of a strict
// table. Columns absent from attrs are not checked: a partial update (an
// upsert of a changes table that ignores nulls) is whole only once merged;
// Writer.Assert checks the whole version.
func (t *Table) Conform(attrs Attrs) (Attrs, error) {
	if len(t.Columns) == 0 {
		return attrs, nil
	}
	out, copied := attrs, false
	for name, v := range attrs {
		i, declared := t.colIndex[name]
		if !declared {
			if t.Strict {
				return nil, &SchemaError{Table: t.Name, Column: name, Value: v, Reason: "is not a declared column of this strict table"}
			}
			continue
		}
		col := &t.Columns[i]
		if v == nil {
			if !col.Nullable {
				return nil, &SchemaError{Table: t.Name, Column: name, Type: col.Type.String(), Reason: "is null; the column is not nullable"}
			}
			continue
		}
		c, reason, ok := ConvertValue(col.Type, v)
		if !ok {
			return nil, &SchemaError{Table: t.Name, Column: name, Type: col.Type.String(), Value: v, Reason: reason}
		}
		if !sameValue(c, v) {
			if !copied {
				out, copied = attrs.Clone(), true
			}
			out[name] = c
		}
	}
	return out, nil
}

// conformVersion is Conform for a whole version: it also requires every column
// that is not nullable to be present.
func (t *Table) conformVersion(attrs Attrs) (Attrs, error) {
	if len(t.Columns) == 0 {
		return attrs, nil
	}
	for _, c := range t.Columns {
		if _, ok := attrs[c.Name]; !ok && !c.Nullable {
			return nil, &SchemaError{Table: t.Name, Column: c.Name, Type: c.Type.String(), Reason: "is missing; the column is not nullable"}
		}
	}
	return t.Conform(attrs)
}

// ConformValue returns a stored value of column name as its declared type of
// now: a value written before the column was widened (an int64 in what is now
// a decimal column) is converted; values of undeclared attributes and values
// that do not convert are returned as they are.
func (t *Table) ConformValue(name string, v any) any {
	i, ok := t.colIndex[name]
	if !ok || v == nil {
		return v
	}
	if c, _, ok := ConvertValue(t.Columns[i].Type, v); ok {
		return c
	}
	return v
}

// sameValue reports whether two canonical values are identical.
func sameValue(a, b any) bool {
	switch x := a.(type) {
	case []byte:
		y, ok := b.([]byte)
		return ok && bytes.Equal(x, y)
	case float64:
		y, ok := b.(float64)
		return ok && math.Float64bits(x) == math.Float64bits(y)
	case time.Time:
		y, ok := b.(time.Time)
		return ok && x.Equal(y)
	}
	return a == b
}

// widens reports whether a column of type from may become one of type to
// with every stored value keeping its meaning: an int64 to a decimal, a
// decimal to one with no fewer integer digits and no smaller scale. (An int64
// beyond a decimal's integer digits stays stored as it was; a new write of
// such a value is refused.)
func widens(from, to ColumnType) bool {
	switch {
	case from == to:
		return false
	case from.Kind == TypeInt64 && to.Kind == TypeDecimal:
		return true
	case from.Kind == TypeDecimal && to.Kind == TypeDecimal:
		return to.Scale >= from.Scale && int(to.Precision)-int(to.Scale) >= int(from.Precision)-int(from.Scale)
	}
	return false
}

// columnIndex maps the declared columns' names to their positions.
func columnIndex(cols []Column) map[string]int {
	if len(cols) == 0 {
		return nil
	}
	m := make(map[string]int, len(cols))
	for i, c := range cols {
		m[c.Name] = i
	}
	return m
}

// declarationOf returns the declaration of a definition.
func declarationOf(d *TableDef) Declaration {
	return Declaration{Columns: slices.Clone(d.Columns), Strict: d.Strict}
}
