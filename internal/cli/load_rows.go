package cli

import (
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"github.com/bitempo/bitempo/store"
)

// This file turns the rows of an input file into checked load rows: it assigns
// the file's columns to roles (key, times, sequence, operation, attributes),
// decides attribute types, and converts every cell, reporting the first problem
// of each row with its file, line and column.

// loadRow is one checked row of a load.
type loadRow struct {
	line     int
	key      store.Key
	tuple    string
	from, to int64 // modeVersions
	at, seq  int64 // modeUpserts, modeEvents
	del      bool
	attrs    store.Attrs
}

// loadPlan says what each column of the file is.
type loadPlan struct {
	mode        loadMode
	t           *store.Table
	keyCols     []int
	fromCol     int
	toCol       int
	atCol       int
	seqCol      int
	opCol       int
	attrCols    []int
	attrTypes   map[int]attrType // declared or inferred; absent: keep JSON types
	sentinel    int64
	hasSentinel bool
	deleteValue string
	// warnings are said on stderr before the load: columns whose inferred
	// type was changed to keep their values exact.
	warnings []string
}

// makePlan assigns the file's columns to roles and decides attribute types:
// a declared column's type, else the type the attribute established in the
// table (established, from DB.AttrTypes), else a --types type, else the type
// inferred from the file. Only attributes the table never held are inferred,
// so a dirty cell ("n/a" in a float64 column) is a bad row, never a new type.
func makePlan(in *input, t *store.Table, established map[string]store.ColumnType, mode loadMode, lf *loadFlags, types map[string]attrType) (*loadPlan, error) {
	p := &loadPlan{mode: mode, t: t, fromCol: -1, toCol: -1, atCol: -1, seqCol: -1, opCol: -1,
		attrTypes: map[int]attrType{}, deleteValue: lf.deleteValue}
	role := map[int]bool{}
	use := func(name, what string, dst *int) error {
		if name == "" {
			return nil
		}
		i, err := in.column(name, what)
		if err != nil {
			return err
		}
		if role[i] {
			return usagef("load: column %q is given two roles", name)
		}
		role[i], *dst = true, i
		return nil
	}
	for _, k := range t.Key {
		var i int
		if err := use(k.Name, "a key column of table "+t.Name, &i); err != nil {
			return nil, err
		}
		p.keyCols = append(p.keyCols, i)
	}
	for _, r := range []struct {
		name, what string
		dst        *int
	}{{lf.from, "--from", &p.fromCol}, {lf.to, "--to", &p.toCol}, {lf.at, "--at", &p.atCol},
		{lf.seq, "--seq", &p.seqCol}, {lf.opCol, "--delete-col/--op-col", &p.opCol}} {
		if err := use(r.name, r.what, r.dst); err != nil {
			return nil, err
		}
	}
	if lf.openSentinel != "" {
		s, err := parseDataTime(t.Axis, lf.openSentinel)
		if err != nil {
			return nil, usagef("--open-sentinel: %v", err)
		}
		p.sentinel, p.hasSentinel = s, true
	}
	for _, name := range lf.ignore {
		i, err := in.column(strings.TrimSpace(name), "--ignore")
		if err != nil {
			return nil, err
		}
		role[i] = true
	}
	attrIndex := map[string]int{}
	for i, name := range in.cols {
		if role[i] {
			continue
		}
		if slices.Contains(reservedColumns, name) {
			return nil, usagef("load: column %q of %s would be an attribute named like an output column; give it a role or --ignore %s", name, in.name, name)
		}
		p.attrCols = append(p.attrCols, i)
		attrIndex[name] = i
	}
	for name, typ := range types {
		i, ok := attrIndex[name]
		if !ok {
			return nil, usagef("--types names %q, which is not an attribute column of %s", name, in.name)
		}
		if col, declared := t.Column(name); declared && !typesAgree(col.Type, typ) {
			return nil, usagef("--types %s=%s: table %s declares column %s as %s; leave it out of --types or give %s=%s",
				name, typ, t.Name, name, col.Type, name, col.Type)
		}
		p.attrTypes[i] = typ
	}
	// A Parquet TIMESTAMP or DATE attribute column holds times, a DECIMAL one
	// exact decimals: they load as such without --types (which still
	// overrides them).
	for _, c := range in.parquet {
		i, ok := attrIndex[c.name]
		if _, given := types[c.name]; !ok || given {
			continue
		}
		switch {
		case c.typ == "TIMESTAMP" || c.typ == "DATE":
			p.attrTypes[i] = typeTime
		case c.precision > 0:
			p.attrTypes[i] = store.DecimalType(c.precision, c.scale)
		}
	}
	if t.MixedTypes {
		established = nil // the table lets its undeclared attributes change type
	}
	// The table's own types come last and win: a declared column is read as
	// its type, an established attribute as the type it established.
	for name, i := range attrIndex {
		if col, declared := t.Column(name); declared {
			p.attrTypes[i] = col.Type
		} else if typ, ok := established[name]; ok {
			given, isGiven := types[name]
			if isGiven && !typesAgree(typ, given) && !widensTo(given, typ) {
				return nil, usagef("--types %s=%s: attribute %s of table %s holds %s values (the type its first value established); give %s=%s or leave it out",
					name, given, name, t.Name, typ, name, typ)
			}
			if !isGiven {
				p.attrTypes[i] = typ
			}
		}
	}
	for _, i := range p.attrCols {
		if _, declared := p.attrTypes[i]; declared {
			continue
		}
		if in.stats != nil { // a streamed file: its columns were summed up in a first pass
			if typ, ok := p.inferStreamed(in, i); ok {
				p.attrTypes[i] = typ
			}
			continue
		}
		if in.isJSON {
			values := make([]any, len(in.rows))
			for r := range in.rows {
				values[r] = in.rows[r].vals[i]
			}
			if typ, ok := inferJSONType(values); ok {
				if typ == typeFloat64 {
					typ = p.keepExact(in, i, typ, func(r int) string {
						n, _ := values[r].(json.Number)
						return n.String()
					})
				}
				p.attrTypes[i] = typ
			}
			continue
		}
		texts := make([]string, len(in.rows))
		for r := range in.rows {
			texts[r] = in.rows[r].vals[i].(string)
		}
		typ := inferType(texts)
		if typ == typeFloat64 {
			typ = p.keepExact(in, i, typ, func(r int) string { return texts[r] })
		}
		p.attrTypes[i] = typ
	}
	return p, nil
}

