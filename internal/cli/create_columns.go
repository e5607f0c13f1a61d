package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/store"
)

// This file infers a column declaration from a sample of a data file, for
// create --columns-from: once, at create, so that later files are read by the
// declaration instead of by what each file happens to hold.

// columnsSampleRows is how many rows of a file --columns-from looks at.
const columnsSampleRows = 10_000

// decimalHeadroom is the number of integer digits an inferred decimal column
// gets beyond the largest value of the sample (a price of 232.10 in the
// sample makes decimal(8,2): values up to 999999.99).
const decimalHeadroom = 3

var errSampleFull = errors.New("sample full")

// inferColumns reads up to columnsSampleRows rows of the file at path and
// returns a declaration of every column that is not in skip (the key columns
// and the columns a load will give a role), nullable, in the file's order.
func inferColumns(ctx context.Context, path, format string, skip []string) ([]store.Column, error) {
	in := &input{name: path, isJSON: format != "csv", isParquet: format == "parquet"}
	var rows []inputRow
	err := in.scanFile(ctx, path, func(r inputRow) error {
		rows = append(rows, r)
		if len(rows) >= columnsSampleRows {
			return errSampleFull
		}
		return nil
	})
	if err != nil && !errors.Is(err, errSampleFull) {
		return nil, err
	}
	if len(in.bad) > 0 {
		return nil, fmt.Errorf("--columns-from: %w", in.bad[0])
	}
	pq := map[string]pqReadColumn{}
	for _, c := range in.parquet {
		pq[c.name] = c
	}
	var cols []store.Column
	for i, name := range in.cols {
		if slices.Contains(skip, name) || slices.Contains(reservedColumns, name) {
			continue
		}
		var vals []any
		for _, r := range rows {
			if i < len(r.vals) && r.vals[i] != absent && r.vals[i] != nil {
				vals = append(vals, r.vals[i])
			}
		}
		typ := inferColumnType(vals, in.isJSON)
		if c, ok := pq[name]; ok {
			typ = parquetColumnType(c, typ)
		}
		cols = append(cols, store.Column{Name: name, Type: typ, Nullable: true})
	}
	if len(cols) == 0 {
		return nil, usagef("--columns-from %s: the file has no column besides the key and time columns", path)
	}
	return cols, nil
}

// parquetColumnType is the declared type of a Parquet column: its logical type
// where it has one a column can declare, else the type its values suggest.
func parquetColumnType(c pqReadColumn, fromValues store.ColumnType) store.ColumnType {
	switch {
	case c.precision > 0:
		return store.DecimalType(c.precision, c.scale)
	case c.typ == "TIMESTAMP":
		return typeTime
	case c.typ == "DATE":
		return typeDate
	case c.typ == "UINT64" || c.typ == "UINT32":
		return typeUint64
	case c.typ == "INT32" || c.typ == "INT64":
		return typeInt64
	case c.typ == "FLOAT" || c.typ == "DOUBLE":
		return typeFloat64
	case c.typ == "BOOLEAN":
		return typeBool
	case c.typ == "BYTE_ARRAY":
		return typeBytes
	case c.typ == "STRING":
		return typeString
	}
	return fromValues
}

// inferColumnType picks the type of a column from its non-null sample values
// (CSV text, or JSON values): int64 when every value is an integer; a
// decimal(P,S) when every value is a plain number, at least one has a point,
// and all those with a point have the same S digits after it; float64 for
// other numbers; bool; date for YYYY-MM-DD; time for timestamps; else string.
// A JSON string is read as text would be only for dates and times: "20.00" in
// a JSON file is a string.
func inferColumnType(vals []any, isJSON bool) store.ColumnType {
	var texts []string
	numbers, strs, bools := 0, 0, 0
	for _, v := range vals {
		switch x := v.(type) {
		case string:
			if x == "" {
				continue
			}
			texts = append(texts, x)
			strs++
		case json.Number:
			texts = append(texts, x.String())
			numbers++
		case bool:
			texts = append(texts, fmt.Sprint(x))
			bools++
		}
	}
	switch {
	case len(texts) == 0:
		return typeString
	case bools == len(texts):
		return typeBool
	case numbers > 0 && strs+bools > 0:
		return typeString // a JSON column mixing numbers and others
	}
	jsonStrings := isJSON && strs > 0
	if !jsonStrings {
		if t, ok := numericType(texts); ok {
			return t
		}
	}
	if all(texts, func(s string) bool { _, err := time.Parse(time.DateOnly, strings.TrimSpace(s)); return err == nil }) {
		return typeDate
	}
	if all(texts, func(s string) bool { _, err := parseInstant(s); return err == nil }) {
		return typeTime
	}
	if !jsonStrings && all(texts, isBool) {
		return typeBool
	}
	return typeString
}

// numericType is int64, decimal(P,S) or float64 when every text is a number.
func numericType(texts []string) (store.ColumnType, bool) {
	if all(texts, isInteger) {
		return typeInt64, true
	}
	if !all(texts, isDecimal) {
		return store.ColumnType{}, false
	}
	scale, intDigits := -1, 1
	for _, s := range texts {
		d, err := encoding.ParseDecimal(strings.TrimSpace(s))
		if err != nil || strings.ContainsAny(s, "eE") {
			return typeFloat64, true
		}
		if strings.Contains(s, ".") {
			if scale >= 0 && d.Scale() != scale {
				return typeFloat64, true
			}
			scale = d.Scale()
		}
		intDigits = max(intDigits, d.Digits()-d.Scale())
	}
	if scale <= 0 {
		return typeFloat64, true
	}
	p := min(intDigits+scale+decimalHeadroom, encoding.MaxDecimalDigits)
	if p-scale < intDigits {
		return typeFloat64, true
	}
	return store.DecimalType(p, scale), true
}

func all(texts []string, ok func(string) bool) bool {
	for _, s := range texts {
		if !ok(s) {
			return false
		}
	}
	return true
}
