package txn

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bitempo/bitempo/store"
	"github.com/cockroachdb/datadriven"
)

// TestApplyScenarios runs the CDC scenarios in testdata/apply. Each file is a
// commented specification of one rule of Apply; run with -rewrite to regenerate
// the expected output after a deliberate change.
//
// Commands:
//
//	table name=T [kind=periods] [key=(id:string,n:int64)] [track=(a,b)] [except=(a)]
//	      [compare=(a:round2,b:trim:fold)] [ignore-nulls] [granularity=day|N] [lateness=N] [axis=date]
//	apply [table=T] batch=B      one event per input line:
//	      KEY @AT[#SEQ|#null] upsert|delete [name=value ...]
//	      prints the result, then the records the commit retired (-) and asserted (+)
//	versions [table=T] [as-of=B] the current versions, or those as of batch B's commit
//	events [table=T] key=K       the key's event log and checkpoint
//	put table=T key=K from=F to=T [name=value ...]    a periods-table write
//
// Values: 5 (int), 1.5 (float), null, true/false, "quoted string", or a bare
// word (string). Times: integers, or dates 2024-03-11 / 2024-03-11T10:00 on a
// table with axis=date. Every apply is followed by store.Verify.
func TestApplyScenarios(t *testing.T) {
	datadriven.Walk(t, "testdata/apply", func(t *testing.T, path string) {
		h := newScenario(t)
		defer h.db.Close()
		datadriven.RunTest(t, path, h.run)
	})
}

type scenario struct {
	db      *store.DB
	last    string           // table of the last table command
	batches map[string]int64 // batch id -> commit tx
}

func newScenario(t *testing.T) *scenario {
	db, err := store.Open("", store.Options{InMemory: true, Clock: func() int64 { return 0 }})
	if err != nil {
		t.Fatal(err)
	}
	return &scenario{db: db, batches: map[string]int64{}}
}

func (h *scenario) run(t *testing.T, d *datadriven.TestData) string {
	out, err := h.dispatch(t, d)
	if err != nil {
		return "error: " + err.Error() + "\n"
	}
	return out
}

func (h *scenario) dispatch(t *testing.T, d *datadriven.TestData) (string, error) {
	switch d.Cmd {
	case "table":
		return h.createTable(t, d)
	case "apply":
		return h.apply(t, d)
	case "versions":
		return h.versions(t, d)
	case "events":
		return h.events(t, d)
	case "put":
		return h.put(t, d)
	}
	t.Fatalf("%s: unknown command %q", d.Pos, d.Cmd)
	return "", nil
}

func (h *scenario) table(t *testing.T, d *datadriven.TestData) *store.Table {
	name := h.last
	d.MaybeScanArgs(t, "table", &name)
	tbl, err := h.db.Table(name)
	if err != nil {
		t.Fatalf("%s: %v", d.Pos, err)
	}
	return tbl
}

func (h *scenario) createTable(t *testing.T, d *datadriven.TestData) (string, error) {
	def := store.TableDef{Kind: store.Changes, Key: []store.KeyColumn{{Name: "id", Type: store.String}}, Axis: store.AxisInt}
	for _, arg := range d.CmdArgs {
		switch arg.Key {
		case "name":
			def.Name = arg.SingleVal(t)
		case "kind":
			def.Kind, _ = store.ParseKind(arg.SingleVal(t))
		case "key":
			def.Key = nil
			for _, v := range arg.Vals {
				name, typ, _ := strings.Cut(v, ":")
				kt, err := store.ParseKeyType(typ)
				if err != nil {
					t.Fatalf("%s: %v", d.Pos, err)
				}
				def.Key = append(def.Key, store.KeyColumn{Name: name, Type: kt})
			}
		case "track":
			def.Track = arg.Vals
		case "except":
			def.TrackExcept = arg.Vals
		case "compare":
			def.Compare = map[string]store.CompareOptions{}
			for _, v := range arg.Vals {
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
						t.Fatalf("%s: unknown compare option %q", d.Pos, o)
					}
				}
				def.Compare[parts[0]] = c
			}
		case "ignore-nulls":
			def.IgnoreNulls = true
		case "granularity":
			if arg.SingleVal(t) == "day" {
				def.Granularity = int64(24 * time.Hour / time.Microsecond)
			} else {
				arg.Scan(t, 0, &def.Granularity)
			}
		case "lateness":
			arg.Scan(t, 0, &def.Lateness)
		case "axis":
			def.Axis, _ = store.ParseAxis(arg.SingleVal(t))
		default:
			t.Fatalf("%s: unknown argument %q", d.Pos, arg.Key)
		}
	}
	if _, err := h.db.CreateTable(def); err != nil {
		return "", err
	}
	h.last = def.Name
	return "ok\n", nil
}

