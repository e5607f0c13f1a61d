package cli

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/store"
)

// attrType is the type an attribute column's cells are read as: a declared
// column's type, the type an attribute established, a --types type or the one
// inferred from the file. It is the store's column type, so a declaration and
// the tool's type flags name types the same way.
type attrType = store.ColumnType

var (
	typeString  = store.ColumnType{Kind: store.TypeString}
	typeInt64   = store.ColumnType{Kind: store.TypeInt64}
	typeUint64  = store.ColumnType{Kind: store.TypeUint64}
	typeFloat64 = store.ColumnType{Kind: store.TypeFloat64}
	typeBool    = store.ColumnType{Kind: store.TypeBool}
	typeBytes   = store.ColumnType{Kind: store.TypeBytes}
	typeTime    = store.ColumnType{Kind: store.TypeTime}
	typeDate    = store.ColumnType{Kind: store.TypeDate}
)

// typeNames lists the type names --types and --columns take, for messages.
const typeNames = "string, int64, uint64, float64, bool, bytes (hex), time, date or decimal(P,S)"

// parseTypes parses --types col=type,... into a map; a column named twice is
// a usage error, not last-wins. A decimal(P,S) type's comma belongs to the
// type: --types price=decimal(10,2),qty=int64.
func parseTypes(specs []string) (map[string]attrType, error) {
	out := map[string]attrType{}
	var items []string
	for _, spec := range specs {
		items = append(items, store.SplitColumnList(spec)...)
	}
	items = rejoinTypeArgs(items)
	for _, spec := range items {
		col, name, ok := strings.Cut(spec, "=")
		typ, err := store.ParseColumnType(name)
		if !ok || err != nil || strings.TrimSpace(col) == "" {
			return nil, usagef("--types %q: want COL=TYPE with TYPE one of %s", spec, typeNames)
		}
		col = strings.TrimSpace(col)
		if prev, dup := out[col]; dup {
			return nil, usagef("--types names column %q twice (%s and %s): give each column one type", col, prev, typ)
		}
		out[col] = typ
	}
	return out, nil
}

// rejoinTypeArgs undoes the split a string-slice flag makes inside a type's
// parentheses ("price=decimal(10", "2)" becomes "price=decimal(10,2)").
func rejoinTypeArgs(items []string) []string {
	var out []string
	for _, it := range items {
		if n := len(out); n > 0 && strings.Count(out[n-1], "(") > strings.Count(out[n-1], ")") {
			out[n-1] += "," + it
			continue
		}
		out = append(out, it)
	}
	return out
}

// parseKeyComponent parses one natural-key component of a key column's type.
// Bytes components are written in hex.
func parseKeyComponent(col store.KeyColumn, s string) (any, error) {
	switch col.Type {
	case store.Int64:
		return parseNumber(store.TypeInt64, s)
	case store.Uint64:
		return parseNumber(store.TypeUint64, s)
	case store.Bytes:
		b, err := hex.DecodeString(s)
		if err != nil {
			return nil, fmt.Errorf("%q is not hex bytes", s)
		}
		return b, nil
	}
	return s, nil
}

// parseKeyArgs parses the key components given on the command line.
func parseKeyArgs(t *store.Table, args []string) (store.Key, error) {
	if len(args) != len(t.Key) {
		names := make([]string, len(t.Key))
		for i, c := range t.Key {
			names[i] = c.Name
		}
		return nil, usagef("table %s has a key of %d columns (%s), got %d values", t.Name, len(t.Key), strings.Join(names, ", "), len(args))
	}
	return parsePrefixArgs(t, args)
}

// parsePrefixArgs parses the first len(args) key components.
func parsePrefixArgs(t *store.Table, args []string) (store.Key, error) {
	if len(args) > len(t.Key) {
		return nil, usagef("table %s has a key of %d columns, got %d values", t.Name, len(t.Key), len(args))
	}
	key := make(store.Key, len(args))
	for i, s := range args {
		c, err := parseKeyComponent(t.Key[i], s)
		if err != nil {
			return nil, usagef("key column %s: %v", t.Key[i].Name, err)
		}
		key[i] = c
	}
	return key, nil
}

