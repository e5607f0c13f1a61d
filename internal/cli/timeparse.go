package cli

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/bitempo/bitempo/store"
)

// dayTicks is one day in microseconds, the tick of time and date axes.
const dayTicks = 86_400_000_000

// timeLayout prints instants: RFC 3339 in UTC, fractional seconds kept to the
// microsecond and trailing zeros dropped.
const timeLayout = "2006-01-02T15:04:05.999999Z07:00"

// dateLayout prints and parses the days of a date axis.
const dateLayout = "2006-01-02"

// nowFunc is the clock behind "now"; a variable so that tests could fix it.
var nowFunc = func() time.Time { return time.Now() }

// parseInstant parses an instant written as RFC 3339 (with or without fractional
// seconds), as a date (midnight UTC), or as RFC 3339 without a zone (read as UTC).
// It returns microseconds since the Unix epoch.
func parseInstant(s string) (int64, error) {
	s = strings.TrimSpace(s)
	for _, layout := range []string{time.RFC3339Nano, dateLayout, "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999Z07:00", "2006-01-02 15:04:05.999999999"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UnixMicro(), nil
		}
	}
	return 0, fmt.Errorf("%q is not a time (want RFC 3339, e.g. 2024-03-11T09:30:00Z, or a date 2024-03-11)", s)
}

// parseAxisValue parses a valid time of a table with the given axis: RFC 3339 on a
// time axis, YYYY-MM-DD on a date axis, an integer on an int axis. "now" is the
// current time (today on a date axis; on an int axis, where the clock means
// nothing, the last representable instant, which reads the open-ended version).
func parseAxisValue(axis store.Axis, s string) (int64, error) {
	s = strings.TrimSpace(s)
	if s == "now" {
		switch axis {
		case store.AxisDate:
			return nowFunc().UTC().Truncate(24 * time.Hour).UnixMicro(), nil
		case store.AxisInt:
			return store.Infinity - 1, nil
		}
		return nowFunc().UnixMicro(), nil
	}
	switch axis {
	case store.AxisDate:
		t, err := time.Parse(dateLayout, s)
		if err != nil {
			return 0, fmt.Errorf("%q is not a date (want YYYY-MM-DD)", s)
		}
		return t.UnixMicro(), nil
	case store.AxisInt:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%q is not an integer", s)
		}
		return n, nil
	}
	return parseInstant(s)
}

// formatAxisValue prints a valid time of a table with the given axis. Both open
// ends (±∞) print as the empty string.
func formatAxisValue(axis store.Axis, t int64) string {
	if t == store.Infinity || t == store.NegInfinity {
		return ""
	}
	switch axis {
	case store.AxisInt:
		return strconv.FormatInt(t, 10)
	case store.AxisDate:
		if t%dayTicks == 0 {
			return time.UnixMicro(t).UTC().Format(dateLayout)
		}
	}
	return formatInstant(t)
}

// formatInstant prints microseconds since the epoch as RFC 3339 UTC.
func formatInstant(t int64) string {
	if t == store.Infinity || t == store.NegInfinity {
		return ""
	}
	return time.UnixMicro(t).UTC().Format(timeLayout)
}

// parseTx parses a transaction time flag: RFC 3339, a date (its midnight), "now",
// "latest" (the newest commit) or a raw tick count as printed by `dump`. It
// returns 0 for latest, which the query layer reads as the newest commit.
func parseTx(s string) (int64, error) {
	switch strings.TrimSpace(s) {
	case "", "latest":
		return 0, nil
	case "now":
		return nowFunc().UnixMicro(), nil
	}
	if n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64); err == nil {
		if n <= 0 {
			return 0, fmt.Errorf("transaction time %d must be positive", n)
		}
		return n, nil
	}
	return parseInstant(s)
}

// parseGranularity turns --granularity (day, hour, minute, second, or a tick
// count) into ticks for the table's axis.
func parseGranularity(axis store.Axis, s string) (int64, error) {
	units := map[string]int64{"day": dayTicks, "hour": 3_600_000_000, "minute": 60_000_000, "second": 1_000_000}
	if u, ok := units[s]; ok {
		if axis == store.AxisInt {
			return 0, fmt.Errorf("granularity %q needs a time or date axis", s)
		}
		if axis == store.AxisDate && u != dayTicks {
			return 0, fmt.Errorf("a date axis has day granularity already; %q is finer", s)
		}
		return u, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("granularity %q: want day, hour, minute, second or a positive tick count", s)
	}
	return n, nil
}
