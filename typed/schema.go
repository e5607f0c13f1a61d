package typed

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"time"
	"unsafe"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/store"
)

// ErrSchema: a struct type that cannot describe a table (an unexported or
// unsupported field, a key field missing or of the wrong type, two fields with
// one name), found when the table is declared or first checked against the
// store, never at a write.
var ErrSchema = errors.New("bitempo: struct does not fit the table")

// ErrField: a stored value that does not fit its struct field (a string stored
// where the struct has an int, an integer beyond an int32 field), found when a
// version is read.
var ErrField = errors.New("bitempo: stored value does not fit the struct field")

// SchemaError describes a struct type that cannot describe a table.
type SchemaError struct {
	Type  string // the struct type
	Table string
	Field string // the Go field; empty for the struct as a whole
	// Reason says what is wrong and, where there is one, what to do.
	Reason string
}

func (e *SchemaError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("bitempo: struct %s for table %q: %s", e.Type, e.Table, e.Reason)
	}
	return fmt.Sprintf("bitempo: struct %s for table %q: field %s: %s", e.Type, e.Table, e.Field, e.Reason)
}

// Is makes errors.Is(err, ErrSchema) true.
func (e *SchemaError) Is(target error) bool { return target == ErrSchema }

// FieldError describes a stored value that does not fit its struct field.
type FieldError struct {
	Table string
	Key   store.Key
	Field string // the Go field
	Attr  string // the attribute or key column
	Value any
	// Reason says why the value does not fit.
	Reason string
}

func (e *FieldError) Error() string {
	return fmt.Sprintf("bitempo: table %q key %s: %s %v does not fit field %s: %s", e.Table, e.Key, e.Attr, e.Value, e.Field, e.Reason)
}

// Is makes errors.Is(err, ErrField) true.
func (e *FieldError) Is(target error) bool { return target == ErrField }

// kind is what a field holds, whatever its Go type's name.
type kind uint8

const (
	kBool kind = iota + 1
	kInt
	kUint
	kFloat
	kString
	kBytes
	kTime
	kDecimal
)

var kindNames = [...]string{kBool: "bool", kInt: "int", kUint: "uint", kFloat: "float", kString: "string", kBytes: "bytes", kTime: "time", kDecimal: "decimal"}

var (
	timeType    = reflect.TypeFor[time.Time]()
	decimalType = reflect.TypeFor[encoding.Decimal]()
)

// field is one struct field that maps to an attribute or a key column.
type field struct {
	index  int // the struct field's index
	offset uintptr
	// exact: the field's type is exactly int64, float64, bool, string,
	// time.Time or encoding.Decimal (not a pointer), which set stores through
	// a typed pointer instead of reflection.
	exact  bool
	goName string // the Go field name
	name   string // the attribute or key column name
	kind   kind
	ptr    bool         // a pointer field: nil is null
	typ    reflect.Type // the field's type, or its element type when ptr
}

// schema is a checked struct type: its key fields in declaration order and its
// attribute fields sorted by name (the order records store attributes in, so a
// record is decoded with one merge pass).
type schema struct {
	typ   reflect.Type
	table string
	keys  []field
	attrs []field
	// names are the attribute fields' names, in attrs order (attrNames).
	names []string
}

// attrNames returns the names of the attribute fields: the projection every
// read decodes (a record's other attributes are stepped over).
// The list is the schema's own, made once so that a read does not build it:
// callers must not modify it.
func (s *schema) attrNames() []string { return s.names }

// project returns the projection of a read through query: the attribute
// fields, or the caller's own projection when it gave one (reading fewer
// attributes leaves the other fields zero). A struct with no attribute field
// reads every attribute through query, whose empty projection means all; the
// records' attributes are then skipped.
func (s *schema) project(own []string) []string {
	if len(own) > 0 {
		return own
	}
	return s.attrNames()
}