// isInteger reports whether s is a decimal integer as a data file would write
// one: no leading zeros (so zip codes like 0123 stay strings), optional sign.
func isInteger(s string) bool {
	d := strings.TrimPrefix(s, "-")
	if d == "" || (len(d) > 1 && d[0] == '0') {
		return false
	}
	for _, c := range d {
		if c < '0' || c > '9' {
			return false
		}
	}
	_, err := strconv.ParseInt(s, 10, 64)
	return err == nil
}

// isDecimal reports whether s is a plain decimal number (digits, one point, an
// optional exponent); it rejects "NaN", "Inf" and hex forms that ParseFloat takes.
func isDecimal(s string) bool {
	d := strings.TrimPrefix(strings.TrimPrefix(s, "-"), "+")
	if d == "" || (d[0] < '0' || d[0] > '9') && d[0] != '.' {
		return false
	}
	if len(d) > 1 && d[0] == '0' && d[1] >= '0' && d[1] <= '9' {
		return false // a leading zero: an identifier such as 0123, not a number
	}
	for _, c := range d {
		if !strings.ContainsRune("0123456789.eE+-", c) {
			return false
		}
	}
	_, err := strconv.ParseFloat(s, 64)
	return err == nil
}

func isBool(s string) bool {
	_, err := parseBool(s)
	return err == nil
}

func parseBool(s string) (bool, error) {
	switch strings.ToLower(s) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, fmt.Errorf("%q is not a bool (want true or false)", s)
}

// inferType picks the narrowest type that reads every non-empty text of a
// column: int64, else float64, else bool, else string.
func inferType(texts []string) attrType {
	checks := []struct {
		typ attrType
		ok  func(string) bool
	}{{typeInt64, isInteger}, {typeFloat64, isDecimal}, {typeBool, isBool}}
	for _, c := range checks {
		all, any := true, false
		for _, s := range texts {
			if s == "" {
				continue
			}
			any = true
			if !c.ok(s) {
				all = false
				break
			}
		}
		if all && any {
			return c.typ
		}
	}
	return typeString
}

// convertText converts a CSV cell (or a JSON string) to an attribute value of
// type typ. The empty string is null. An error names the type the cell needed.
func convertText(typ attrType, s string) (any, error) {
	if s == "" {
		return nil, nil
	}
	switch typ.Kind {
	case store.TypeInt64, store.TypeUint64, store.TypeFloat64:
		return parseNumber(typ.Kind, s)
	case store.TypeBool:
		return parseBool(strings.TrimSpace(s))
	case store.TypeBytes:
		b, err := hex.DecodeString(strings.TrimSpace(s))
		if err != nil {
			return nil, fmt.Errorf("%q is not bytes (want hex)", s)
		}
		return b, nil
	case store.TypeTime:
		t, err := parseInstant(s)
		if err != nil {
			return nil, err
		}
		return time.UnixMicro(t).UTC(), nil // a time attribute value
	case store.TypeDate:
		return parseDateValue(s)
	case store.TypeDecimal:
		return parseDecimalValue(typ, s)
	}
	return s, nil
}

// parseNumber reads s, white space around it allowed, as a number of kind
// TypeInt64, TypeUint64 or TypeFloat64; the error names the kind.
func parseNumber(kind store.TypeKind, s string) (any, error) {
	var v any
	var err error
	switch t := strings.TrimSpace(s); kind {
	case store.TypeInt64:
		v, err = strconv.ParseInt(t, 10, 64)
	case store.TypeUint64:
		v, err = strconv.ParseUint(t, 10, 64)
	default:
		v, err = strconv.ParseFloat(t, 64)
	}
	if err != nil {
		return nil, fmt.Errorf("%q is not %s", s, numberNames[kind])
	}
	return v, nil
}

// numberNames name the kinds parseNumber reads, as its errors say them.
var numberNames = map[store.TypeKind]string{
	store.TypeInt64: "an int64", store.TypeUint64: "a uint64", store.TypeFloat64: "a float64",
}

