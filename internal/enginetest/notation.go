package enginetest

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/cockroachdb/datadriven"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/internal/ddtest"
	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// This file is the scenario notation every driver reads and writes: one
// parser per rule (table definitions, keys, values, attributes, times, command
// arguments, operation and event lines) and one writer of times and of
// attributes, so that a word means the same in every scenario family. Where
// the families' files spell a rule differently, the difference is a named
// parameter (a key separator, a clock layout, a value writer).

var (
	arg     = ddtest.Arg
	fmtTime = ddtest.FormatTime
)

// errNotation marks text a scenario file spells wrong: a malformed time, value,
// attribute, operation or event line, or an unknown table argument.
var errNotation = errors.New("enginetest: bad scenario notation")

func notationErrorf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{errNotation}, args...)...)
}

// parseTableDef reads a table definition from a command's arguments over def,
// the family's defaults: table=T or name=T; key=col:type,...; kind, axis,
// mixed, ignore-nulls; track, except and group lists; compare=a:round2|trim,
// b:fold (options after a ":" or "|"); lateness and granularity (ticks, or
// "day"). A list is written a,b or (a,b).
func parseTableDef(d *datadriven.TestData, def store.TableDef) (store.TableDef, error) {
	for _, a := range d.CmdArgs {
		list := splitList(a.Vals)
		v := strings.Join(a.Vals, ",")
		var err error
		switch a.Key {
		case "table", "name":
			def.Name = v
		case "key":
			def.Key, err = parseKeyColumns(list)
		case "kind":
			def.Kind, err = store.ParseKind(v)
		case "axis":
			def.Axis, err = store.ParseAxis(v)
		case "mixed":
			def.MixedTypes = true
		case "ignore-nulls":
			def.IgnoreNulls = true
		case "track":
			def.Track = list
		case "except":
			def.TrackExcept = list
		case "group":
			def.GroupBy = list
		case "compare":
			def.Compare, err = parseCompare(list)
		case "lateness":
			def.Lateness, err = parseTime(v)
		case "granularity":
			if v == "day" {
				def.Granularity = int64(24 * time.Hour / time.Microsecond)
			} else {
				def.Granularity, err = parseTime(v)
			}
		default:
			err = notationErrorf("unknown table argument %q", a.Key)
		}
		if err != nil {
			return store.TableDef{}, err
		}
	}
	return def, nil
}

// splitList flattens the values of a list argument: a,b and (a,b) alike.
func splitList(vals []string) []string {
	var list []string
	for _, v := range vals {
		list = append(list, strings.Split(v, ",")...)
	}
	return list
}

func parseKeyColumns(specs []string) ([]store.KeyColumn, error) {
	cols := make([]store.KeyColumn, 0, len(specs))
	for _, spec := range specs {
		name, typ, _ := strings.Cut(spec, ":")
		kt, err := store.ParseKeyType(typ)
		if err != nil {
			return nil, err
		}
		cols = append(cols, store.KeyColumn{Name: name, Type: kt})
	}
	return cols, nil
}

// parseCompare reads the compare specs a:round2|trim and b:trim:fold.
func parseCompare(specs []string) (map[string]store.CompareOptions, error) {
	compare := map[string]store.CompareOptions{}
	for _, spec := range specs {
		name, opts, _ := strings.Cut(spec, ":")
		var c store.CompareOptions
		for _, o := range strings.FieldsFunc(opts, func(r rune) bool { return r == ':' || r == '|' }) {
			switch {
			case o == "trim":
				c.Trim = true
			case o == "fold":
				c.FoldCase = true
			case strings.HasPrefix(o, "round"):
				c.Round = true
				scale, err := strconv.Atoi(strings.TrimPrefix(o, "round"))
				if err != nil {
					return nil, notationErrorf("compare option %q", o)
				}
				c.Scale = scale
			default:
				return nil, notationErrorf("unknown compare option %q", o)
			}
		}
		compare[name] = c
	}
	return compare, nil
}

// Key separators: the apply scenarios (txn/testdata/apply) write a key's
// components o1/2, the other families o1,2. Both spellings are what their
// files say, so the separator is the family's choice.
const (
	keySep      = ","
	applyKeySep = "/"
)

// parseKey reads a key of table written with keySep; "" is no key (nil).
func parseKey(db *store.DB, table, s string) (store.Key, error) {
	if s == "" {
		return nil, nil
	}
	t, err := db.Table(table)
	if err != nil {
		return nil, err
	}
	return tableKey(t, s, keySep), nil
}