// kindOf returns the kind of a field type, or false if bitempo cannot store it.
func kindOf(t reflect.Type) (kind, bool) {
	switch t {
	case timeType:
		return kTime, true
	case decimalType:
		return kDecimal, true
	}
	switch t.Kind() {
	case reflect.Bool:
		return kBool, true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return kInt, true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return kUint, true
	case reflect.Float32, reflect.Float64:
		return kFloat, true
	case reflect.String:
		return kString, true
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return kBytes, true
		}
	}
	return 0, false
}

// newSchema checks struct type typ against the rules of the package doc.
func newSchema(typ reflect.Type, table string) (*schema, error) {
	bad := func(f, format string, args ...any) error {
		return &SchemaError{Type: typ.String(), Table: table, Field: f, Reason: fmt.Sprintf(format, args...)}
	}
	if typ.Kind() != reflect.Struct {
		return nil, bad("", "a table type must be a struct, not %s", typ.Kind())
	}
	s := &schema{typ: typ, table: table}
	seen := map[string]string{}
	for i := range typ.NumField() {
		sf := typ.Field(i)
		tag, hasTag := sf.Tag.Lookup("bitempo")
		if tag == "-" {
			continue
		}
		if !sf.IsExported() {
			return nil, bad(sf.Name, "unexported fields cannot be read or written; export it or tag it `bitempo:\"-\"`")
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" {
			name = sf.Name
		}
		isKey := false
		for _, o := range strings.Split(opts, ",") {
			switch o {
			case "":
			case "key":
				isKey = true
			default:
				return nil, bad(sf.Name, "unknown tag option %q (want `bitempo:\"name\"`, `bitempo:\"name,key\"` or `bitempo:\"-\"`)", o)
			}
		}
		if hasTag && strings.ContainsAny(name, "\x00") {
			return nil, bad(sf.Name, "name %q contains NUL", name)
		}
		if prev, dup := seen[name]; dup {
			return nil, bad(sf.Name, "name %q is also field %s's", name, prev)
		}
		seen[name] = sf.Name
		f := field{index: i, offset: sf.Offset, goName: sf.Name, name: name, typ: sf.Type}
		if sf.Type.Kind() == reflect.Pointer && sf.Type != timeType {
			if isKey {
				return nil, bad(sf.Name, "a key field cannot be a pointer: a key component is never null")
			}
			f.ptr, f.typ = true, sf.Type.Elem()
		}
		k, ok := kindOf(f.typ)
		if !ok {
			return nil, bad(sf.Name, "type %s cannot be stored (want bool, an integer, a float, string, []byte, time.Time or encoding.Decimal, or a pointer to one for a nullable attribute); tag it `bitempo:\"-\"` to leave it out", sf.Type)
		}
		f.kind = k
		switch f.typ {
		case reflect.TypeFor[int64](), reflect.TypeFor[float64](), reflect.TypeFor[bool](), reflect.TypeFor[string](), timeType, decimalType:
			f.exact = !f.ptr
		}
		if isKey {
			if k != kString && k != kBytes && k != kInt && k != kUint {
				return nil, bad(sf.Name, "a key field must be a string, []byte or integer, not %s", sf.Type)
			}
			s.keys = append(s.keys, f)
		} else {
			s.attrs = append(s.attrs, f)
		}
	}
	if len(s.keys) == 0 {
		return nil, bad("", "no key field: tag the natural key's fields `bitempo:\"column,key\"`")
	}
	slices.SortFunc(s.attrs, func(a, b field) int { return strings.Compare(a.name, b.name) })
	s.names = make([]string, len(s.attrs))
	for i, f := range s.attrs {
		s.names[i] = f.name
	}
	return s, nil
}

// keyType is the store key type of a key field.
func (f *field) keyType() store.KeyType {
	switch f.kind {
	case kString:
		return store.String
	case kBytes:
		return store.Bytes
	case kInt:
		return store.Int64
	}
	return store.Uint64
}

// keyValue is the value of key field f of struct value v, of the Go type of
// its keyType.
func (f *field) keyValue(v reflect.Value) any {
	fv := v.Field(f.index)
	switch f.kind {
	case kString:
		return fv.String()
	case kBytes:
		return fv.Bytes()
	case kInt:
		return fv.Int()
	}
	return fv.Uint()
}