// typesAgree reports whether cells read as --types type given are values of a
// column declared as declared: the same type, or decimal for a decimal column
// (whose precision and scale the declaration decides).
func typesAgree(declared, given attrType) bool {
	return declared == given || declared.Kind == store.TypeDecimal && given.Kind == store.TypeDecimal ||
		declared.Kind == store.TypeDate && given.Kind == store.TypeTime
}

// widensTo reports whether values of type from are stored exactly as type to
// (an int64 into a float64 or decimal attribute).
func widensTo(from, to attrType) bool {
	return from.Kind == store.TypeInt64 && (to.Kind == store.TypeFloat64 || to.Kind == store.TypeDecimal || to.Kind == store.TypeUint64)
}

// keepExact returns typeString, with a warning, when a number of column c that
// the inferred type float64 would read cannot be held exactly by a float64
// (12345678901234567890.5 would come back as 12345678901234567000); the
// column's values are then kept as the text of the file. A declared
// --types COL=float64 rounds to the nearest float64 as asked
// (docs/design/load-exact-decimals.md).
func (p *loadPlan) keepExact(in *input, c int, typ attrType, text func(r int) string) attrType {
	for r := range in.rows {
		s := text(r)
		if s == "" || exactFloat(s) {
			continue
		}
		p.warnings = append(p.warnings, fmt.Sprintf("%s line %d, column %q: %s cannot be held exactly by a float64, so the column is kept as text (--types %s=float64 rounds it instead)",
			in.name, in.rows[r].line, in.cols[c], s, in.cols[c]))
		return typeString
	}
	return typ
}

// exactFloat reports whether the decimal number s reads back from a float64 as
// the same number (1.50 does; 0.1 does, as the shortest text of its float64;
// 12345678901234567890.5 does not).
func exactFloat(s string) bool {
	s = strings.TrimSpace(s)
	digits := 0
	for _, c := range s {
		switch {
		case c >= '0' && c <= '9':
			digits++
		case c == 'e' || c == 'E':
			digits = 100 // an exponent: decide exactly below
		}
	}
	if digits <= 15 { // 15 significant decimal digits always survive a float64
		return true
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return false
	}
	want, ok := new(big.Rat).SetString(s)
	if !ok {
		return false
	}
	got, ok := new(big.Rat).SetString(strconv.FormatFloat(f, 'g', -1, 64))
	return ok && want.Cmp(got) == 0
}