func (h *scenario) apply(t *testing.T, d *datadriven.TestData) (string, error) {
	tbl := h.table(t, d)
	var batch string
	d.ScanArgs(t, "batch", &batch)
	var events []Event
	for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
		if line = strings.TrimSpace(line); line != "" {
			events = append(events, scenarioEvent(t, d, tbl, line))
		}
	}
	res, err := Apply(h.db, tbl.Name, batch, events)
	if err != nil {
		return "", err
	}
	rep, err := store.Verify(h.db)
	if err != nil || !rep.OK() {
		t.Fatalf("%s: verify after apply: %v %v", d.Pos, err, rep)
	}
	var b strings.Builder
	if res.Replayed {
		fmt.Fprintf(&b, "replayed: batch %s was applied at tx %d; nothing written\n", batch, res.Tx)
		return b.String(), nil
	}
	h.batches[batch] = res.Tx
	b.WriteString(formatResult(res))
	s, err := h.db.Snapshot()
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
				fmt.Fprintf(&b, "- %s\n", formatVersion(tbl, &r))
			}
		}
		for _, r := range recs {
			if r.TxFrom == res.Tx {
				fmt.Fprintf(&b, "+ %s\n", formatVersion(tbl, &r))
			}
		}
	}
	return b.String(), nil
}

// formatResult prints the non-zero counts of a result in a fixed order.
func formatResult(res ApplyResult) string {
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

func (h *scenario) versions(t *testing.T, d *datadriven.TestData) (string, error) {
	tbl := h.table(t, d)
	tx := store.Infinity
	if d.HasArg("as-of") {
		var batch string
		d.ScanArgs(t, "as-of", &batch)
		var ok bool
		if tx, ok = h.batches[batch]; !ok {
			t.Fatalf("%s: batch %q was not applied", d.Pos, batch)
		}
	}
	s, err := h.db.Snapshot()
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
			fmt.Fprintf(&b, "%s\n", formatVersion(tbl, &v))
		}
	}
	if b.Len() == 0 {
		return "no versions\n", nil
	}
	return b.String(), nil
}

