// Package ddtest holds the helpers shared by bitempo's datadriven scenario tests
// (txn/testdata, query/testdata): reading command arguments and writing times in
// the scenario files' notation, where valid and transaction times are plain
// integers and "-inf" / "+inf" stand for math.MinInt64 / math.MaxInt64.
package ddtest

import (
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

// FormatTime writes a time in the scenario files' notation.
func FormatTime(t int64) string {
	switch t {
	case math.MaxInt64:
		return "+inf"
	case math.MinInt64:
		return "-inf"
	}
	return strconv.FormatInt(t, 10)
}