// tableKey splits s at sep into components typed by the table's key columns;
// "null" is a null component. A component that does not parse as its column's
// type, or one beyond the schema's, is kept as a string, so that scenarios can
// show the store's shape errors.
func tableKey(t *store.Table, s, sep string) store.Key {
	var key store.Key
	for i, part := range strings.Split(s, sep) {
		var c any = part
		switch {
		case part == "null":
			c = nil
		case i >= len(t.Key):
		case t.Key[i].Type == store.Int64:
			if n, err := strconv.ParseInt(part, 10, 64); err == nil {
				c = n
			}
		case t.Key[i].Type == store.Uint64:
			if n, err := strconv.ParseUint(part, 10, 64); err == nil {
				c = n
			}
		case t.Key[i].Type == store.Bytes:
			c = []byte(part)
		}
		key = append(key, c)
	}
	return key
}

// parseValue reads an attribute value or a group key: null, true, false, an
// integer, a float, a "quoted string", t:RFC3339 (a time.Time), d:DECIMAL (an
// encoding.Decimal as written); any other word is a string. Two words stand
// for values no attribute can hold: unencodable (a struct{}) and <chan> (a
// chan int); the periods and the apply scenarios print the rejected type, so
// each keeps its own.
func parseValue(s string) (any, error) {
	switch {
	case s == "null":
		return nil, nil
	case s == "true" || s == "false":
		return s == "true", nil
	case s == "unencodable":
		return struct{}{}, nil
	case s == "<chan>":
		return make(chan int), nil
	case strings.HasPrefix(s, `"`):
		u, err := strconv.Unquote(s)
		if err != nil {
			return nil, notationErrorf("bad string %s", s)
		}
		return u, nil
	case strings.HasPrefix(s, "t:"):
		tm, err := time.Parse(time.RFC3339Nano, s[2:])
		if err != nil {
			return nil, notationErrorf("bad time value %q", s)
		}
		return tm, nil
	case strings.HasPrefix(s, "d:"):
		dec, err := encoding.ParseDecimal(s[2:])
		if err != nil {
			return nil, notationErrorf("bad decimal %q: %v", s, err)
		}
		return dec, nil
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, nil
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return f, nil
	}
	return s, nil
}

// parseAttrs reads name=value attributes separated by spaces or lines.
func parseAttrs(s string) (store.Attrs, error) {
	return attrsOf(splitFields(s))
}

func attrsOf(fields []string) (store.Attrs, error) {
	attrs := store.Attrs{}
	for _, f := range fields {
		name, value, ok := strings.Cut(f, "=")
		if !ok {
			return nil, notationErrorf("bad attribute %q (want name=value)", f)
		}
		v, err := parseValue(value)
		if err != nil {
			return nil, err
		}
		attrs[name] = v
	}
	return attrs, nil
}

// splitFields splits s at white space outside double quotes.
func splitFields(s string) []string {
	var out []string
	var cur strings.Builder
	quoted := false
	for _, r := range s {
		switch {
		case r == '"':
			quoted = !quoted
			cur.WriteRune(r)
		case unicode.IsSpace(r) && !quoted:
			if cur.Len() > 0 {
				out = append(out, cur.String())
				cur.Reset()
			}
		default:
			cur.WriteRune(r)
		}
	}
	if cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out
}

// parseTime reads a time: an integer, -inf, +inf (inf), or a UTC date
// (2024-03-11, 2024-03-11T10:00, 2024-03-11T10:00:05.5) as microseconds since
// the epoch.
func parseTime(s string) (int64, error) {
	switch s {
	case "+inf", "inf":
		return store.Infinity, nil
	case "-inf":
		return store.NegInfinity, nil
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, nil
	}
	for _, layout := range []string{"2006-01-02", "2006-01-02T15:04", "2006-01-02T15:04:05"} {
		if tm, err := time.Parse(layout, s); err == nil {
			return tm.UnixMicro(), nil
		}
	}
	return 0, notationErrorf("bad time %q", s)
}

// timeArg reads the time argument key of a command, def when it has none.
func timeArg(d *datadriven.TestData, key string, def int64) (int64, error) {
	if v := arg(d, key); v != "" {
		return parseTime(v)
	}
	return def, nil
}

// requiredArg returns the value of a command argument the command needs.
func requiredArg(d *datadriven.TestData, key string) (string, error) {
	if !d.HasArg(key) {
		return "", notationErrorf("%s needs argument %q", d.Cmd, key)
	}
	return arg(d, key), nil
}

// requiredTime reads the time argument key the command needs.
func requiredTime(d *datadriven.TestData, key string) (int64, error) {
	v, err := requiredArg(d, key)
	if err != nil {
		return 0, err
	}
	return parseTime(v)
}

// periodArgs reads the from and to arguments a command needs.
func periodArgs(d *datadriven.TestData) (from, to int64, err error) {
	if from, err = requiredTime(d, "from"); err != nil {
		return 0, 0, err
	}
	to, err = requiredTime(d, "to")
	return from, to, err
}

// asOfArg reads the valid and tx arguments of a read (tx: latest when absent).
func asOfArg(d *datadriven.TestData) (query.AsOf, error) {
	valid, err := requiredTime(d, "valid")
	if err != nil {
		return query.AsOf{}, err
	}
	tx, err := timeArg(d, "tx", query.Latest)
	return query.AsOf{Valid: valid, Tx: tx}, err
}

