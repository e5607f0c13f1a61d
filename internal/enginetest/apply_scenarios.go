package enginetest

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// This file is the driver of the CDC apply scenarios (txn/testdata/apply; see
// TestApplyScenarios there for the commands). It lives here, not in package
// txn's tests, so that the same scenarios run on every engine (Run). It uses
// only txn's exported API.

// Driver runs one command of a scenario file on the store and returns its
// output; an error is printed as the command's output ("error: ...").
type Driver func(*store.DB, *datadriven.TestData) (string, error)

// NewApply returns a driver of the apply scenarios for one scenario file. The
// driver keeps the file's state: the table of the last table command (the
// default of a command's table argument) and the commit transaction of every
// batch applied (for versions as-of=B), so each file needs its own.
func NewApply() Driver {
	h := &applyScenario{batches: map[string]int64{}}
	return h.dispatch
}

type applyScenario struct {
	last    string           // table of the last table command
	batches map[string]int64 // batch id -> commit tx
}

func (h *applyScenario) dispatch(db *store.DB, d *datadriven.TestData) (string, error) {
	switch d.Cmd {
	case "table":
		return h.createTable(db, d)
	case "apply":
		return h.apply(db, d)
	case "versions":
		return h.versions(db, d)
	case "events":
		return h.events(db, d)
	case "put":
		return h.put(db, d)
	}
	return "", fmt.Errorf("%s: unknown command %q", d.Pos, d.Cmd)
}

func (h *applyScenario) table(db *store.DB, d *datadriven.TestData) (*store.Table, error) {
	name := h.last
	if d.HasArg("table") {
		name = arg(d, "table")
	}
	return db.Table(name)
}

// singleArg returns the one value of a command argument.
func singleArg(d *datadriven.TestData, a datadriven.CmdArg) (string, error) {
	if len(a.Vals) != 1 {
		return "", fmt.Errorf("%s: argument %q wants one value, has %d", d.Pos, a.Key, len(a.Vals))
	}
	return a.Vals[0], nil
}

// requiredArg returns the value of a command argument the command needs.
func requiredArg(d *datadriven.TestData, key string) (string, error) {
	if !d.HasArg(key) {
		return "", fmt.Errorf("%s: %s needs argument %q", d.Pos, d.Cmd, key)
	}
	return arg(d, key), nil
}

func (h *applyScenario) createTable(db *store.DB, d *datadriven.TestData) (string, error) {
	def := store.TableDef{Kind: store.Changes, Key: []store.KeyColumn{{Name: "id", Type: store.String}}, Axis: store.AxisInt}
	for _, a := range d.CmdArgs {
		var v string
		if len(a.Vals) > 0 {
			v = a.Vals[0]
		}
		var err error
		switch a.Key {
		case "name":
			def.Name, err = singleArg(d, a)
		case "mixed":
			def.MixedTypes = true
		case "kind":
			def.Kind, _ = store.ParseKind(v)
		case "key":
			def.Key = nil
			for _, v := range a.Vals {
				name, typ, _ := strings.Cut(v, ":")
				kt, err := store.ParseKeyType(typ)
				if err != nil {
					return "", fmt.Errorf("%s: %w", d.Pos, err)
				}
				def.Key = append(def.Key, store.KeyColumn{Name: name, Type: kt})
			}
		case "track":
			def.Track = a.Vals
		case "except":
			def.TrackExcept = a.Vals
		case "compare":
			def.Compare, err = parseCompare(d, a.Vals)
		case "ignore-nulls":
			def.IgnoreNulls = true
		case "granularity":
			if v == "day" {
				def.Granularity = int64(24 * time.Hour / time.Microsecond)
			} else {
				def.Granularity, err = strconv.ParseInt(v, 10, 64)
			}
		case "lateness":
			def.Lateness, err = strconv.ParseInt(v, 10, 64)
		case "axis":
			def.Axis, _ = store.ParseAxis(v)
		default:
			err = fmt.Errorf("unknown argument %q", a.Key)
		}
		if err != nil {
			return "", fmt.Errorf("%s: %w", d.Pos, err)
		}
	}
	if _, err := db.CreateTable(def); err != nil {
		return "", err
	}
	h.last = def.Name
	return "ok\n", nil
}

