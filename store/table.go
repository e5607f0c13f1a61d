package store

import (
	"fmt"
	"slices"
	"strings"

	"github.com/bitempo/bitempo/encoding"
)

// KeyType is the type of one natural-key component.
type KeyType uint8

// Key component types.
const (
	String KeyType = iota + 1
	Bytes
	Int64
	Uint64
)

var keyTypeNames = map[KeyType]string{String: "string", Bytes: "bytes", Int64: "int64", Uint64: "uint64"}

func (t KeyType) String() string {
	if s, ok := keyTypeNames[t]; ok {
		return s
	}
	return fmt.Sprintf("KeyType(%d)", uint8(t))
}

// ParseKeyType parses "string", "bytes", "int64" or "uint64".
func ParseKeyType(s string) (KeyType, error) {
	for t, name := range keyTypeNames {
		if name == s {
			return t, nil
		}
	}
	return 0, fmt.Errorf("%w: unknown key type %q (want string, bytes, int64 or uint64)", ErrInvalidTable, s)
}

// Kind says how a table is written.
type Kind uint8

// Table kinds.
const (
	// Periods tables take explicit Put, Delete, Upsert and DeleteAt writes.
	Periods Kind = iota
	// Changes tables are owned by a CDC feed and take only Apply.
	Changes
)

