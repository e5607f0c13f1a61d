// Package ddtest holds the helpers shared by bitempo's datadriven scenario tests
// (txn/testdata, query/testdata): reading command arguments and writing times in
// the scenario files' notation, where valid and transaction times are plain
// integers and "-inf" / "+inf" stand for math.MinInt64 / math.MaxInt64.
package ddtest

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/cockroachdb/datadriven"
)

// Arg returns the value of argument key of a command (values joined by commas),
// or "" when the command does not have it.
func Arg(d *datadriven.TestData, key string) string {
	for _, a := range d.CmdArgs {
		if a.Key == key && len(a.Vals) > 0 {
			return strings.Join(a.Vals, ",")
		}
	}
	return ""
}

// ParseTime reads a time: an integer, "-inf", or "+inf" ("inf"). A malformed time
// is a bug in a scenario file, so it panics with the offending text.
func ParseTime(s string) int64 {
	switch s {
	case "+inf", "inf":
		return math.MaxInt64
	case "-inf":
		return math.MinInt64
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		panic(fmt.Sprintf("bad time %q", s))
	}
	return n
}

// FormatTime writes a time as ParseTime reads it.
func FormatTime(t int64) string {
	switch t {
	case math.MaxInt64:
		return "+inf"
	case math.MinInt64:
		return "-inf"
	}
	return strconv.FormatInt(t, 10)
}