// parseCompare reads compare=(a:round2,b:trim:fold).
func parseCompare(d *datadriven.TestData, vals []string) (map[string]store.CompareOptions, error) {
	compare := map[string]store.CompareOptions{}
	for _, v := range vals {
		parts := strings.Split(v, ":")
		var c store.CompareOptions
		for _, o := range parts[1:] {
			switch {
			case o == "trim":
				c.Trim = true
			case o == "fold":
				c.FoldCase = true
			case strings.HasPrefix(o, "round"):
				c.Round = true
				c.Scale, _ = strconv.Atoi(strings.TrimPrefix(o, "round"))
			default:
				return nil, fmt.Errorf("%s: unknown compare option %q", d.Pos, o)
			}
		}
		compare[parts[0]] = c
	}
	return compare, nil
}

func (h *applyScenario) apply(db *store.DB, d *datadriven.TestData) (string, error) {
	tbl, err := h.table(db, d)
	if err != nil {
		return "", err
	}
	batch, err := requiredArg(d, "batch")
	if err != nil {
		return "", err
	}
	var events []txn.Event
	for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
		if line = strings.TrimSpace(line); line != "" {
			e, err := scenarioEvent(d, tbl, line)
			if err != nil {
				return "", err
			}
			events = append(events, e)
		}
	}
	res, err := txn.Apply(db, tbl.Name, batch, events)
	if err != nil {
		return "", err
	}
	if err := VerifyStore(db); err != nil {
		return "", fmt.Errorf("after apply: %w", err)
	}
	var b strings.Builder
	if res.Replayed {
		fmt.Fprintf(&b, "replayed: batch %s was applied at tx %d; nothing written\n", batch, res.Tx)
		return b.String(), nil
	}
	h.batches[batch] = res.Tx
	b.WriteString(formatResult(res))
	s, err := db.Snapshot()
	if err != nil {
		return "", err
	}
	defer s.Close()
	tuples, err := s.ChangesKeys(tbl)
	if err != nil {
		return "", err
	}
	for _, tuple := range tuples {
		recs, err := s.KeyRecords(tbl, tuple)
		if err != nil {
			return "", err
		}
		for _, r := range recs {
			if r.TxTo == res.Tx {
				fmt.Fprintf(&b, "- %s\n", formatAxisVersion(tbl, &r))
			}
		}
		for _, r := range recs {
			if r.TxFrom == res.Tx {
				fmt.Fprintf(&b, "+ %s\n", formatAxisVersion(tbl, &r))
			}
		}
	}
	return b.String(), nil
}

// formatResult prints the non-zero counts of a result in a fixed order.
func formatResult(res txn.ApplyResult) string {
	counts := []struct {
		name string
		n    int
	}{
		{"accepted", res.Accepted}, {"duplicates", res.Duplicates}, {"conflicts", res.Conflicts},
		{"collapsed", res.Collapsed}, {"tombstones", res.Tombstones}, {"compacted", res.Compacted},
		{"inserted", res.Inserted}, {"closed", res.Closed}, {"split", res.Split},
		{"merged", res.Merged}, {"updated", res.Updated}, {"removed", res.Removed},
	}
	parts := []string{fmt.Sprintf("tx %d:", res.Tx)}
	for _, c := range counts {
		if c.n != 0 {
			parts = append(parts, fmt.Sprintf("%s %d", c.name, c.n))
		}
	}
	return strings.Join(parts, " ") + "\n"
}

func (h *applyScenario) versions(db *store.DB, d *datadriven.TestData) (string, error) {
	tbl, err := h.table(db, d)
	if err != nil {
		return "", err
	}
	tx := store.Infinity
	if d.HasArg("as-of") {
		batch := arg(d, "as-of")
		var ok bool
		if tx, ok = h.batches[batch]; !ok {
			return "", fmt.Errorf("%s: batch %q was not applied", d.Pos, batch)
		}
	}
	s, err := db.Snapshot()
	if err != nil {
		return "", err
	}
	defer s.Close()
	tuples, err := s.ChangesKeys(tbl)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, tuple := range tuples {
		vs, err := s.KeyVersions(tbl, tuple, tx)
		if err != nil {
			return "", err
		}
		for _, v := range vs {
			fmt.Fprintf(&b, "%s\n", formatAxisVersion(tbl, &v))
		}
	}
	if b.Len() == 0 {
		return "no versions\n", nil
	}
	return b.String(), nil
}