func (k Kind) String() string {
	switch k {
	case Periods:
		return "periods"
	case Changes:
		return "changes"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// ParseKind parses "periods" or "changes".
func ParseKind(s string) (Kind, error) {
	switch s {
	case "periods", "":
		return Periods, nil
	case "changes":
		return Changes, nil
	}
	return 0, fmt.Errorf("%w: unknown table kind %q (want periods or changes)", ErrInvalidTable, s)
}

// Axis says how the ticks of a table's valid time are meant to be read. The store
// itself only sees int64 ticks; tools use the axis to parse and print them.
type Axis uint8

// Valid-time axes.
const (
	// AxisTime: microseconds since the Unix epoch, UTC.
	AxisTime Axis = iota
	// AxisDate: microseconds since the Unix epoch, always at midnight UTC.
	AxisDate
	// AxisInt: a plain integer sequence (CDC sequence numbers, LSNs).
	AxisInt
)

func (a Axis) String() string {
	switch a {
	case AxisTime:
		return "time"
	case AxisDate:
		return "date"
	case AxisInt:
		return "int"
	}
	return fmt.Sprintf("Axis(%d)", uint8(a))
}

// ParseAxis parses "time", "date" or "int".
func ParseAxis(s string) (Axis, error) {
	switch s {
	case "time", "":
		return AxisTime, nil
	case "date":
		return AxisDate, nil
	case "int":
		return AxisInt, nil
	}
	return 0, fmt.Errorf("%w: unknown axis %q (want time, date or int)", ErrInvalidTable, s)
}

// KeyColumn is one component of a table's natural key.
type KeyColumn struct {
	Name string  `msgpack:"name"`
	Type KeyType `msgpack:"type"`
}

// CompareOptions says how change detection compares one attribute. The zero value
// is exact, null-safe equality.
type CompareOptions struct {
	// Round compares numbers after rounding them to Scale decimal places, so
	// 1.23450 and 1.2345 are equal at scale 4.
	Round bool `msgpack:"round,omitempty"`
	Scale int  `msgpack:"scale,omitempty"`
	// Trim ignores leading and trailing white space of strings.
	Trim bool `msgpack:"trim,omitempty"`
	// FoldCase compares strings case-insensitively (Unicode simple folding).
	FoldCase bool `msgpack:"fold_case,omitempty"`
}

// TableDef declares a table. Only Name and Key are required.
type TableDef struct {
	Name string      `msgpack:"name"`
	Key  []KeyColumn `msgpack:"key"`
	Kind Kind        `msgpack:"kind"`
	// Track lists the tracked attributes: a change to one of them makes a new
	// version. Empty means every non-key attribute. TrackExcept instead lists the
	// attributes that are not tracked. At most one of the two may be set.
	Track       []string `msgpack:"track,omitempty"`
	TrackExcept []string `msgpack:"track_except,omitempty"`
	// Compare holds per-attribute comparison options for change detection.
	Compare map[string]CompareOptions `msgpack:"compare,omitempty"`
	// Axis says how valid-time ticks are read and printed by tools.
	Axis Axis `msgpack:"axis"`
	// Granularity, when positive, truncates valid times to multiples of it on
	// write (changes tables), e.g. 86_400_000_000 for days on a time axis.
	Granularity int64 `msgpack:"granularity,omitempty"`
	// IgnoreNulls turns on partial updates for changes tables: an attribute
	// absent from an upsert keeps the previous event's value.
	IgnoreNulls bool `msgpack:"ignore_nulls,omitempty"`
	// Lateness, when positive, is the horizon of a changes table in valid-time
	// ticks: per-key state older than the newest event minus Lateness may be
	// compacted, and an event older than that is rejected.
	Lateness int64 `msgpack:"lateness,omitempty"`
	// GroupBy names attributes whose values group the table's versions in a
	// temporal secondary index (for aggregations by group).
	GroupBy []string `msgpack:"group_by,omitempty"`
	// RetainTx, when positive, is the table's transaction-time retention in
	// ticks (microseconds): DB.Vacuum may drop records retired longer ago than
	// that, and reads at a transaction time before what it dropped then fail
	// with ErrBeforeHorizon (vacuum.go). Valid-time history is never dropped.
	RetainTx int64 `msgpack:"retain_tx,omitempty"`
	// Columns declares attributes with a type and nullability; every write
	// path holds the versions it asserts to them (schema.go). Attributes not
	// declared stay allowed unless Strict is set. Empty: nothing is declared.
	Columns []Column `msgpack:"columns,omitempty"`
	// Strict refuses attributes that Columns does not declare.
	Strict bool `msgpack:"strict,omitempty"`
	// MixedTypes lets the attributes the table does not declare hold values of
	// different types from write to write. By default the first non-null
	// value stored of an attribute fixes its type, and a later value of
	// another type is refused (schema.go).
	MixedTypes bool `msgpack:"mixed_types,omitempty"`
}

// Table is a table of the catalog: its definition plus the id that prefixes its keys.
type Table struct {
	TableDef
	ID uint32

	tracked map[string]bool // nil when every attribute is tracked (minus TrackExcept)
	except  map[string]bool
	// colIndex maps each declared column's name to its index in Columns.
	colIndex map[string]int
	// rawAttrs: reads through this table leave attributes encoded (WithRawAttrs).
	rawAttrs bool
	// proj: reads through this table decode only these attributes (Project).
	proj *encoding.Projection
	// views caches the projected views Snapshot.Project made of the catalog
	// table, shared by every copy of it (projection.go); nil in a Table the
	// catalog did not make, which then builds each view afresh.
	views *viewCache
}

// validate checks a definition before it is created.
func (d *TableDef) validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: table %q: %s", ErrInvalidTable, d.Name, fmt.Sprintf(format, args...))
	}
	if d.Name == "" || strings.ContainsAny(d.Name, "\x00\n") || len(d.Name) > 255 {
		return bad("name must be 1-255 bytes without NUL or newline")
	}
	if len(d.Key) == 0 {
		return bad("at least one key column is required")
	}
	seen := map[string]bool{}
	for _, c := range d.Key {
		if c.Name == "" || seen[c.Name] {
			return bad("key column names must be non-empty and distinct")
		}
		seen[c.Name] = true
		if _, ok := keyTypeNames[c.Type]; !ok {
			return bad("key column %q has unknown type %d", c.Name, c.Type)
		}
	}
	if d.Kind != Periods && d.Kind != Changes {
		return bad("unknown kind %d", d.Kind)
	}
	if d.Axis > AxisInt {
		return bad("unknown axis %d", d.Axis)
	}
	if len(d.Track) > 0 && len(d.TrackExcept) > 0 {
		return bad("set Track or TrackExcept, not both")
	}
	for _, lists := range [][]string{d.Track, d.TrackExcept, d.GroupBy} {
		for _, name := range lists {
			if seen[name] {
				return bad("attribute %q is a key column", name)
			}
		}
	}
	for name, c := range d.Compare {
		if c.Scale < 0 || c.Scale > 18 {
			return bad("attribute %q: scale %d out of range 0-18", name, c.Scale)
		}
	}
	if d.Granularity < 0 || d.Lateness < 0 || d.RetainTx < 0 {
		return bad("granularity, lateness and retention must not be negative")
	}
	if err := d.validateColumns(); err != nil {
		return bad("%v", err)
	}
	return nil
}

