package txn_test

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/bitempo/bitempo/internal/ddtest"
	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// The scenario notation is shared with the other packages' scenario tests.
var (
	arg       = ddtest.Arg
	parseTime = ddtest.ParseTime
	fmtTime   = ddtest.FormatTime
)

// TestPeriods runs the scenario files in testdata/periods. Each file is a story
// told with these commands (valid times are plain integers, "-inf"/"+inf" allowed;
// transaction times come from a clock stuck at 0, so commits get tx 1, 2, 3, ...):
//
//	create table=T key=col:type[,col:type] [track=a,b] [except=a,b] [compare=a:round2|trim|fold]
//	put table=T key=K from=F to=T         attributes on the following lines, name=value
//	delete table=T key=K from=F to=T
//	upsert table=T key=K at=A             attributes on the following lines
//	deleteat table=T key=K at=A
//	txn [fail]                            one operation per line (same syntax), one transaction
//	get table=T key=K valid=V [tx=N]      the version in effect, or the miss reason
//	versions table=T key=K [tx=N]         the versions alive at tx (default latest)
//	audit table=T key=K                   every record of the key, in transaction order
//
// After every write the store is verified; a violated invariant fails the test.
func TestPeriods(t *testing.T) { walkScenarios(t, "testdata/periods", runPeriodsCmd) }

// walkScenarios runs every scenario file under dir on a fresh in-memory store
// whose clock is stuck at 0 (commits get tx 1, 2, 3, ...); a command's error is
// its output.
func walkScenarios(t *testing.T, dir string, run func(*store.DB, *datadriven.TestData) (string, error)) {
	datadriven.Walk(t, dir, func(t *testing.T, path string) {
		db, err := store.Open("db", store.Options{InMemory: true, Clock: func() int64 { return 0 }})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			out, err := run(db, d)
			if err != nil {
				return "error: " + err.Error() + "\n"
			}
			return out
		})
	})
}

func runPeriodsCmd(db *store.DB, d *datadriven.TestData) (string, error) {
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
	rep, err := store.Verify(db)
	if err != nil {
		return "", err
	}
	if !rep.OK() {
		return "", fmt.Errorf("verify: %s", rep)
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
	v, err := query.Get(db, arg(d, "table"), key, query.AsOf{Valid: parseTime(arg(d, "valid")), Tx: txArg(d)})
	var miss *query.Miss
	if errors.As(err, &miss) {
		return "miss: " + miss.Reason.String() + "\n", nil
	}
	if err != nil {
		return "", err
	}
	return fmtVersion(v) + "\n", nil
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
			out.WriteString(fmtVersion(v) + "\n")
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
			fmt.Fprintf(&out, "tx [%s, %s) %s\n", fmtTime(v.TxFrom), fmtTime(v.TxTo), fmtVersion(v))
		}
		return err
	})
	return out.String(), err
}

func fmtVersion(v store.Version) string {
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