// projectArg reads project=a,b: the attributes a read decodes (nil: all).
func projectArg(d *datadriven.TestData) []string {
	if v := arg(d, "project"); v != "" {
		return strings.Split(v, ",")
	}
	return nil
}

// changesArgs reads the since (default 0) and until (default latest)
// arguments of a changes read.
func changesArgs(d *datadriven.TestData) (since, until int64, err error) {
	if since, err = timeArg(d, "since", 0); err != nil {
		return 0, 0, err
	}
	until, err = timeArg(d, "until", query.Latest)
	return since, until, err
}

// parseOps reads the operations of a txn command, one a line:
// "upsert table=T key=K at=3 city=Oslo". The op's own arguments are table,
// key, from, to, at and reason; the rest are its attributes (its Input), where
// a "quoted string" may hold spaces.
func parseOps(input string) ([]*datadriven.TestData, error) {
	var ops []*datadriven.TestData
	for _, line := range strings.Split(strings.TrimSpace(input), "\n") {
		fields := splitFields(line)
		if len(fields) == 0 {
			return nil, notationErrorf("empty operation")
		}
		op := &datadriven.TestData{Cmd: fields[0]}
		var attrs []string
		for _, f := range fields[1:] {
			name, value, _ := strings.Cut(f, "=")
			switch name {
			case "table", "key", "from", "to", "at", "reason":
				op.CmdArgs = append(op.CmdArgs, datadriven.CmdArg{Key: name, Vals: []string{value}})
			default:
				attrs = append(attrs, f)
			}
		}
		op.Input = strings.Join(attrs, "\n")
		ops = append(ops, op)
	}
	return ops, nil
}

// parseEvent reads a CDC event line "KEY @AT[#SEQ] OP [name=value ...]" of
// table t, its key written with sep. OP is upsert or delete; any other word
// is an operation Apply does not know (a validation scenario); SEQ may be
// null.
func parseEvent(t *store.Table, line, sep string) (txn.Event, error) {
	fields := splitFields(line)
	if len(fields) < 3 || !strings.HasPrefix(fields[1], "@") {
		return txn.Event{}, notationErrorf("bad event line %q", line)
	}
	e := txn.Event{Key: tableKey(t, fields[0], sep)}
	at, seq, hasSeq := strings.Cut(fields[1][1:], "#")
	var err error
	if e.At, err = parseTime(at); err != nil {
		return txn.Event{}, err
	}
	if hasSeq && seq == "null" {
		e.SeqNull = true
	} else if hasSeq {
		if e.Seq, err = parseTime(seq); err != nil {
			return txn.Event{}, err
		}
	}
	switch fields[2] {
	case "upsert":
		e.Op = txn.OpUpsert
	case "delete":
		e.Op = txn.OpDelete
	default:
		e.Op = txn.Op(9)
	}
	if len(fields) > 3 {
		if e.Attrs, err = attrsOf(fields[3:]); err != nil {
			return txn.Event{}, err
		}
	}
	return e, nil
}

// parseEvents reads the event lines of input, skipping blank ones.
func parseEvents(t *store.Table, input, sep string) ([]txn.Event, error) {
	var events []txn.Event
	for _, line := range strings.Split(strings.TrimSpace(input), "\n") {
		if line = strings.TrimSpace(line); line == "" {
			continue
		}
		e, err := parseEvent(t, line, sep)
		if err != nil {
			return nil, err
		}
		events = append(events, e)
	}
	return events, nil
}

// Clock layouts of a date-time after its date: the apply scenarios print
// minutes (their events fall on whole minutes), the aggregation scenarios
// microseconds (their windows end at .999999). Each is what its family's files
// expect.
const (
	minuteClock = "T15:04"
	microClock  = "T15:04:05.999999"
)

// formatAxisTime writes a valid time on axis: -inf, +inf, an integer on an int
// axis, else a UTC date followed by clock when it is not midnight.
func formatAxisTime(v int64, axis store.Axis, clock string) string {
	switch {
	case v == store.Infinity:
		return "+inf"
	case v == store.NegInfinity:
		return "-inf"
	case axis == store.AxisInt:
		return strconv.FormatInt(v, 10)
	}
	ts := time.UnixMicro(v).UTC()
	if v%int64(24*time.Hour/time.Microsecond) == 0 {
		return ts.Format("2006-01-02")
	}
	return ts.Format("2006-01-02" + clock)
}

// joinAttrs writes attributes as name=value words, names sorted, each value
// in the notation format gives it (each family prints values its own way).
func joinAttrs(a store.Attrs, format func(any) string) string {
	parts := make([]string, 0, len(a))
	for _, name := range a.Names() {
		parts = append(parts, name+"="+format(a[name]))
	}
	return strings.Join(parts, " ")
}

// plainValue writes a value as %v does: the periods and read scenarios'
// notation.
func plainValue(v any) string { return fmt.Sprint(v) }
