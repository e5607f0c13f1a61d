package enginetest

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/cockroachdb/datadriven"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/internal/ddtest"
	"github.com/bitempo/bitempo/layout"
	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// This file is the driver of the transaction scenarios (txn/testdata/periods
// and txn/testdata/erase): each command runs on the store and returns its
// output. It lives here, not in package txn's tests, so that the same
// scenarios run on every engine (Run).

// The scenario notation is shared with the other packages' scenario tests.
var (
	arg       = ddtest.Arg
	parseTime = ddtest.ParseTime
	fmtTime   = ddtest.FormatTime
)

// Periods runs one command of the periods scenarios (txn/testdata/periods;
// see TestPeriods there for the commands).
func Periods(db *store.DB, d *datadriven.TestData) (string, error) {
	switch d.Cmd {
	case "create":
		return "", createTable(db, d)
	case "put", "delete", "upsert", "deleteat":
		return runTxn(db, []string{d.Input}, []*datadriven.TestData{d}, false)
	case "txn":
		var ops []*datadriven.TestData
		for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
			op, err := parseOpLine(line)
			if err != nil {
				return "", err
			}
			ops = append(ops, op)
		}
		inputs := make([]string, len(ops))
		for i, op := range ops {
			inputs[i] = op.Input
		}
		return runTxn(db, inputs, ops, d.HasArg("fail"))
	case "get":
		return runGet(db, d)
	case "versions":
		return runVersions(db, d)
	case "audit":
		return runAudit(db, d)
	case "erase":
		key, err := parseKey(db, arg(d, "table"), arg(d, "key"))
		if err != nil {
			return "", err
		}
		return runErase(db, arg(d, "table"), key, arg(d, "reason"))
	case "changes":
		return runChanges(db, d)
	case "bysk":
		return runBySK(db, d)
	case "erasures":
		return runErasures(db, d)
	case "raw":
		return runRaw(db, d)
	}
	return "", fmt.Errorf("unknown command %q", d.Cmd)
}

// parseOpLine parses "upsert table=T key=K at=3 city=Oslo": the op's own
// arguments are table, key, from, to, at; the rest are attributes.
func parseOpLine(line string) (*datadriven.TestData, error) {
	fields := strings.Fields(line)
	if len(fields) == 0 {
		return nil, fmt.Errorf("empty operation")
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
	return op, nil
}

func createTable(db *store.DB, d *datadriven.TestData) error {
	def := store.TableDef{Name: arg(d, "table")}
	for _, col := range strings.Split(arg(d, "key"), ",") {
		name, typ, _ := strings.Cut(col, ":")
		kt, err := store.ParseKeyType(typ)
		if err != nil {
			return err
		}
		def.Key = append(def.Key, store.KeyColumn{Name: name, Type: kt})
	}
	def.MixedTypes = d.HasArg("mixed")
	if v := arg(d, "track"); v != "" {
		def.Track = strings.Split(v, ",")
	}
	if v := arg(d, "except"); v != "" {
		def.TrackExcept = strings.Split(v, ",")
	}
	if v := arg(d, "compare"); v != "" {
		def.Compare = map[string]store.CompareOptions{}
		for _, spec := range strings.Split(v, ",") {
			name, opts, _ := strings.Cut(spec, ":")
			var c store.CompareOptions
			for _, o := range strings.Split(opts, "|") {
				switch {
				case o == "trim":
					c.Trim = true
				case o == "fold":
					c.FoldCase = true
				case strings.HasPrefix(o, "round"):
					c.Round = true
					c.Scale, _ = strconv.Atoi(strings.TrimPrefix(o, "round"))
				}
			}
			def.Compare[name] = c
		}
	}
	_, err := db.CreateTable(def)
	return err
}

// parseKey splits "a,2" into components typed by the table's schema.
func parseKey(db *store.DB, table, s string) (store.Key, error) {
	t, err := db.Table(table)
	if err != nil {
		return nil, err
	}
	var key store.Key
	for i, part := range strings.Split(s, ",") {
		if i >= len(t.Key) {
			key = append(key, part) // deliberately malformed: more components than the schema
			continue
		}
		switch t.Key[i].Type {
		case store.Int64:
			n, err := strconv.ParseInt(part, 10, 64)
			if err != nil {
				key = append(key, part) // wrong type on purpose
				continue
			}
			key = append(key, n)
		case store.Uint64:
			n, err := strconv.ParseUint(part, 10, 64)
			if err != nil {
				key = append(key, part)
				continue
			}
			key = append(key, n)
		case store.Bytes:
			key = append(key, []byte(part))
		default:
			key = append(key, part)
		}
	}
	return key, nil
}

// parseAttrs reads name=value lines: integers, floats, true/false, null, and a
// struct{} for "unencodable"; anything else is a string ("quoted" keeps spaces).
func parseAttrs(input string) store.Attrs {
	attrs := store.Attrs{}
	for _, line := range strings.Split(input, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		name, value, _ := strings.Cut(line, "=")
		attrs[name] = parseValue(value)
	}
	return attrs
}

func parseValue(s string) any {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return f
	}
	switch s {
	case "true":
		return true
	case "false":
		return false
	case "null":
		return nil
	case "unencodable":
		return struct{}{}
	}
	if uq, err := strconv.Unquote(s); err == nil {
		return uq
	}
	return s
}