// parseDateValue reads a day, YYYY-MM-DD (or a time at midnight UTC), as the
// time at its midnight UTC, the value of a date column.
func parseDateValue(s string) (any, error) {
	s = strings.TrimSpace(s)
	if d, err := time.Parse(time.DateOnly, s); err == nil {
		return d.UTC(), nil
	}
	t, err := parseInstant(s)
	if err != nil || t%86_400_000_000 != 0 {
		return nil, fmt.Errorf("%q is not a date (want YYYY-MM-DD)", s)
	}
	return time.UnixMicro(t).UTC(), nil
}

// parseDecimalValue reads s exactly (never through a float64) as a decimal of
// typ's scale: 232.1 into decimal(10,2) is 232.10; 0.125 does not fit it.
func parseDecimalValue(typ attrType, s string) (any, error) {
	d, err := encoding.ParseDecimal(strings.TrimSpace(s))
	if err != nil {
		return nil, fmt.Errorf("%q is not a %s", s, typ)
	}
	r, ok := d.Rescale(int(typ.Scale))
	if !ok {
		return nil, fmt.Errorf("%q is not a %s: it has more than %d digits after the point", s, typ, typ.Scale)
	}
	if r.Digits() > int(typ.Precision) && r.Coef() != 0 {
		return nil, fmt.Errorf("%q is not a %s: it has more than %d digits", s, typ, typ.Precision)
	}
	return r, nil
}

// convertJSON converts a JSON value (decoded with UseNumber) to an attribute
// value of type typ. A number keeps its digits: it is read from its text.
func convertJSON(typ attrType, v any) (any, error) {
	switch x := v.(type) {
	case nil:
		return nil, nil
	case string:
		if typ == typeString {
			return x, nil
		}
		return convertText(typ, x)
	case json.Number:
		switch typ.Kind {
		case store.TypeInt64, store.TypeUint64, store.TypeFloat64, store.TypeDecimal:
			return convertText(typ, x.String())
		case store.TypeString:
			return x.String(), nil
		}
		return nil, fmt.Errorf("number %s is not a %s", x, typ)
	case bool:
		switch typ.Kind {
		case store.TypeBool:
			return x, nil
		case store.TypeString:
			return strconv.FormatBool(x), nil
		}
		return nil, fmt.Errorf("%t is not a %s", x, typ)
	}
	return nil, fmt.Errorf("a JSON %s cannot be stored (want a string, number, bool or null)", jsonKind(v))
}

// inferJSONType picks a column's type from its JSON values: numbers are int64
// when every number of the column is an integer, else float64; strings, bools
// and nulls keep their type (a column that mixes them is stored as found).
func inferJSONType(values []any) (attrType, bool) {
	sawNumber, allInts := false, true
	for _, v := range values {
		if n, ok := v.(json.Number); ok {
			sawNumber = true
			if _, err := strconv.ParseInt(n.String(), 10, 64); err != nil {
				allInts = false
			}
		}
	}
	switch {
	case !sawNumber:
		return attrType{}, false // keep every value's own type
	case allInts:
		return typeInt64, true
	}
	return typeFloat64, true
}

// jsonNative converts a JSON value to an attribute value without a declared type.
func jsonNative(v any, numberType attrType) (any, error) {
	switch x := v.(type) {
	case nil, string, bool:
		return x, nil
	case json.Number:
		return convertText(numberType, x.String())
	}
	return nil, fmt.Errorf("a JSON %s cannot be stored (want a string, number, bool or null)", jsonKind(v))
}

func jsonKind(v any) string {
	switch v.(type) {
	case map[string]any:
		return "object"
	case []any:
		return "array"
	}
	return fmt.Sprintf("%T", v)
}

// jsonText returns a JSON value as the text a CSV cell would hold.
func jsonText(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case json.Number:
		return x.String()
	case bool:
		return strconv.FormatBool(x)
	}
	b, _ := json.Marshal(v)
	return string(b)
}