func (h *scenario) events(t *testing.T, d *datadriven.TestData) (string, error) {
	tbl := h.table(t, d)
	var keyText string
	d.ScanArgs(t, "key", &keyText)
	tuple, err := tbl.AppendKey(nil, scenarioKey(t, d, tbl, keyText))
	if err != nil {
		return "", err
	}
	s, err := h.db.Snapshot()
	if err != nil {
		return "", err
	}
	defer s.Close()
	var b strings.Builder
	if cp, ok, err := s.Checkpoint(tbl, tuple); err != nil {
		return "", err
	} else if ok && cp.Open {
		fmt.Fprintf(&b, "checkpoint through %s: open since %s %s\n", formatTime(tbl, cp.Through), formatTime(tbl, cp.From), formatAttrs(cp.Attrs))
	} else if ok {
		fmt.Fprintf(&b, "checkpoint through %s: nothing open\n", formatTime(tbl, cp.Through))
	}
	for e, err := range s.KeyEvents(tbl, tuple, store.NegInfinity, store.NegInfinity) {
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "@%s#%d %s", formatTime(tbl, e.At), e.Seq, e.Op)
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

func (h *scenario) put(t *testing.T, d *datadriven.TestData) (string, error) {
	tbl := h.table(t, d)
	var keyText, from, to string
	d.ScanArgs(t, "key", &keyText)
	d.ScanArgs(t, "from", &from)
	d.ScanArgs(t, "to", &to)
	attrs := store.Attrs{}
	for _, arg := range d.CmdArgs {
		if !slices.Contains([]string{"table", "key", "from", "to"}, arg.Key) {
			attrs[arg.Key] = scenarioValue(t, d, arg.SingleVal(t))
		}
	}
	_, err := Update(h.db, func(tx *Tx) error {
		return tx.Put(tbl.Name, scenarioKey(t, d, tbl, keyText), attrs, scenarioTime(t, d, from), scenarioTime(t, d, to))
	})
	if err != nil {
		return "", err
	}
	return "ok\n", nil
}

// scenarioEvent parses "KEY @AT[#SEQ] OP [name=value ...]".
func scenarioEvent(t *testing.T, d *datadriven.TestData, tbl *store.Table, line string) Event {
	fields := scenarioFields(line)
	if len(fields) < 3 || !strings.HasPrefix(fields[1], "@") {
		t.Fatalf("%s: bad event line %q", d.Pos, line)
	}
	e := Event{Key: scenarioKey(t, d, tbl, fields[0])}
	at, seq, hasSeq := strings.Cut(fields[1][1:], "#")
	e.At = scenarioTime(t, d, at)
	if hasSeq && seq == "null" {
		e.SeqNull = true
	} else if hasSeq {
		e.Seq = scenarioTime(t, d, seq)
	}
	switch fields[2] {
	case "upsert":
		e.Op = OpUpsert
	case "delete":
		e.Op = OpDelete
	default:
		e.Op = Op(9)
	}
	for _, f := range fields[3:] {
		name, value, ok := strings.Cut(f, "=")
		if !ok {
			t.Fatalf("%s: bad attribute %q", d.Pos, f)
		}
		if e.Attrs == nil {
			e.Attrs = store.Attrs{}
		}
		if value == "<chan>" {
			e.Attrs[name] = make(chan int) // a value no attribute can hold
			continue
		}
		e.Attrs[name] = scenarioValue(t, d, value)
	}
	return e
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

// scenarioKey parses a key written as components separated by "/"; "null" is a
// null component.
func scenarioKey(t *testing.T, d *datadriven.TestData, tbl *store.Table, s string) store.Key {
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

func scenarioValue(t *testing.T, d *datadriven.TestData, s string) any {
	switch {
	case s == "null":
		return nil
	case s == "true" || s == "false":
		return s == "true"
	case strings.HasPrefix(s, `"`):
		v, err := strconv.Unquote(s)
		if err != nil {
			t.Fatalf("%s: bad string %s", d.Pos, s)
		}
		return v
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return f
	}
	return s
}

func scenarioTime(t *testing.T, d *datadriven.TestData, s string) int64 {
	switch s {
	case "+inf":
		return store.Infinity
	case "-inf":
		return store.NegInfinity
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n
	}
	for _, layout := range []string{"2006-01-02T15:04", "2006-01-02"} {
		if ts, err := time.Parse(layout, s); err == nil {
			return ts.UnixMicro()
		}
	}
	t.Fatalf("%s: bad time %q", d.Pos, s)
	return 0
}

func formatTime(tbl *store.Table, v int64) string {
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

func formatVersion(tbl *store.Table, v *store.Version) string {
	return fmt.Sprintf("%s [%s, %s) sk %d %s", v.Key, formatTime(tbl, v.ValidFrom), formatTime(tbl, v.ValidTo), v.SK, formatAttrs(v.Attrs))
}

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

// TestApplyErrorsAreTyped checks the error types a caller matches on.
func TestApplyErrorsAreTyped(t *testing.T) {
	db := openApplyDB(t)
	mustCreate(t, db, store.TableDef{Name: "c", Kind: store.Changes, Key: []store.KeyColumn{{Name: "id", Type: store.String}}, Lateness: 10})
	mustCreate(t, db, store.TableDef{Name: "p", Key: []store.KeyColumn{{Name: "id", Type: store.String}}})
	up := func(key any, at int64) Event {
		return Event{Key: store.Key{key}, At: at, Op: OpUpsert, Attrs: store.Attrs{"a": int64(1)}}
	}
	cases := []struct {
		name   string
		events []Event
		index  int
		is     []error
	}{
		{"null key", []Event{up("k", 1), up(nil, 2)}, 1, []error{ErrInvalidEvent}},
		{"short key", []Event{{Key: store.Key{}, At: 1, Op: OpUpsert}}, 0, []error{ErrInvalidEvent, store.ErrKeyShape}},
		{"wrong type", []Event{up("k", 1), up("k", 2), up(int64(3), 3)}, 2, []error{ErrInvalidEvent, store.ErrKeyShape}},
		{"null seq", []Event{{Key: store.Key{"k"}, At: 1, SeqNull: true, Op: OpDelete}}, 0, []error{ErrInvalidEvent}},
		{"no op", []Event{{Key: store.Key{"k"}, At: 1}}, 0, []error{ErrInvalidEvent}},
		{"bad attr", []Event{{Key: store.Key{"k"}, At: 1, Op: OpUpsert, Attrs: store.Attrs{"a": struct{}{}}}}, 0, []error{ErrInvalidEvent, ErrInvalidAttr}},
		{"key column attr", []Event{{Key: store.Key{"k"}, At: 1, Op: OpUpsert, Attrs: store.Attrs{"id": "x"}}}, 0, []error{ErrInvalidEvent, ErrInvalidAttr}},
		{"at +inf", []Event{{Key: store.Key{"k"}, At: store.Infinity, Op: OpDelete}}, 0, []error{ErrInvalidEvent}},
	}
	for _, c := range cases {
		_, err := Apply(db, "c", "b", c.events)
		var ee *EventError
		if !errors.As(err, &ee) || ee.Index != c.index {
			t.Errorf("%s: got %v, want an EventError for event %d", c.name, err, c.index)
			continue
		}
		for _, target := range c.is {
			if !errors.Is(err, target) {
				t.Errorf("%s: %v does not match %v", c.name, err, target)
			}
		}
	}
	if db.LastTx() != 0 {
		t.Fatalf("rejected batches committed something: last tx %d", db.LastTx())
	}

	if _, err := Apply(db, "c", "b1", []Event{up("k", 100)}); err != nil {
		t.Fatal(err)
	}
	_, err := Apply(db, "c", "b2", []Event{up("j", 1), up("k", 95), up("k", 89), up("k", 80)})
	var ee *EventError
	if !errors.As(err, &ee) || ee.Index != 2 || !errors.Is(err, ErrTooLate) {
		t.Fatalf("too late: got %v, want ErrTooLate naming event 2", err)
	}
	if _, err := Apply(db, "c", "", []Event{up("k", 1)}); !errors.Is(err, ErrInvalidBatch) {
		t.Fatalf("empty batch id: got %v", err)
	}
	if _, err := Apply(db, "p", "b", []Event{up("k", 1)}); !errors.Is(err, ErrWrongKind) {
		t.Fatalf("Apply on a periods table: got %v", err)
	}
	if _, err := Apply(db, "nope", "b", nil); !errors.Is(err, store.ErrUnknownTable) {
		t.Fatalf("Apply on an unknown table: got %v", err)
	}
	_, err = Update(db, func(tx *Tx) error {
		for _, err := range []error{
			tx.Put("c", store.Key{"k"}, nil, 1, 2),
			tx.Delete("c", store.Key{"k"}, 1, 2),
			func() error { _, err := tx.Upsert("c", store.Key{"k"}, nil, 1); return err }(),
			func() error { _, err := tx.DeleteAt("c", store.Key{"k"}, 1); return err }(),
		} {
			if !errors.Is(err, ErrWrongKind) {
				return fmt.Errorf("periods write on a changes table: got %v, want ErrWrongKind", err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestApplyInOneTransaction applies several batches in one transaction: each
// sees the events, batch ids and versions the earlier ones wrote.
func TestApplyInOneTransaction(t *testing.T) {
	db := openApplyDB(t)
	mustCreate(t, db, store.TableDef{Name: "c", Kind: store.Changes, Key: []store.KeyColumn{{Name: "id", Type: store.String}}, Lateness: 5})
	ev := func(at int64, op Op, v int64) Event {
		return Event{Key: store.Key{"k"}, At: at, Op: op, Attrs: store.Attrs{"v": v}}
	}
	var results []ApplyResult
	c, err := Update(db, func(tx *Tx) error {
		for i, batch := range [][]Event{
			{ev(10, OpUpsert, 1), ev(20, OpUpsert, 2)},
			{ev(15, OpUpsert, 3), ev(20, OpUpsert, 2)},
			{ev(30, OpDelete, 0), ev(26, OpUpsert, 4)},
			{ev(10, OpUpsert, 1)}, // a replay of batch 0 within the transaction
		} {
			id := fmt.Sprintf("b%d", i%3)
			res, err := tx.Apply("c", id, batch)
			if err != nil {
				return err
			}
			results = append(results, res)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !results[3].Replayed || results[1].Duplicates != 1 || results[2].Compacted == 0 {
		t.Fatalf("results %+v", results)
	}
	got := keyVersionsOf(t, db, "c", store.Key{"k"}, store.Infinity)
	want := []applyVersion{{10, 15, `{v=1}`}, {15, 20, `{v=3}`}, {20, 26, `{v=2}`}, {26, 30, `{v=4}`}}
	if !slices.Equal(got, want) {
		t.Fatalf("versions %v, want %v", got, want)
	}
	if c.Tx != results[0].Tx {
		t.Fatalf("commit tx %d, results say %d", c.Tx, results[0].Tx)
	}
	verifyClean(t, db)
}

type applyVersion struct {
	from, to int64
	attrs    string
}

func keyVersionsOf(t testing.TB, db *store.DB, table string, key store.Key, tx int64) []applyVersion {
	t.Helper()
	tbl, err := db.Table(table)
	if err != nil {
		t.Fatal(err)
	}
	tuple, err := tbl.AppendKey(nil, key)
	if err != nil {
		t.Fatal(err)
	}
	s, err := db.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	vs, err := s.KeyVersions(tbl, tuple, tx)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]applyVersion, len(vs))
	for i, v := range vs {
		out[i] = applyVersion{v.ValidFrom, v.ValidTo, formatAttrs(v.Attrs)}
	}
	return out
}

func openApplyDB(t testing.TB) *store.DB {
	t.Helper()
	db, err := store.Open("", store.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func mustCreate(t testing.TB, db *store.DB, def store.TableDef) {
	t.Helper()
	if _, err := db.CreateTable(def); err != nil {
		t.Fatal(err)
	}
}

func verifyClean(t testing.TB, db *store.DB) {
	t.Helper()
	rep, err := store.Verify(db)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("verify: %s", rep)
	}
}

// TestVerifyChangesDetects damages changes tables behind Apply's back and checks
// that Verify reports invariant 6.
func TestVerifyChangesDetects(t *testing.T) {
	db := openApplyDB(t)
	mustCreate(t, db, store.TableDef{Name: "c", Kind: store.Changes, Key: []store.KeyColumn{{Name: "id", Type: store.String}}})
	tbl, _ := db.Table("c")
	ev := func(id string, at int64, v int64) Event {
		return Event{Key: store.Key{id}, At: at, Op: OpUpsert, Attrs: store.Attrs{"v": v}}
	}
	if _, err := Apply(db, "c", "b1", []Event{ev("a", 10, 1), ev("a", 20, 2), ev("b", 5, 1)}); err != nil {
		t.Fatal(err)
	}
	verifyClean(t, db)
	damage := func(fn func(w *store.Writer) error) {
		t.Helper()
		w, err := db.BeginWrite()
		if err != nil {
			t.Fatal(err)
		}
		if err := fn(w); err != nil {
			w.Abort()
			t.Fatal(err)
		}
		if err := w.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	tuple := func(id string) []byte {
		b, _ := tbl.AppendKey(nil, store.Key{id})
		return b
	}
	// An event the versions do not reflect.
	damage(func(w *store.Writer) error {
		return w.PutEvent(tbl, tuple("a"), store.LogEvent{At: 15, Op: store.EventUpsert, Attrs: store.Attrs{"v": int64(3)}})
	})
	// A checkpoint that claims events of b were compacted although they are
	// still in the log.
	damage(func(w *store.Writer) error {
		return w.PutCheckpoint(tbl, tuple("b"), store.Checkpoint{Through: 100})
	})
	rep, err := store.Verify(db)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, p := range rep.Problems {
		if p.Invariant == 6 {
			keys = append(keys, p.Key.String())
		}
	}
	if !slices.Equal(keys, []string{"a", "b"}) {
		t.Fatalf("invariant 6 problems for keys %v, want [a b]; report:\n%s", keys, rep)
	}
}
