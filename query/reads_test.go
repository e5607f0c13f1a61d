package query_test

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

// TestReads runs the scenario files in testdata/reads, one store per file. Valid
// times are integers ("-inf", "+inf" allowed); the clock is stuck at 0, so the
// commits get transaction times 1, 2, 3, ... Keys are comma-separated components
// typed by the table's schema. Commands:
//
//	create table=T key=col:type[,col:type]
//	put table=T key=K from=F to=T           attributes on the following lines, name=value
//	delete table=T key=K from=F to=T
//	upsert table=T key=K at=A               attributes on the following lines
//	deleteat table=T key=K at=A
//	txn                                     one operation per line: put table=T key=K from=F to=T a=1
//	snapshot table=T valid=V [tx=N] [prefix=K] [start=K] [end=K]
//	history table=T (key=K | [prefix=K] [start=K] [end=K]) [from=F] [to=T] [tx=N] [clip] [limit=N]
//	pages table=T ... limit=N [commit-between]   HistoryPage until done, one block per page
//	audit table=T key=K
//	changes table=T [since=N] [until=N] [limit=N]  ChangesPage until done
//	bysk table=T sk=N [tx=N]
//	gaps table=T [tx=N] [starts-after=N] [prefix=K] [start=K] [end=K]
//	resolve table=T [miss=error|skip|null|default|inferred] [default=SK] [attrs]
//	                                        facts on the following lines: key at [tx]
//
// After every write the store is verified.
func TestReads(t *testing.T) {
	datadriven.Walk(t, "testdata/reads", func(t *testing.T, path string) {
		db, err := store.Open("db", store.Options{InMemory: true, Clock: func() int64 { return 0 }})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			out, err := runReadCmd(db, d)
			if err != nil {
				return "error: " + err.Error() + "\n"
			}
			return out
		})
	})
}

func runReadCmd(db *store.DB, d *datadriven.TestData) (string, error) {
	switch d.Cmd {
	case "create":
		return "", createTable(db, d)
	case "put", "delete", "upsert", "deleteat":
		return write(db, []*datadriven.TestData{d})
	case "txn":
		var ops []*datadriven.TestData
		for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
			ops = append(ops, parseOpLine(line))
		}
		return write(db, ops)
	case "snapshot":
		return runSnapshot(db, d)
	case "history":
		return runHistory(db, d)
	case "pages":
		return runPages(db, d)
	case "audit":
		return runAudit(db, d)
	case "changes":
		return runChanges(db, d)
	case "bysk":
		return runBySK(db, d)
	case "gaps":
		return runGaps(db, d)
	case "resolve":
		return runResolve(db, d)
	}
	return "", fmt.Errorf("unknown command %q", d.Cmd)
}

// parseOpLine parses "put table=T key=K from=1 to=2 city=Oslo".
func parseOpLine(line string) *datadriven.TestData {
	fields := strings.Fields(line)
	op := &datadriven.TestData{Cmd: fields[0]}
	var attrs []string
	for _, f := range fields[1:] {
		name, value, _ := strings.Cut(f, "=")
		switch name {
		case "table", "key", "from", "to", "at":
			op.CmdArgs = append(op.CmdArgs, datadriven.CmdArg{Key: name, Vals: []string{value}})
		default:
			attrs = append(attrs, f)
		}
	}
	op.Input = strings.Join(attrs, "\n")
	return op
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
	_, err := db.CreateTable(def)
	return err
}

func timeArg(d *datadriven.TestData, key string, def int64) int64 {
	if v := arg(d, key); v != "" {
		return parseTime(v)
	}
	return def
}

// parseKey splits "a,2" into components typed by the table's schema; "" is nil.
func parseKey(db *store.DB, table, s string) store.Key {
	if s == "" {
		return nil
	}
	t, err := db.Table(table)
	if err != nil {
		return store.Key{s}
	}
	var key store.Key
	for i, part := range strings.Split(s, ",") {
		if i < len(t.Key) && t.Key[i].Type == store.Int64 {
			if n, err := strconv.ParseInt(part, 10, 64); err == nil {
				key = append(key, n)
				continue
			}
		}
		key = append(key, part)
	}
	return key
}

func parseAttrs(input string) store.Attrs {
	attrs := store.Attrs{}
	for _, line := range strings.Split(input, "\n") {
		name, value, ok := strings.Cut(strings.TrimSpace(line), "=")
		if !ok {
			continue
		}
		if n, err := strconv.ParseInt(value, 10, 64); err == nil {
			attrs[name] = n
		} else {
			attrs[name] = value
		}
	}
	return attrs
}

