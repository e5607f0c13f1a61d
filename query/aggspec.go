package query

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// This file declares temporal aggregations: the operations, their windows, the
// names of the features they produce and the spec strings tools parse.

// ErrInvalidAgg: an aggregation spec that cannot be computed (unknown operation,
// missing or unexpected input, bad window, duplicate feature name).
var ErrInvalidAgg = errors.New("bitempo: invalid aggregation")

// AggError describes an invalid aggregation spec.
type AggError struct {
	// Spec is the spec as written (ParseAgg) or rendered (Agg.String).
	Spec   string
	Reason string
}

func (e *AggError) Error() string {
	return fmt.Sprintf("bitempo: aggregation %q: %s", e.Spec, e.Reason)
}

// Is makes errors.Is(err, ErrInvalidAgg) true.
func (e *AggError) Is(target error) bool { return target == ErrInvalidAgg }

// AggOp is an aggregation operation over the versions active at a time.
type AggOp uint8

// Aggregation operations. COUNT and EXISTS take no input attribute; the others
// take one.
const (
	// AggCount counts the versions in the set (nulls included); 0 for an empty set.
	AggCount AggOp = iota + 1
	// AggExists reports whether the set is non-empty.
	AggExists
	// AggSum adds the non-null input values: an int64 (or a uint64 above
	// math.MaxInt64) while every value is an integer, a float64 once one is a
	// float, an exact encoding.Decimal once one is a decimal (see the package
	// doc).
	AggSum
	// AggAvg is AggSum as a float64 divided by the number of non-null values;
	// over decimals, the exact quotient as a Decimal rounded half to even.
	AggAvg
	// AggMin is the least non-null input value (see Aggregate for the order).
	AggMin
	// AggMax is the greatest non-null input value.
	AggMax
	// AggCountDistinct counts the distinct non-null input values; 0 for an empty set.
	AggCountDistinct
	// AggLatest is the input value of the version with the greatest valid_from.
	AggLatest
	// AggEarliest is the input value of the version with the least valid_from.
	AggEarliest
)

var opNames = [...]string{AggCount: "count", AggExists: "exists", AggSum: "sum", AggAvg: "avg", AggMin: "min", AggMax: "max",
	AggCountDistinct: "count_distinct", AggLatest: "latest", AggEarliest: "earliest"}

// String returns the operation's name as it appears in feature names
// ("count_distinct").
func (op AggOp) String() string {
	if op >= AggCount && int(op) < len(opNames) {
		return opNames[op]
	}
	return fmt.Sprintf("AggOp(%d)", uint8(op))
}

// ParseAggOp parses an operation name, case-insensitively ("SUM", "count_distinct").
func ParseAggOp(s string) (AggOp, error) {
	for op := AggCount; int(op) < len(opNames); op++ {
		if strings.EqualFold(s, opNames[op]) {
			return op, nil
		}
	}
	return 0, &AggError{Spec: s, Reason: "unknown operation (want count, exists, sum, avg, min, max, count_distinct, latest or earliest)"}
}

// takesInput reports whether the operation reads an input attribute.
func (op AggOp) takesInput() bool { return op != AggCount && op != AggExists }

// WindowUnit is the unit of a window length.
type WindowUnit uint8

// Window units. Their lengths are in valid-time ticks of time-typed axes
// (microseconds).
const (
	Minutes WindowUnit = iota + 1
	Hours
	Days
)

var unitTicks = [...]int64{Minutes: 60_000_000, Hours: 3_600_000_000, Days: 86_400_000_000}
var unitNames = [...]string{Minutes: "m", Hours: "h", Days: "d"}

// Window is a window length: N minutes, hours or days.
type Window struct {
	N    int64
	Unit WindowUnit
}

// String renders the window as in feature names: "7d", "12h", "30m".
func (w Window) String() string {
	if w.Unit < Minutes || w.Unit > Days {
		return fmt.Sprintf("%d?", w.N)
	}
	return fmt.Sprintf("%d%s", w.N, unitNames[w.Unit])
}

// Ticks returns the window's length in microseconds.
func (w Window) Ticks() int64 { return w.N * unitTicks[w.Unit] }

func (w Window) validate() error {
	if w.Unit < Minutes || w.Unit > Days {
		return fmt.Errorf("window %s: unknown unit", w)
	}
	if w.N <= 0 || w.N > math.MaxInt64/unitTicks[w.Unit] {
		return fmt.Errorf("window %s: length must be positive and at most %d%s", w, math.MaxInt64/unitTicks[w.Unit], unitNames[w.Unit])
	}
	return nil
}

// ParseWindow parses "7d", "12h" or "30m".
func ParseWindow(s string) (Window, error) {
	if len(s) < 2 {
		return Window{}, &AggError{Spec: s, Reason: "window must be a number followed by m, h or d"}
	}
	var w Window
	switch s[len(s)-1] {
	case 'm', 'M':
		w.Unit = Minutes
	case 'h', 'H':
		w.Unit = Hours
	case 'd', 'D':
		w.Unit = Days
	default:
		return Window{}, &AggError{Spec: s, Reason: "window unit must be m (minutes), h (hours) or d (days)"}
	}
	n, err := strconv.ParseInt(s[:len(s)-1], 10, 64)
	if err != nil || s[0] == '+' || s[0] == '-' {
		return Window{}, &AggError{Spec: s, Reason: "window length must be a positive decimal integer"}
	}
	w.N = n
	if err := w.validate(); err != nil {
		return Window{}, &AggError{Spec: s, Reason: err.Error()}
	}
	return w, nil
}