func (h *applyScenario) events(db *store.DB, d *datadriven.TestData) (string, error) {
	tbl, err := h.table(db, d)
	if err != nil {
		return "", err
	}
	keyText, err := requiredArg(d, "key")
	if err != nil {
		return "", err
	}
	tuple, err := tbl.AppendKey(nil, scenarioKey(tbl, keyText))
	if err != nil {
		return "", err
	}
	s, err := db.Snapshot()
	if err != nil {
		return "", err
	}
	defer s.Close()
	var b strings.Builder
	if cp, ok, err := s.Checkpoint(tbl, tuple); err != nil {
		return "", err
	} else if ok && cp.Open {
		fmt.Fprintf(&b, "checkpoint through %s: open since %s %s\n", formatAxisTime(tbl, cp.Through), formatAxisTime(tbl, cp.From), formatAttrs(cp.Attrs))
	} else if ok {
		fmt.Fprintf(&b, "checkpoint through %s: nothing open\n", formatAxisTime(tbl, cp.Through))
	}
	for e, err := range s.KeyEvents(tbl, tuple, store.NegInfinity, store.NegInfinity) {
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "@%s#%d %s", formatAxisTime(tbl, e.At), e.Seq, e.Op)
		if e.Op == store.EventUpsert {
			fmt.Fprintf(&b, " %s", formatAttrs(e.Attrs))
		}
		b.WriteString("\n")
	}
	if b.Len() == 0 {
		return "no events\n", nil
	}
	return b.String(), nil
}

func (h *applyScenario) put(db *store.DB, d *datadriven.TestData) (string, error) {
	tbl, err := h.table(db, d)
	if err != nil {
		return "", err
	}
	var keyText, fromText, toText string
	for _, p := range []struct {
		name string
		v    *string
	}{{"key", &keyText}, {"from", &fromText}, {"to", &toText}} {
		if *p.v, err = requiredArg(d, p.name); err != nil {
			return "", err
		}
	}
	from, err := scenarioTime(d, fromText)
	if err != nil {
		return "", err
	}
	to, err := scenarioTime(d, toText)
	if err != nil {
		return "", err
	}
	attrs := store.Attrs{}
	for _, a := range d.CmdArgs {
		if !slices.Contains([]string{"table", "key", "from", "to"}, a.Key) {
			v, err := singleArg(d, a)
			if err != nil {
				return "", err
			}
			if attrs[a.Key], err = scenarioValue(d, v); err != nil {
				return "", err
			}
		}
	}
	_, err = txn.Update(db, func(tx *txn.Tx) error {
		return tx.Put(tbl.Name, scenarioKey(tbl, keyText), attrs, from, to)
	})
	if err != nil {
		return "", err
	}
	return "ok\n", nil
}

// scenarioEvent parses "KEY @AT[#SEQ] OP [name=value ...]".
func scenarioEvent(d *datadriven.TestData, tbl *store.Table, line string) (txn.Event, error) {
	fields := scenarioFields(line)
	if len(fields) < 3 || !strings.HasPrefix(fields[1], "@") {
		return txn.Event{}, fmt.Errorf("%s: bad event line %q", d.Pos, line)
	}
	e := txn.Event{Key: scenarioKey(tbl, fields[0])}
	at, seq, hasSeq := strings.Cut(fields[1][1:], "#")
	var err error
	if e.At, err = scenarioTime(d, at); err != nil {
		return txn.Event{}, err
	}
	if hasSeq && seq == "null" {
		e.SeqNull = true
	} else if hasSeq {
		if e.Seq, err = scenarioTime(d, seq); err != nil {
			return txn.Event{}, err
		}
	}
	switch fields[2] {
	case "upsert":
		e.Op = txn.OpUpsert
	case "delete":
		e.Op = txn.OpDelete
	default:
		e.Op = txn.Op(9) // an operation Apply does not know: a validation scenario
	}
	for _, f := range fields[3:] {
		name, value, ok := strings.Cut(f, "=")
		if !ok {
			return txn.Event{}, fmt.Errorf("%s: bad attribute %q", d.Pos, f)
		}
		if e.Attrs == nil {
			e.Attrs = store.Attrs{}
		}
		if value == "<chan>" {
			e.Attrs[name] = make(chan int) // a value no attribute can hold
			continue
		}
		if e.Attrs[name], err = scenarioValue(d, value); err != nil {
			return txn.Event{}, err
		}
	}
	return e, nil
}