func write(db *store.DB, ops []*datadriven.TestData) (string, error) {
	c, err := txn.Update(db, func(tx *txn.Tx) error {
		for _, op := range ops {
			table := arg(op, "table")
			key := parseKey(db, table, arg(op, "key"))
			var err error
			switch op.Cmd {
			case "put":
				err = tx.Put(table, key, parseAttrs(op.Input), parseTime(arg(op, "from")), parseTime(arg(op, "to")))
			case "delete":
				err = tx.Delete(table, key, parseTime(arg(op, "from")), parseTime(arg(op, "to")))
			case "upsert":
				_, err = tx.Upsert(table, key, parseAttrs(op.Input), parseTime(arg(op, "at")))
			case "deleteat":
				_, err = tx.DeleteAt(table, key, parseTime(arg(op, "at")))
			default:
				err = fmt.Errorf("unknown operation %q", op.Cmd)
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	if err := verify(db); err != nil {
		return "", err
	}
	return fmt.Sprintf("tx %d: %d asserted, %d retired\n", c.Tx, c.Asserted, c.Retired), nil
}

func verify(db *store.DB) error {
	rep, err := store.Verify(db)
	if err != nil {
		return err
	}
	if !rep.OK() {
		return fmt.Errorf("verify: %s", rep)
	}
	return nil
}

func fmtVersion(v store.Version) string {
	var attrs []string
	for _, name := range v.Attrs.Names() {
		attrs = append(attrs, fmt.Sprintf("%s=%v", name, v.Attrs[name]))
	}
	s := fmt.Sprintf("%s [%s, %s) sk=%d {%s}", v.Key, fmtTime(v.ValidFrom), fmtTime(v.ValidTo), v.SK, strings.Join(attrs, " "))
	if v.Inferred {
		s += " inferred"
	}
	return s
}

func fmtRecord(v store.Version) string {
	return fmt.Sprintf("tx [%s, %s) %s", fmtTime(v.TxFrom), fmtTime(v.TxTo), fmtVersion(v))
}

func keyRange(db *store.DB, d *datadriven.TestData) query.KeyRange {
	table := arg(d, "table")
	return query.KeyRange{
		Prefix: parseKey(db, table, arg(d, "prefix")),
		Start:  parseKey(db, table, arg(d, "start")),
		End:    parseKey(db, table, arg(d, "end")),
	}
}

// lines renders the rows of a read, or "(none)".
func lines[T any](seq func(func(T, error) bool), render func(T) string) (string, error) {
	var out strings.Builder
	for v, err := range seq {
		if err != nil {
			return "", err
		}
		out.WriteString(render(v) + "\n")
	}
	if out.Len() == 0 {
		return "(none)\n", nil
	}
	return out.String(), nil
}

func runSnapshot(db *store.DB, d *datadriven.TestData) (string, error) {
	at := query.AsOf{Valid: parseTime(arg(d, "valid")), Tx: timeArg(d, "tx", query.Latest)}
	return lines(query.SnapshotWith(db, arg(d, "table"), at, keyRange(db, d), query.SnapshotOptions{Project: projectArg(d)}), fmtVersion)
}

// projectArg reads project=a,b: the attributes a read decodes (nil: all).
func projectArg(d *datadriven.TestData) []string {
	if v := arg(d, "project"); v != "" {
		return strings.Split(v, ",")
	}
	return nil
}

func historyOpts(d *datadriven.TestData) query.HistoryOptions {
	opts := query.HistoryOptions{Tx: timeArg(d, "tx", query.Latest), Clip: d.HasArg("clip"), Project: projectArg(d)}
	if v := arg(d, "limit"); v != "" {
		opts.Limit, _ = strconv.Atoi(v)
	}
	return opts
}

func runHistory(db *store.DB, d *datadriven.TestData) (string, error) {
	table := arg(d, "table")
	from, to := timeArg(d, "from", store.NegInfinity), timeArg(d, "to", store.Infinity)
	if k := arg(d, "key"); k != "" {
		return lines(query.History(db, table, parseKey(db, table, k), from, to, historyOpts(d)), fmtRecord)
	}
	return lines(query.HistoryRange(db, table, keyRange(db, d), from, to, historyOpts(d)), fmtRecord)
}

// runPages reads HistoryPage to the end; with commit-between, every page is
// followed by a commit that rewrites the whole table, which the pages must not
// see.
func runPages(db *store.DB, d *datadriven.TestData) (string, error) {
	table := arg(d, "table")
	from, to := timeArg(d, "from", store.NegInfinity), timeArg(d, "to", store.Infinity)
	opts := historyOpts(d)
	var out strings.Builder
	for n := 1; ; n++ {
		page, err := query.HistoryPage(db, table, keyRange(db, d), from, to, opts)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&out, "page %d:\n", n)
		for _, v := range page.Rows {
			out.WriteString("  " + fmtRecord(v) + "\n")
		}
		if page.Next == "" {
			return out.String(), nil
		}
		opts.Cursor = page.Next
		if d.HasArg("commit-between") {
			if _, err := txn.Update(db, func(tx *txn.Tx) error {
				for v, err := range query.Snapshot(db, table, query.AsOf{Valid: 0}, query.KeyRange{}) {
					if err != nil {
						return err
					}
					if err := tx.Delete(table, v.Key, store.NegInfinity, store.Infinity); err != nil {
						return err
					}
				}
				return nil
			}); err != nil {
				return "", err
			}
		}
	}
}

func runAudit(db *store.DB, d *datadriven.TestData) (string, error) {
	table := arg(d, "table")
	return lines(query.Audit(db, table, parseKey(db, table, arg(d, "key"))), fmtRecord)
}

func runChanges(db *store.DB, d *datadriven.TestData) (string, error) {
	table := arg(d, "table")
	since, until := timeArg(d, "since", 0), timeArg(d, "until", query.Latest)
	limit := 0
	if v := arg(d, "limit"); v != "" {
		limit, _ = strconv.Atoi(v)
	}
	var out strings.Builder
	cur := ""
	for n := 1; ; n++ {
		page, err := query.ChangesPage(db, table, since, until, limit, cur)
		if err != nil {
			return "", err
		}
		if limit > 0 {
			fmt.Fprintf(&out, "page %d:\n", n)
		}
		for _, c := range page.Rows {
			fmt.Fprintf(&out, "tx %d %s %s\n", c.Tx, c.Op, fmtRecord(c.Version))
		}
		if page.Next == "" {
			if out.Len() == 0 {
				return "(none)\n", nil
			}
			return out.String(), nil
		}
		cur = page.Next
	}
}

func runBySK(db *store.DB, d *datadriven.TestData) (string, error) {
	sk, err := strconv.ParseUint(arg(d, "sk"), 10, 64)
	if err != nil {
		return "", err
	}
	v, err := query.GetBySK(db, arg(d, "table"), sk, timeArg(d, "tx", query.Latest))
	var miss *query.SKMiss
	if errors.As(err, &miss) {
		return "miss: " + miss.Error() + "\n", nil
	}
	if err != nil {
		return "", err
	}
	return fmtRecord(v) + "\n", nil
}

func runGaps(db *store.DB, d *datadriven.TestData) (string, error) {
	opts := query.GapOptions{Keys: keyRange(db, d), Tx: timeArg(d, "tx", query.Latest)}
	if v := arg(d, "starts-after"); v != "" {
		opts.CheckStart, opts.StartsAfter = true, parseTime(v)
	}
	return lines(query.Gaps(db, arg(d, "table"), opts), func(g query.KeyGaps) string {
		var gaps []string
		for _, p := range g.Gaps {
			gaps = append(gaps, fmt.Sprintf("[%s, %s)", fmtTime(p.From), fmtTime(p.To)))
		}
		s := fmt.Sprintf("%s versions [%s, %s)", g.Key, fmtTime(g.First), fmtTime(g.Last))
		if len(gaps) > 0 {
			s += " gaps " + strings.Join(gaps, " ")
		}
		if g.LateStart {
			s += " late start"
		}
		return s
	})
}

func runResolve(db *store.DB, d *datadriven.TestData) (string, error) {
	table := arg(d, "table")
	var facts []query.Fact
	for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
		f := strings.Fields(line)
		fact := query.Fact{Key: parseKey(db, table, f[0]), At: parseTime(f[1])}
		if len(f) > 2 {
			fact.Tx = parseTime(f[2])
		}
		facts = append(facts, fact)
	}
	opts := query.ResolveOptions{Attrs: d.HasArg("attrs"), Project: projectArg(d)}
	switch arg(d, "miss") {
	case "", "error":
		opts.Miss = query.MissError
	case "skip":
		opts.Miss = query.MissSkip
	case "null":
		opts.Miss = query.MissNull
	case "default":
		opts.Miss = query.MissDefault
		opts.Default, _ = strconv.ParseUint(arg(d, "default"), 10, 64)
	case "inferred":
		opts.Miss = query.MissInferred
	}
	res, err := query.Resolve(db, table, facts, opts)
	if err != nil {
		return "", err
	}
	if err := verify(db); err != nil {
		return "", err
	}
	var out strings.Builder
	for _, r := range res {
		f := facts[r.Index]
		fmt.Fprintf(&out, "fact %d (%s at %d): ", r.Index, f.Key, f.At)
		if r.Found() {
			fmt.Fprintf(&out, "sk=%d", r.SK)
		} else {
			fmt.Fprintf(&out, "%s sk=%d", r.Reason, r.SK)
		}
		if r.Inferred {
			out.WriteString(" inferred")
		}
		if r.Default {
			out.WriteString(" default")
		}
		if opts.Attrs {
			var attrs []string
			for _, name := range r.Attrs.Names() {
				attrs = append(attrs, fmt.Sprintf("%s=%v", name, r.Attrs[name]))
			}
			fmt.Fprintf(&out, " {%s}", strings.Join(attrs, " "))
		}
		out.WriteString("\n")
	}
	if len(res) == 0 {
		out.WriteString("(none)\n")
	}
	return out.String(), nil
}