// Agg declares one aggregation: an operation over an input attribute of the
// versions active at the requested time, optionally restricted to windows. A
// window of length d keeps the active versions whose window column (valid_from
// when WindowColumn is empty) lies in (ts - d, ts]. An Agg with windows produces
// one feature per window; without, one feature over every active version.
type Agg struct {
	Op AggOp
	// Input is the attribute aggregated; empty for AggCount and AggExists, required
	// by every other operation.
	Input string
	// WindowColumn names a time attribute (a time.Time, or an int64 of
	// microseconds since the epoch) windows filter on instead of valid_from; it
	// needs Windows.
	WindowColumn string
	Windows      []Window
}

// ParseAgg parses a spec of the form OP[(INPUT)][@WINDOW_COLUMN][:WINDOW,...],
// e.g. "sum(amount):7d,30d", "avg(amount)", "count", "exists",
// "count_distinct(status)", "count@birth_ts:10950d". OP is case-insensitive;
// "count()" is "count". The result is validated.
func ParseAgg(spec string) (Agg, error) {
	bad := func(reason string) (Agg, error) { return Agg{}, &AggError{Spec: spec, Reason: reason} }
	rest := strings.TrimSpace(spec)
	var a Agg
	if i := strings.IndexByte(rest, ':'); i >= 0 {
		for _, ws := range strings.Split(rest[i+1:], ",") {
			w, err := ParseWindow(strings.TrimSpace(ws))
			if err != nil {
				return bad(err.(*AggError).Reason + fmt.Sprintf(" (in %q)", ws))
			}
			a.Windows = append(a.Windows, w)
		}
		rest = rest[:i]
	}
	if i := strings.IndexByte(rest, '@'); i >= 0 {
		a.WindowColumn = strings.TrimSpace(rest[i+1:])
		if a.WindowColumn == "" {
			return bad("empty window column after @")
		}
		rest = rest[:i]
	}
	if i := strings.IndexByte(rest, '('); i >= 0 {
		if !strings.HasSuffix(rest, ")") {
			return bad("input must be written OP(INPUT)")
		}
		a.Input = strings.TrimSpace(rest[i+1 : len(rest)-1])
		rest = rest[:i]
	}
	op, err := ParseAggOp(strings.TrimSpace(rest))
	if err != nil {
		return bad(err.(*AggError).Reason)
	}
	a.Op = op
	if err := a.check(); err != nil {
		return bad(err.Error())
	}
	return a, nil
}

// String renders the aggregation in ParseAgg's form.
func (a Agg) String() string {
	var b strings.Builder
	b.WriteString(a.Op.String())
	if a.Input != "" {
		fmt.Fprintf(&b, "(%s)", a.Input)
	}
	if a.WindowColumn != "" {
		fmt.Fprintf(&b, "@%s", a.WindowColumn)
	}
	for i, w := range a.Windows {
		if i == 0 {
			b.WriteByte(':')
		} else {
			b.WriteByte(',')
		}
		b.WriteString(w.String())
	}
	return b.String()
}

// Validate returns an *AggError (ErrInvalidAgg) naming the spec if the
// aggregation cannot be computed.
func (a Agg) Validate() error {
	if err := a.check(); err != nil {
		return &AggError{Spec: a.String(), Reason: err.Error()}
	}
	return nil
}

func (a Agg) check() error {
	switch {
	case a.Op < AggCount || int(a.Op) >= len(opNames):
		return fmt.Errorf("unknown operation %d", a.Op)
	case a.Op.takesInput() && a.Input == "":
		return fmt.Errorf("%s needs an input attribute, e.g. %s(amount)", a.Op, a.Op)
	case !a.Op.takesInput() && a.Input != "":
		return fmt.Errorf("%s takes no input attribute", a.Op)
	case a.WindowColumn != "" && len(a.Windows) == 0:
		return fmt.Errorf("window column %q without windows", a.WindowColumn)
	}
	for _, name := range []string{a.Input, a.WindowColumn} {
		if strings.ContainsAny(name, "()@:, \t\n") {
			return fmt.Errorf("attribute name %q contains white space or one of ( ) @ : ,", name)
		}
	}
	seen := map[Window]bool{}
	for _, w := range a.Windows {
		if err := w.validate(); err != nil {
			return err
		}
		if seen[w] {
			return fmt.Errorf("window %s given twice", w)
		}
		seen[w] = true
	}
	return nil
}

// Names returns the names of the features the aggregation produces, one per
// window (or one without windows): {input}_{op}[_by_{window_column}][_{n}{unit}],
// e.g. amount_sum_7d, count, status_count_distinct, count_by_birth_ts_10950d.
func (a Agg) Names() []string {
	base := a.Op.String()
	if a.Input != "" {
		base = a.Input + "_" + base
	}
	if a.WindowColumn != "" {
		base += "_by_" + a.WindowColumn
	}
	if len(a.Windows) == 0 {
		return []string{base}
	}
	names := make([]string, len(a.Windows))
	for i, w := range a.Windows {
		names[i] = base + "_" + w.String()
	}
	return names
}

// FeatureNames validates aggs and returns the names of their features in
// order: each Agg's Names in turn. Two features with the same name are an error.
func FeatureNames(aggs []Agg) ([]string, error) {
	if len(aggs) == 0 {
		return nil, &AggError{Spec: "", Reason: "no aggregations"}
	}
	var names []string
	seen := map[string]string{}
	for _, a := range aggs {
		if err := a.Validate(); err != nil {
			return nil, err
		}
		for _, n := range a.Names() {
			if prev, dup := seen[n]; dup {
				return nil, &AggError{Spec: a.String(), Reason: fmt.Sprintf("feature %q is also produced by %q", n, prev)}
			}
			seen[n] = a.String()
			names = append(names, n)
		}
	}
	return names, nil
}
