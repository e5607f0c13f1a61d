package cli

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/bitempo/bitempo/store"
)

// attrType is the declared or inferred type of an attribute column.
type attrType uint8

const (
	typeString attrType = iota
	typeInt64
	typeFloat64
	typeBool
	typeTime
)

var attrTypeNames = map[string]attrType{
	"string": typeString, "int64": typeInt64, "float64": typeFloat64, "bool": typeBool, "time": typeTime,
}

func (t attrType) String() string {
	for name, x := range attrTypeNames {
		if x == t {
			return name
		}
	}
	return "unknown"
}

// parseTypes parses --types col=type,... into a map; a column named twice is
// a usage error, not last-wins.
func parseTypes(specs []string) (map[string]attrType, error) {
	out := map[string]attrType{}
	for _, spec := range specs {
		col, name, ok := strings.Cut(spec, "=")
		typ, known := attrTypeNames[strings.TrimSpace(name)]
		if !ok || !known || strings.TrimSpace(col) == "" {
			return nil, usagef("--types %q: want COL=TYPE with TYPE one of int64, float64, bool, string, time", spec)
		}
		col = strings.TrimSpace(col)
		if prev, dup := out[col]; dup {
			return nil, usagef("--types names column %q twice (%s and %s): give each column one type", col, prev, strings.TrimSpace(name))
		}
		out[col] = typ
	}
	return out, nil
}

// parseKeyComponent parses one natural-key component of a key column's type.
// Bytes components are written in hex.
func parseKeyComponent(col store.KeyColumn, s string) (any, error) {
	switch col.Type {
	case store.Int64:
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not an int64", s)
		}
		return n, nil
	case store.Uint64:
		n, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a uint64", s)
		}
		return n, nil
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
// type typ. The empty string is null.
func convertText(typ attrType, s string) (any, error) {
	if s == "" {
		return nil, nil
	}
	switch typ {
	case typeInt64:
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not an int64", s)
		}
		return n, nil
	case typeFloat64:
		f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a float64", s)
		}
		return f, nil
	case typeBool:
		return parseBool(strings.TrimSpace(s))
	case typeTime:
		t, err := parseInstant(s)
		if err != nil {
			return nil, err
		}
		return time.UnixMicro(t).UTC(), nil // a time attribute value
	}
	return s, nil
}

// convertJSON converts a JSON value (decoded with UseNumber) to an attribute
// value of type typ.
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
		switch typ {
		case typeInt64, typeFloat64:
			return convertText(typ, x.String())
		case typeString:
			return x.String(), nil
		}
		return nil, fmt.Errorf("number %s is not a %s", x, typ)
	case bool:
		switch typ {
		case typeBool:
			return x, nil
		case typeString:
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
		return 0, false // keep every value's own type
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