// reservedColumns are the columns every version output has; an attribute of the
// same name would make them ambiguous.
var reservedColumns = []string{"valid_from", "valid_to", "sk", "tx_from", "tx_to"}

// parseDataTime parses a time from a data file: like a flag, but without "now".
func parseDataTime(axis store.Axis, s string) (int64, error) {
	if strings.TrimSpace(s) == "now" {
		return 0, fmt.Errorf(`"now" is not a time in a data file`)
	}
	return parseAxisValue(axis, s)
}

// convert checks and converts every row; rows that do not fit are returned as
// errors, one per row (its first problem).
func (p *loadPlan) convert(in *input) ([]loadRow, []*rowError) {
	var rows []loadRow
	var bad []*rowError
	for i := range in.rows {
		r, err := p.row(in, &in.rows[i])
		if err != nil {
			bad = append(bad, err)
			continue
		}
		rows = append(rows, r)
	}
	return rows, bad
}

func (p *loadPlan) row(in *input, r *inputRow) (loadRow, *rowError) {
	out := loadRow{line: r.line, attrs: store.Attrs{}}
	out.key = make(store.Key, len(p.keyCols))
	for k, c := range p.keyCols {
		v := r.vals[c]
		if v == nil || v == absent || in.text(v) == "" {
			return out, in.cellErr(r, c, fmt.Errorf("missing key"))
		}
		comp, err := parseKeyComponent(p.t.Key[k], in.text(v))
		if err != nil {
			return out, in.cellErr(r, c, err)
		}
		out.key[k] = comp
	}
	tuple, err := p.t.AppendKey(nil, out.key)
	if err != nil {
		return out, &rowError{file: in.name, line: r.line, err: err}
	}
	out.tuple = string(tuple)
	timeCell := func(c int, empty int64) (int64, *rowError) {
		s := in.text(r.vals[c])
		if s == "" {
			if empty == 0 {
				return 0, in.cellErr(r, c, fmt.Errorf("missing time"))
			}
			return empty, nil
		}
		t, err := parseDataTime(p.t.Axis, s)
		if err != nil {
			return 0, in.cellErr(r, c, err)
		}
		return t, nil
	}
	var rerr *rowError
	switch p.mode {
	case modeVersions:
		if out.from, rerr = timeCell(p.fromCol, store.NegInfinity); rerr != nil {
			return out, rerr
		}
		if out.to, rerr = timeCell(p.toCol, store.Infinity); rerr != nil {
			return out, rerr
		}
		if p.hasSentinel && out.to == p.sentinel {
			out.to = store.Infinity
		}
		if out.from >= out.to {
			return out, in.cellErr(r, p.toCol, fmt.Errorf("valid period [%s, %s) is empty or inverted",
				formatAxisValue(p.t.Axis, out.from), formatAxisValue(p.t.Axis, out.to)))
		}
	default:
		if out.at, rerr = timeCell(p.atCol, 0); rerr != nil {
			return out, rerr
		}
		if p.seqCol >= 0 {
			s := in.text(r.vals[p.seqCol])
			n, err := convertText(typeInt64, s)
			if err != nil || n == nil {
				if err == nil {
					err = fmt.Errorf("missing sequence number")
				}
				return out, in.cellErr(r, p.seqCol, err)
			}
			out.seq = n.(int64)
		}
		if p.opCol >= 0 {
			out.del = in.text(r.vals[p.opCol]) == p.deleteValue
		}
	}
	for _, c := range p.attrCols {
		v := r.vals[c]
		if v == absent {
			continue
		}
		typ, typed := p.attrTypes[c]
		var val any
		var err error
		switch {
		case !in.isJSON:
			val, err = convertText(typ, v.(string))
		case typed:
			val, err = convertJSON(typ, v)
		default:
			val, err = jsonNative(v, typeFloat64)
		}
		if err != nil {
			return out, in.cellErr(r, c, err)
		}
		out.attrs[in.cols[c]] = val
	}
	return out, nil
}