// check compares the key fields with the table's key columns: the same names,
// in the same order, of matching types, and no attribute field named like a key
// column.
func (s *schema) check(t *store.Table) error {
	bad := func(f, format string, args ...any) error {
		return &SchemaError{Type: s.typ.String(), Table: t.Name, Field: f, Reason: fmt.Sprintf(format, args...)}
	}
	cols := make([]string, len(t.Key))
	for i, c := range t.Key {
		cols[i] = fmt.Sprintf("%s %s", c.Name, c.Type)
	}
	for _, f := range s.attrs {
		if slices.ContainsFunc(t.Key, func(c store.KeyColumn) bool { return c.Name == f.name }) {
			return bad(f.goName, "%q is a key column of the table; tag the field `bitempo:\"%s,key\"`", f.name, f.name)
		}
	}
	if len(s.keys) != len(t.Key) {
		return bad("", "%d key fields, but the table's key has %d columns (%s)", len(s.keys), len(t.Key), strings.Join(cols, ", "))
	}
	for i, f := range s.keys {
		c := t.Key[i]
		if f.name != c.Name {
			return bad(f.goName, "key field %d is %q, but the table's key column %d is %q (key columns: %s)", i+1, f.name, i+1, c.Name, strings.Join(cols, ", "))
		}
		if f.keyType() != c.Type {
			return bad(f.goName, "type %s does not hold key column %q of type %s", f.typ, c.Name, c.Type)
		}
	}
	return nil
}

// key returns the natural key of struct value v.
func (s *schema) key(v reflect.Value) store.Key {
	key := make(store.Key, len(s.keys))
	for i := range s.keys {
		key[i] = s.keys[i].keyValue(v)
	}
	return key
}

// attrs returns the attributes of struct value v. A nil pointer or nil []byte
// field is left out: an absent attribute reads as null.
func (s *schema) attrsOf(v reflect.Value) store.Attrs {
	out := make(store.Attrs, len(s.attrs))
	for _, f := range s.attrs {
		fv := v.Field(f.index)
		if f.ptr {
			if fv.IsNil() {
				continue
			}
			fv = fv.Elem()
		}
		switch f.kind {
		case kBool:
			out[f.name] = fv.Bool()
		case kInt:
			out[f.name] = fv.Int()
		case kUint:
			if u := fv.Uint(); u <= math.MaxInt64 {
				out[f.name] = int64(u)
			} else {
				out[f.name] = u
			}
		case kFloat:
			out[f.name] = fv.Float()
		case kString:
			out[f.name] = fv.String()
		case kBytes:
			if fv.IsNil() {
				continue
			}
			out[f.name] = append([]byte{}, fv.Bytes()...)
		case kTime:
			out[f.name] = fv.Interface().(time.Time)
		case kDecimal:
			out[f.name] = fv.Interface().(encoding.Decimal)
		}
	}
	return out
}

// decoder fills one struct value; it carries what a FieldError names.
type decoder struct {
	s   *schema
	key store.Key
}

// setKey sets the key fields of v from a decoded key.
func (d *decoder) setKey(v reflect.Value, key store.Key) error {
	if len(key) != len(d.s.keys) {
		return &FieldError{Table: d.s.table, Key: key, Reason: fmt.Sprintf("key has %d components, the struct %d key fields", len(key), len(d.s.keys))}
	}
	var val encoding.Value
	for i := range d.s.keys {
		f := &d.s.keys[i]
		switch c := key[i].(type) {
		case string:
			if f.kind == kString { // the common case, without copying c
				v.Field(f.index).SetString(c)
				continue
			}
			val = encoding.Value{Kind: encoding.KindString, Bytes: []byte(c)}
		case []byte:
			val = encoding.Value{Kind: encoding.KindBytes, Bytes: c}
		case int64:
			val = encoding.Value{Kind: encoding.KindInt, Int: c}
		case uint64:
			val = encoding.Value{Kind: encoding.KindUint, Uint: c}
			if c <= math.MaxInt64 {
				val = encoding.Value{Kind: encoding.KindInt, Int: int64(c)}
			}
		default: // the other integer widths a caller's key may hold
			switch rc := reflect.ValueOf(c); rc.Kind() {
			case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32:
				val = encoding.Value{Kind: encoding.KindInt, Int: rc.Int()}
			case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32:
				val = encoding.Value{Kind: encoding.KindInt, Int: int64(rc.Uint())}
			default:
				return &FieldError{Table: d.s.table, Key: key, Field: f.goName, Attr: f.name, Value: c, Reason: fmt.Sprintf("a %T key component", c)}
			}
		}
		if err := d.set(v.Field(f.index), f, &val); err != nil {
			return err
		}
	}
	return nil
}

