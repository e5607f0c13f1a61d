package enginetest

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

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

// createTable runs the table command: parseTableDef's arguments over the
// apply scenarios' defaults (a changes table keyed by id:string on an int
// axis).
func (h *applyScenario) createTable(db *store.DB, d *datadriven.TestData) (string, error) {
	def, err := parseTableDef(d, store.TableDef{Kind: store.Changes, Key: []store.KeyColumn{{Name: "id", Type: store.String}}, Axis: store.AxisInt})
	if err != nil {
		return "", err
	}
	if _, err := db.CreateTable(def); err != nil {
		return "", err
	}
	h.last = def.Name
	return "ok\n", nil
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
	events, err := parseEvents(tbl, d.Input, applyKeySep)
	if err != nil {
		return "", err
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
	err = eachChangesKey(db, tbl, func(s *store.Snapshot, tuple []byte) error {
		recs, err := s.KeyRecords(tbl, tuple)
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
		return err
	})
	if err != nil {
		return "", err
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
	var b strings.Builder
	err = eachChangesKey(db, tbl, func(s *store.Snapshot, tuple []byte) error {
		vs, err := s.KeyVersions(tbl, tuple, tx)
		for _, v := range vs {
			fmt.Fprintf(&b, "%s\n", formatAxisVersion(tbl, &v))
		}
		return err
	})
	if err != nil {
		return "", err
	}
	if b.Len() == 0 {
		return "no versions\n", nil
	}
	return b.String(), nil
}

func (h *applyScenario) events(db *store.DB, d *datadriven.TestData) (string, error) {
	tbl, key, err := h.tableKey(db, d)
	if err != nil {
		return "", err
	}
	tuple, err := tbl.AppendKey(nil, key)
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
		fmt.Fprintf(&b, "checkpoint through %s: open since %s %s\n", applyTime(tbl, cp.Through), applyTime(tbl, cp.From), formatAttrs(cp.Attrs))
	} else if ok {
		fmt.Fprintf(&b, "checkpoint through %s: nothing open\n", applyTime(tbl, cp.Through))
	}
	for e, err := range s.KeyEvents(tbl, tuple, store.NegInfinity, store.NegInfinity) {
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "@%s#%d %s", applyTime(tbl, e.At), e.Seq, e.Op)
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

// tableKey returns the command's table (h.table) and the key argument it
// needs, written with applyKeySep.
func (h *applyScenario) tableKey(db *store.DB, d *datadriven.TestData) (*store.Table, store.Key, error) {
	tbl, err := h.table(db, d)
	if err != nil {
		return nil, nil, err
	}
	k, err := requiredArg(d, "key")
	if err != nil {
		return nil, nil, err
	}
	return tbl, tableKey(tbl, k, applyKeySep), nil
}

func (h *applyScenario) put(db *store.DB, d *datadriven.TestData) (string, error) {
	tbl, key, err := h.tableKey(db, d)
	if err != nil {
		return "", err
	}
	from, to, err := periodArgs(d)
	if err != nil {
		return "", err
	}
	var fields []string
	for _, a := range d.CmdArgs {
		if !slices.Contains([]string{"table", "key", "from", "to"}, a.Key) {
			v, err := singleArg(d, a)
			if err != nil {
				return "", err
			}
			fields = append(fields, a.Key+"="+v)
		}
	}
	attrs, err := attrsOf(fields)
	if err != nil {
		return "", err
	}
	_, err = txn.Update(db, func(tx *txn.Tx) error {
		return tx.Put(tbl.Name, key, attrs, from, to)
	})
	if err != nil {
		return "", err
	}
	return "ok\n", nil
}

// applyTime writes a time of tbl as the apply scenarios print it: minutes.
func applyTime(tbl *store.Table, v int64) string {
	return formatAxisTime(v, tbl.Axis, minuteClock)
}

func formatAxisVersion(tbl *store.Table, v *store.Version) string {
	return fmt.Sprintf("%s [%s, %s) sk %d %s", v.Key, applyTime(tbl, v.ValidFrom), applyTime(tbl, v.ValidTo), v.SK, formatAttrs(v.Attrs))
}

// formatAttrs renders attributes as the apply scenarios print them:
// {a=1 b="x y" c=null}, names sorted, strings quoted only where a bare word
// would read as another value.
func formatAttrs(a store.Attrs) string {
	return "{" + joinAttrs(a, formatValue) + "}"
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