// scenarioFields splits on spaces outside double quotes.
func scenarioFields(s string) []string {
	var out []string
	var cur strings.Builder
	quoted := false
	for _, r := range s {
		switch {
		case r == '"':
			quoted = !quoted
			cur.WriteRune(r)
		case r == ' ' && !quoted:
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

// scenarioKey parses a key written as components separated by "/"; "null" is
// a null component. A component that does not parse as its column's type is
// kept as a string, so that scenarios can show Apply's shape errors.
func scenarioKey(tbl *store.Table, s string) store.Key {
	var key store.Key
	for i, part := range strings.Split(s, "/") {
		switch {
		case part == "null":
			key = append(key, nil)
		case i < len(tbl.Key) && tbl.Key[i].Type == store.Int64:
			n, err := strconv.ParseInt(part, 10, 64)
			if err != nil {
				key = append(key, part) // a string where an int belongs: a shape error
				continue
			}
			key = append(key, n)
		default:
			key = append(key, part)
		}
	}
	return key
}

func scenarioValue(d *datadriven.TestData, s string) (any, error) {
	switch {
	case s == "null":
		return nil, nil
	case s == "true" || s == "false":
		return s == "true", nil
	case strings.HasPrefix(s, `"`):
		v, err := strconv.Unquote(s)
		if err != nil {
			return nil, fmt.Errorf("%s: bad string %s", d.Pos, s)
		}
		return v, nil
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, nil
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return f, nil
	}
	return s, nil
}

// scenarioTime reads an integer, -inf, +inf, or a date (2024-03-11 or
// 2024-03-11T10:00, UTC) as microseconds since the epoch.
func scenarioTime(d *datadriven.TestData, s string) (int64, error) {
	switch s {
	case "+inf":
		return store.Infinity, nil
	case "-inf":
		return store.NegInfinity, nil
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, nil
	}
	for _, layout := range []string{"2006-01-02T15:04", "2006-01-02"} {
		if ts, err := time.Parse(layout, s); err == nil {
			return ts.UnixMicro(), nil
		}
	}
	return 0, fmt.Errorf("%s: bad time %q", d.Pos, s)
}

// formatAxisTime writes a time in the notation of the table's axis: an
// integer, or a date (with the minute when it is not midnight).
func formatAxisTime(tbl *store.Table, v int64) string {
	switch v {
	case store.Infinity:
		return "+inf"
	case store.NegInfinity:
		return "-inf"
	}
	if tbl.Axis != store.AxisDate {
		return strconv.FormatInt(v, 10)
	}
	ts := time.UnixMicro(v).UTC()
	if v%int64(24*time.Hour/time.Microsecond) == 0 {
		return ts.Format("2006-01-02")
	}
	return ts.Format("2006-01-02T15:04")
}

func formatAxisVersion(tbl *store.Table, v *store.Version) string {
	return fmt.Sprintf("%s [%s, %s) sk %d %s", v.Key, formatAxisTime(tbl, v.ValidFrom), formatAxisTime(tbl, v.ValidTo), v.SK, formatAttrs(v.Attrs))
}

// formatAttrs renders attributes as the apply scenarios print them:
// {a=1 b="x y" c=null}, names sorted, strings quoted only where a bare word
// would read as another value.
func formatAttrs(a store.Attrs) string {
	parts := make([]string, 0, len(a))
	for _, name := range a.Names() {
		parts = append(parts, name+"="+formatValue(a[name]))
	}
	return "{" + strings.Join(parts, " ") + "}"
}

func formatValue(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		if x == "" || strings.ContainsAny(x, " \"{}") || x == "null" || x == "true" || x == "false" {
			return strconv.Quote(x)
		}
		if _, err := strconv.ParseFloat(x, 64); err == nil {
			return strconv.Quote(x)
		}
		return x
	case float64:
		s := strconv.FormatFloat(x, 'f', -1, 64)
		if !strings.ContainsAny(s, ".eEn") && !math.IsInf(x, 0) {
			s += ".0"
		}
		return s
	}
	return fmt.Sprint(v)
}