// decodeRaw fills the attribute fields of v from a record's stored attributes.
func (d *decoder) decodeRaw(v reflect.Value, raw store.RawAttrs) error {
	base := v.Addr().UnsafePointer()
	return raw.Walk(func(name string, val *encoding.Value) error { return d.setAttr(v, base, name, val) })
}

// setAttr stores the value of attribute name, as a walk of a record's
// attributes reports it (store.RawAttrs.Walk, or query.ResolvedRow.Walk for a
// batch read's row view), into its field of v, whose address is base. It
// finds the field by binary search over the fields sorted by name (a record
// holds attributes in ordinal order, not name order) and skips an attribute
// the struct has no field for.
func (d *decoder) setAttr(v reflect.Value, base unsafe.Pointer, name string, val *encoding.Value) error {
	attrs := d.s.attrs
	j, ok := slices.BinarySearchFunc(attrs, name, func(f field, name string) int { return strings.Compare(f.name, name) })
	if !ok {
		return nil
	}
	f := &attrs[j]
	if f.exact && setExact(unsafe.Add(base, f.offset), f.kind, val) {
		return nil
	}
	return d.set(v.Field(f.index), f, val)
}

// setExact stores val into a field of exactly int64, float64, bool, string,
// time.Time or encoding.Decimal at p when val is of the field's kind; false
// leaves it to set (null, or a value that converts or does not fit).
func setExact(p unsafe.Pointer, k kind, val *encoding.Value) bool {
	switch {
	case k == kInt && val.Kind == encoding.KindInt:
		*(*int64)(p) = val.Int
	case k == kFloat && val.Kind == encoding.KindFloat:
		*(*float64)(p) = val.Float
	case k == kBool && val.Kind == encoding.KindBool:
		*(*bool)(p) = val.Bool
	case k == kString && val.Kind == encoding.KindString:
		*(*string)(p) = string(val.Bytes)
	case k == kTime && val.Kind == encoding.KindTime:
		*(*time.Time)(p) = val.Time
	case k == kDecimal && val.Kind == encoding.KindDecimal:
		*(*encoding.Decimal)(p) = val.Decimal()
	default:
		return false
	}
	return true
}

// decodeMap fills the attribute fields of v from a decoded record. A string
// goes into a string field as it is, without the copy set makes of encoded
// bytes (a Go string is immutable, so the field may share the map's); an
// exact field is stored through a typed pointer, as decodeRaw does.
func (d *decoder) decodeMap(v reflect.Value, attrs store.Attrs) error {
	base := v.Addr().UnsafePointer()
	for i := range d.s.attrs {
		f := &d.s.attrs[i]
		x, ok := attrs[f.name]
		if !ok {
			continue
		}
		if str, ok := x.(string); ok && f.kind == kString {
			fv := v.Field(f.index)
			if f.ptr {
				p := reflect.New(f.typ)
				fv.Set(p)
				fv = p.Elem()
			}
			fv.SetString(str)
			continue
		}
		val := encoding.ValueOf(x)
		if f.exact && setExact(unsafe.Add(base, f.offset), f.kind, &val) {
			continue
		}
		if err := d.set(v.Field(f.index), f, &val); err != nil {
			return err
		}
	}
	return nil
}