func newTable(def TableDef, id uint32) *Table {
	t := &Table{TableDef: def, ID: id, views: &viewCache{}, colIndex: columnIndex(def.Columns)}
	if len(def.Track) > 0 {
		t.tracked = map[string]bool{}
		for _, n := range def.Track {
			t.tracked[n] = true
		}
	}
	t.except = map[string]bool{}
	for _, n := range def.TrackExcept {
		t.except[n] = true
	}
	return t
}

// Tracked reports whether a change to attribute name makes a new version.
func (t *Table) Tracked(name string) bool {
	if t.tracked != nil {
		return t.tracked[name]
	}
	return !t.except[name]
}

// KeyError is returned for a key that does not fit the table's schema.
type KeyError struct {
	Table  string
	Key    Key
	Reason string
}

func (e *KeyError) Error() string {
	return fmt.Sprintf("bitempo: table %q: key %v: %s", e.Table, []any(e.Key), e.Reason)
}

// Is makes errors.Is(err, ErrKeyShape) true.
func (e *KeyError) Is(target error) bool { return target == ErrKeyShape }

// Key is a natural key: one value per key column, of the column's type (string,
// []byte, int64, uint64; int and int32 are accepted for int64 columns, uint and
// uint32 for uint64 columns).
type Key []any

// AppendKey appends the tuple encoding of key to dst after checking it against
// the table's key schema.
func (t *Table) AppendKey(dst []byte, key Key) ([]byte, error) {
	if len(key) != len(t.Key) {
		return dst, &KeyError{t.Name, key, fmt.Sprintf("has %d components, the table's key has %d", len(key), len(t.Key))}
	}
	for i, col := range t.Key {
		c, ok := coerceComponent(col.Type, key[i])
		if !ok {
			return dst, &KeyError{t.Name, key, fmt.Sprintf("component %d (%s) is %T, want %s", i, col.Name, key[i], col.Type)}
		}
		dst, _ = encoding.AppendComponent(dst, c)
	}
	return dst, nil
}

// AppendKeyPrefix is AppendKey for the first len(prefix) components only; it
// encodes the bounds of prefix scans.
func (t *Table) AppendKeyPrefix(dst []byte, prefix Key) ([]byte, error) {
	if len(prefix) > len(t.Key) {
		return dst, &KeyError{t.Name, prefix, fmt.Sprintf("prefix has %d components, the table's key has %d", len(prefix), len(t.Key))}
	}
	for i, v := range prefix {
		c, ok := coerceComponent(t.Key[i].Type, v)
		if !ok {
			return dst, &KeyError{t.Name, prefix, fmt.Sprintf("component %d (%s) is %T, want %s", i, t.Key[i].Name, v, t.Key[i].Type)}
		}
		dst, _ = encoding.AppendComponent(dst, c)
	}
	return dst, nil
}