func runTxn(db *store.DB, inputs []string, ops []*datadriven.TestData, fail bool) (string, error) {
	var out strings.Builder
	c, err := txn.Update(db, func(tx *txn.Tx) error {
		for i, op := range ops {
			key, err := parseKey(db, arg(op, "table"), arg(op, "key"))
			if err != nil {
				return err
			}
			res, err := applyOp(tx, op, key, parseAttrs(inputs[i]))
			if err != nil {
				return err
			}
			if res != "" {
				fmt.Fprintf(&out, "%s: %s\n", op.Cmd, res)
			}
		}
		if fail {
			return errors.New("transaction failed on purpose")
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	if c.Tx == 0 {
		out.WriteString("nothing to commit\n")
	} else {
		fmt.Fprintf(&out, "committed tx %d: %d asserted, %d retired\n", c.Tx, c.Asserted, c.Retired)
	}
	if err := VerifyStore(db); err != nil {
		return "", err
	}
	return out.String(), nil
}

func applyOp(tx *txn.Tx, op *datadriven.TestData, key store.Key, attrs store.Attrs) (string, error) {
	table := arg(op, "table")
	switch op.Cmd {
	case "put":
		return "", tx.Put(table, key, attrs, parseTime(arg(op, "from")), parseTime(arg(op, "to")))
	case "delete":
		return "", tx.Delete(table, key, parseTime(arg(op, "from")), parseTime(arg(op, "to")))
	case "upsert":
		o, err := tx.Upsert(table, key, attrs, parseTime(arg(op, "at")))
		return o.String(), err
	case "deleteat":
		closed, err := tx.DeleteAt(table, key, parseTime(arg(op, "at")))
		if !closed && err == nil {
			return "no version in effect", nil
		}
		return "closed", err
	case "erase":
		return "erased", tx.EraseFor(table, key, arg(op, "reason"))
	}
	return "", fmt.Errorf("unknown operation %q", op.Cmd)
}

func txArg(d *datadriven.TestData) int64 {
	if v := arg(d, "tx"); v != "" {
		return parseTime(v)
	}
	return query.Latest
}

func runGet(db *store.DB, d *datadriven.TestData) (string, error) {
	key, err := parseKey(db, arg(d, "table"), arg(d, "key"))
	if err != nil {
		return "", err
	}
	v, err := query.Get(db, arg(d, "table"), key, query.AsOf{Valid: parseTime(arg(d, "valid")), Tx: txArg(d)}, query.GetOptions{})
	var miss *query.Miss
	if errors.As(err, &miss) {
		return "miss: " + miss.Reason.String() + "\n", nil
	}
	if err != nil {
		return "", err
	}
	return FmtVersion(v) + "\n", nil
}

func runVersions(db *store.DB, d *datadriven.TestData) (string, error) {
	var out strings.Builder
	err := txn.View(db, func(s *store.Snapshot) error {
		t, err := s.Table(arg(d, "table"))
		if err != nil {
			return err
		}
		key, err := parseKey(db, t.Name, arg(d, "key"))
		if err != nil {
			return err
		}
		tuple, err := t.AppendKey(nil, key)
		if err != nil {
			return err
		}
		tx := txArg(d)
		if tx == query.Latest {
			tx = s.LastTx()
		}
		vs, err := s.KeyVersions(t, tuple, tx)
		for _, v := range vs {
			out.WriteString(FmtVersion(v) + "\n")
		}
		if len(vs) == 0 {
			out.WriteString("no versions\n")
		}
		return err
	})
	return out.String(), err
}

func runAudit(db *store.DB, d *datadriven.TestData) (string, error) {
	var out strings.Builder
	err := txn.View(db, func(s *store.Snapshot) error {
		t, err := s.Table(arg(d, "table"))
		if err != nil {
			return err
		}
		key, err := parseKey(db, t.Name, arg(d, "key"))
		if err != nil {
			return err
		}
		tuple, err := t.AppendKey(nil, key)
		if err != nil {
			return err
		}
		recs, err := s.KeyRecords(t, tuple)
		for _, v := range recs {
			fmt.Fprintf(&out, "tx [%s, %s) %s\n", fmtTime(v.TxFrom), fmtTime(v.TxTo), FmtVersion(v))
		}
		return err
	})
	return out.String(), err
}

// FmtVersion renders a version as the scenarios print it.
func FmtVersion(v store.Version) string {
	var attrs []string
	for _, name := range v.Attrs.Names() {
		attrs = append(attrs, fmt.Sprintf("%s=%v", name, v.Attrs[name]))
	}
	s := fmt.Sprintf("[%s, %s) sk=%d {%s}", fmtTime(v.ValidFrom), fmtTime(v.ValidTo), v.SK, strings.Join(attrs, " "))
	if v.Inferred {
		s += " inferred"
	}
	return s
}

// Erase runs one command of the erasure scenarios (txn/testdata/erase; see
// TestEraseScenarios there for the commands).
func Erase(db *store.DB, d *datadriven.TestData) (string, error) {
	switch d.Cmd {
	case "create":
		if arg(d, "kind") == "" && arg(d, "group") == "" && arg(d, "lateness") == "" {
			return "", createTable(db, d)
		}
		return "", createKindTable(db, d)
	case "apply":
		return runApply(db, d)
	case "events":
		return runEvents(db, d)
	}
	return Periods(db, d)
}

func createKindTable(db *store.DB, d *datadriven.TestData) error {
	def := store.TableDef{Name: arg(d, "table")}
	for _, col := range strings.Split(arg(d, "key"), ",") {
		name, typ, _ := strings.Cut(col, ":")
		kt, err := store.ParseKeyType(typ)
		if err != nil {
			return err
		}
		def.Key = append(def.Key, store.KeyColumn{Name: name, Type: kt})
	}
	if arg(d, "kind") == "changes" {
		def.Kind = store.Changes
	}
	if g := arg(d, "group"); g != "" {
		def.GroupBy = strings.Split(g, ",")
	}
	if l := arg(d, "lateness"); l != "" {
		def.Lateness = parseTime(l)
	}
	_, err := db.CreateTable(def)
	return err
}

func runApply(db *store.DB, d *datadriven.TestData) (string, error) {
	table := arg(d, "table")
	var events []txn.Event
	for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 {
			return "", fmt.Errorf("bad event line %q", line)
		}
		key, err := parseKey(db, table, f[0])
		if err != nil {
			return "", err
		}
		e := txn.Event{Key: key, At: parseTime(strings.TrimPrefix(f[1], "@"))}
		if f[2] == "delete" {
			e.Op = txn.OpDelete
		} else {
			e.Op = txn.OpUpsert
			e.Attrs = parseAttrs(strings.Join(f[3:], "\n"))
		}
		events = append(events, e)
	}
	r, err := txn.Apply(db, table, arg(d, "batch"), events)
	if err != nil {
		return "", err
	}
	if err := VerifyStore(db); err != nil {
		return "", err
	}
	if r.Replayed {
		return fmt.Sprintf("replayed: applied by tx %d\n", r.Tx), nil
	}
	return fmt.Sprintf("tx %d: accepted %d\n", r.Tx, r.Accepted), nil
}

func runEvents(db *store.DB, d *datadriven.TestData) (string, error) {
	var out strings.Builder
	err := txn.View(db, func(s *store.Snapshot) error {
		t, err := s.Table(arg(d, "table"))
		if err != nil {
			return err
		}
		key, err := parseKey(db, t.Name, arg(d, "key"))
		if err != nil {
			return err
		}
		tuple, err := t.AppendKey(nil, key)
		if err != nil {
			return err
		}
		if _, ok, err := s.Checkpoint(t, tuple); err != nil {
			return err
		} else if ok {
			out.WriteString("checkpoint\n")
		}
		for e, err := range s.KeyEvents(t, tuple, store.NegInfinity, store.NegInfinity) {
			if err != nil {
				return err
			}
			fmt.Fprintf(&out, "@%d %s\n", e.At, e.Op)
		}
		return nil
	})
	if out.Len() == 0 {
		out.WriteString("no events\n")
	}
	return out.String(), err
}

// runErase runs the erase command and verifies the store.
func runErase(db *store.DB, table string, key store.Key, reason string) (string, error) {
	c, err := txn.Update(db, func(tx *txn.Tx) error { return tx.EraseFor(table, key, reason) })
	if err != nil {
		return "", err
	}
	if err := VerifyStore(db); err != nil {
		return "", err
	}
	return fmt.Sprintf("committed tx %d: erased\n", c.Tx), nil
}

// ErrCheck marks a driver's own check failing (store.Verify finding
// problems after a write, two read paths disagreeing): a failed test, never a
// scenario's expected output. WalkScenarios fails the test on it, so that
// -rewrite cannot record it as the expected output.
var ErrCheck = errors.New("enginetest: check failed")

// VerifyStore runs store.Verify and returns an error matching ErrCheck for a
// report with problems.
func VerifyStore(db *store.DB) error {
	rep, err := store.Verify(db)
	if err != nil {
		return err
	}
	if !rep.OK() {
		return fmt.Errorf("%w: verify: %s", ErrCheck, rep)
	}
	return nil
}

func runChanges(db *store.DB, d *datadriven.TestData) (string, error) {
	until := query.Latest
	if v := arg(d, "until"); v != "" {
		until = parseTime(v)
	}
	var out strings.Builder
	for c, err := range query.Changes(db, arg(d, "table"), parseTime(arg(d, "since")), until, "", query.ChangesOptions{}) {
		if err != nil {
			return "", err
		}
		if c.Op == query.Erased {
			fmt.Fprintf(&out, "tx %d erased: %d records, reason %q, key hash %x...\n", c.Tx, c.Erasure.Records, c.Erasure.Reason, c.Erasure.KeyHash[:0])
			continue
		}
		fmt.Fprintf(&out, "tx %d %s %v %s\n", c.Tx, c.Op, c.Version.Key, FmtVersion(c.Version))
	}
	if out.Len() == 0 {
		out.WriteString("no changes\n")
	}
	return out.String(), nil
}

func runBySK(db *store.DB, d *datadriven.TestData) (string, error) {
	sk, err := strconv.ParseUint(arg(d, "sk"), 10, 64)
	if err != nil {
		return "", err
	}
	v, err := query.GetBySK(db, arg(d, "table"), sk, txArg(d), query.GetOptions{})
	var miss *query.SKMiss
	switch {
	case errors.As(err, &miss):
		kind := "unknown"
		switch {
		case errors.Is(err, query.ErrErasedSK):
			kind = "erased"
		case errors.Is(err, query.ErrRetiredSK):
			kind = "retired"
		}
		return fmt.Sprintf("miss (%s): %v\n", kind, err), nil
	case err != nil:
		return "", err
	}
	return fmt.Sprintf("%v %s\n", v.Key, FmtVersion(v)), nil
}

func runErasures(db *store.DB, d *datadriven.TestData) (string, error) {
	key, err := parseKey(db, arg(d, "table"), arg(d, "key"))
	if err != nil {
		return "", err
	}
	var out string
	err = txn.View(db, func(s *store.Snapshot) error {
		t, err := s.Table(arg(d, "table"))
		if err != nil {
			return err
		}
		txs, err := s.Erasures(t, key)
		out = fmt.Sprintf("erased at %v\n", txs)
		if len(txs) == 0 {
			out = "never erased\n"
		}
		return err
	})
	return out, err
}

// runRaw counts the table's keys per keyspace, so a scenario shows that an
// erasure left nothing but its own entries.
func runRaw(db *store.DB, d *datadriven.TestData) (string, error) {
	var out strings.Builder
	err := txn.View(db, func(s *store.Snapshot) error {
		t, err := s.Table(arg(d, "table"))
		if err != nil {
			return err
		}
		for _, ks := range layout.Keyspaces()[2:] { // the per-table keyspaces
			n := 0
			pfx := layout.TablePrefix(ks, t.ID)
			for _, err := range s.RawScan(pfx, encoding.PrefixEnd(pfx)) {
				if err != nil {
					return err
				}
				n++
			}
			if n > 0 {
				fmt.Fprintf(&out, "%s: %d\n", layout.KeyspaceName(ks), n)
			}
		}
		return nil
	})
	return out.String(), err
}