var valueKindNames = [...]string{encoding.KindNull: "null", encoding.KindBool: "bool", encoding.KindInt: "int64",
	encoding.KindUint: "uint64", encoding.KindFloat: "float64", encoding.KindString: "string", encoding.KindBytes: "bytes", encoding.KindTime: "time",
	encoding.KindDecimal: "decimal"}

// set stores val into field fv. Null leaves the (zeroed) field as it is: nil for
// a pointer, the zero value otherwise.
func (d *decoder) set(fv reflect.Value, f *field, val *encoding.Value) error {
	if val.Kind == encoding.KindNull {
		return nil
	}
	mismatch := func(reason string) error {
		return &FieldError{Table: d.s.table, Key: d.key, Field: f.goName, Attr: f.name, Value: val.Any(), Reason: reason}
	}
	if f.ptr {
		p := reflect.New(f.typ)
		fv.Set(p)
		fv = p.Elem()
	}
	switch f.kind {
	case kBool:
		if val.Kind == encoding.KindBool {
			fv.SetBool(val.Bool)
			return nil
		}
	case kInt:
		switch val.Kind {
		case encoding.KindInt:
			if fv.OverflowInt(val.Int) {
				return mismatch(fmt.Sprintf("%d overflows %s", val.Int, f.typ))
			}
			fv.SetInt(val.Int)
			return nil
		case encoding.KindUint:
			return mismatch(fmt.Sprintf("%d overflows %s", val.Uint, f.typ))
		}
	case kUint:
		switch val.Kind {
		case encoding.KindInt:
			if val.Int < 0 || fv.OverflowUint(uint64(val.Int)) {
				return mismatch(fmt.Sprintf("%d does not fit %s", val.Int, f.typ))
			}
			fv.SetUint(uint64(val.Int))
			return nil
		case encoding.KindUint:
			if fv.OverflowUint(val.Uint) {
				return mismatch(fmt.Sprintf("%d overflows %s", val.Uint, f.typ))
			}
			fv.SetUint(val.Uint)
			return nil
		}
	case kFloat:
		if val.Kind == encoding.KindFloat {
			if fv.OverflowFloat(val.Float) {
				return mismatch(fmt.Sprintf("%g overflows %s", val.Float, f.typ))
			}
			fv.SetFloat(val.Float)
			return nil
		}
	case kString:
		if val.Kind == encoding.KindString {
			fv.SetString(string(val.Bytes))
			return nil
		}
	case kBytes:
		if val.Kind == encoding.KindBytes {
			fv.SetBytes(append([]byte{}, val.Bytes...))
			return nil
		}
	case kTime:
		if val.Kind == encoding.KindTime {
			*(*time.Time)(fv.Addr().UnsafePointer()) = val.Time // fv is addressable; no boxing
			return nil
		}
	case kDecimal:
		return d.setDecimal(fv, val, mismatch)
	}
	return mismatch(fmt.Sprintf("a stored %s does not fit a %s field (%s)", valueKindNames[val.Kind], kindNames[f.kind], f.typ))
}

// setDecimal stores val into a decimal field: a decimal as it is, an int64 as
// a decimal of scale 0 when it has at most 18 digits. A float64 does not
// convert (it has no exact decimal value); neither does a decimal into a
// float field (see the package doc).
func (d *decoder) setDecimal(fv reflect.Value, val *encoding.Value, mismatch func(string) error) error {
	var dec encoding.Decimal
	switch val.Kind {
	case encoding.KindDecimal:
		dec = val.Decimal()
	case encoding.KindInt:
		var err error
		if dec, err = encoding.NewDecimal(val.Int, 0); err != nil {
			return mismatch(fmt.Sprintf("%d has more than %d digits", val.Int, encoding.MaxDecimalDigits))
		}
	case encoding.KindUint:
		return mismatch(fmt.Sprintf("%d has more than %d digits", val.Uint, encoding.MaxDecimalDigits))
	default:
		return mismatch(fmt.Sprintf("a stored %s does not fit a decimal field (%s)", valueKindNames[val.Kind], fv.Type()))
	}
	*(*encoding.Decimal)(fv.Addr().UnsafePointer()) = dec // fv is addressable; no boxing
	return nil
}