// AppendKeyStringPrefix is AppendKeyPrefix with the last component of prefix,
// when its column is a String or Bytes column, encoded without its
// terminator (encoding.AppendComponentPrefix): the span of the result then
// holds the keys whose earlier components equal prefix's and whose component
// at that column starts with the last one as a string ("sku-1" selects sku-1,
// sku-10, sku-1a). An integer last component still matches whole.
func (t *Table) AppendKeyStringPrefix(dst []byte, prefix Key) ([]byte, error) {
	if len(prefix) == 0 {
		return dst, nil
	}
	n := len(prefix) - 1
	dst, err := t.AppendKeyPrefix(dst, prefix[:n])
	if err != nil {
		return dst, err
	}
	if n >= len(t.Key) {
		return dst, &KeyError{t.Name, prefix, fmt.Sprintf("prefix has %d components, the table's key has %d", len(prefix), len(t.Key))}
	}
	c, ok := coerceComponent(t.Key[n].Type, prefix[n])
	if !ok {
		return dst, &KeyError{t.Name, prefix, fmt.Sprintf("component %d (%s) is %T, want %s", n, t.Key[n].Name, prefix[n], t.Key[n].Type)}
	}
	return encoding.AppendComponentPrefix(dst, c)
}

// coerceComponent returns key component v as column type typ holds it, or ok
// false. A value already of that type is returned as is: boxing it again would
// allocate per key.
func coerceComponent(typ KeyType, v any) (any, bool) {
	switch typ {
	case String:
		_, ok := v.(string)
		return v, ok
	case Bytes:
		_, ok := v.([]byte)
		return v, ok
	case Int64:
		switch x := v.(type) {
		case int64:
			return v, true
		case int:
			return int64(x), true
		case int32:
			return int64(x), true
		}
	case Uint64:
		switch x := v.(type) {
		case uint64:
			return v, true
		case uint:
			return uint64(x), true
		case uint32:
			return uint64(x), true
		}
	}
	return nil, false
}

// DecodeKey decodes a stored tuple of this table and checks it against the schema.
func (t *Table) DecodeKey(tuple []byte) (Key, error) {
	key, rest, err := encoding.DecodeKeyPrefix(tuple, len(t.Key))
	if err == nil && len(rest) != 0 {
		err = fmt.Errorf("%d trailing bytes", len(rest))
	}
	if err == nil {
		for i, col := range t.Key {
			if _, ok := coerceComponent(col.Type, key[i]); !ok {
				err = fmt.Errorf("component %d is %T, want %s", i, key[i], col.Type)
				break
			}
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%w: table %q key %x: %v", ErrCorrupt, t.Name, tuple, err)
	}
	return Key(key), nil
}

// splitTuple splits b into the table's tuple and what follows it.
func (t *Table) splitTuple(b []byte) (tuple, rest []byte, err error) {
	rest, err = encoding.SkipKey(b, len(t.Key))
	if err != nil {
		return nil, nil, fmt.Errorf("%w: table %q key %x: %v", ErrCorrupt, t.Name, b, err)
	}
	return b[:len(b)-len(rest)], rest, nil
}

// String renders a key for messages and reports.
func (k Key) String() string {
	parts := make([]string, len(k))
	for i, c := range k {
		if b, ok := c.([]byte); ok {
			parts[i] = fmt.Sprintf("%x", b)
		} else {
			parts[i] = fmt.Sprint(c)
		}
	}
	return strings.Join(parts, "/")
}

func cloneDef(d TableDef) TableDef {
	d.Key = slices.Clone(d.Key)
	d.Track = slices.Clone(d.Track)
	d.TrackExcept = slices.Clone(d.TrackExcept)
	d.GroupBy = slices.Clone(d.GroupBy)
	d.Columns = slices.Clone(d.Columns)
	if d.Compare != nil {
		c := make(map[string]CompareOptions, len(d.Compare))
		for k, v := range d.Compare {
			c[k] = v
		}
		d.Compare = c
	}
	return d
}
