package enginetest

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/cockroachdb/datadriven"

	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// This file is the driver of the read scenarios (query/testdata/reads): each
// command runs on the store and returns its output. It lives here, not in
// package query's tests, so that the same scenarios run on every engine (Run).

// Reads runs one command of the read scenarios (query/testdata/reads; see
// TestReads there for the commands).
func Reads(db *store.DB, d *datadriven.TestData) (string, error) {
	switch d.Cmd {
	case "create":
		return "", readsCreate(db, d)
	case "put", "delete", "upsert", "deleteat":
		return readsWrite(db, []*datadriven.TestData{d})
	case "txn":
		var ops []*datadriven.TestData
		for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
			op, err := readsOpLine(line)
			if err != nil {
				return "", err
			}
			ops = append(ops, op)
		}
		return readsWrite(db, ops)
	case "snapshot":
		return readsSnapshot(db, d)
	case "history":
		return readsHistory(db, d)
	case "pages":
		return readsPages(db, d)
	case "get":
		return readsGet(db, d)
	case "audit":
		return readsAudit(db, d)
	case "changes":
		return readsChanges(db, d)
	case "bysk":
		return readsBySK(db, d)
	case "gaps":
		return readsGaps(db, d)
	case "resolve":
		return readsResolve(db, d)
	}
	return "", fmt.Errorf("unknown command %q", d.Cmd)
}

// parseOpLine parses "put table=T key=K from=1 to=2 city=Oslo".
func readsOpLine(line string) (*datadriven.TestData, error) {
	fields := strings.Fields(line)
	if len(fields) == 0 {
		return nil, fmt.Errorf("empty operation")
	}
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
	return op, nil
}

func readsCreate(db *store.DB, d *datadriven.TestData) error {
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

func readsTimeArg(d *datadriven.TestData, key string, def int64) int64 {
	if v := arg(d, key); v != "" {
		return parseTime(v)
	}
	return def
}

// parseKey splits "a,2" into components typed by the table's schema; "" is nil.
func readsKey(db *store.DB, table, s string) store.Key {
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

func readsAttrs(input string) store.Attrs {
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

func readsWrite(db *store.DB, ops []*datadriven.TestData) (string, error) {
	c, err := txn.Update(db, func(tx *txn.Tx) error {
		for _, op := range ops {
			table := arg(op, "table")
			key := readsKey(db, table, arg(op, "key"))
			var err error
			switch op.Cmd {
			case "put":
				err = tx.Put(table, key, readsAttrs(op.Input), parseTime(arg(op, "from")), parseTime(arg(op, "to")))
			case "delete":
				err = tx.Delete(table, key, parseTime(arg(op, "from")), parseTime(arg(op, "to")))
			case "upsert":
				_, err = tx.Upsert(table, key, readsAttrs(op.Input), parseTime(arg(op, "at")))
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
	if err := VerifyStore(db); err != nil {
		return "", err
	}
	return fmt.Sprintf("tx %d: %d asserted, %d retired\n", c.Tx, c.Asserted, c.Retired), nil
}

// readsVersion renders a version with its key, as the read scenarios print it.
func readsVersion(v store.Version) string {
	return fmt.Sprintf("%s %s", v.Key, FmtVersion(v))
}

// FmtRecord renders a record (a version with its transaction period) as the
// read scenarios (query/testdata/reads) print it.
func FmtRecord(v store.Version) string {
	return fmt.Sprintf("tx [%s, %s) %s", fmtTime(v.TxFrom), fmtTime(v.TxTo), readsVersion(v))
}

func readsKeyRange(db *store.DB, d *datadriven.TestData) query.KeyRange {
	table := arg(d, "table")
	return query.KeyRange{
		Prefix: readsKey(db, table, arg(d, "prefix")),
		Start:  readsKey(db, table, arg(d, "start")),
		End:    readsKey(db, table, arg(d, "end")),
	}
}

// lines renders the rows of a read, or "(none)".
func readsLines[T any](seq func(func(T, error) bool), render func(T) string) (string, error) {
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

func readsSnapshot(db *store.DB, d *datadriven.TestData) (string, error) {
	at := query.AsOf{Valid: parseTime(arg(d, "valid")), Tx: readsTimeArg(d, "tx", query.Latest)}
	return readsLines(query.Snapshot(db, arg(d, "table"), at, readsKeyRange(db, d), query.SnapshotOptions{Project: readsProject(d)}), readsVersion)
}

// projectArg reads project=a,b: the attributes a read decodes (nil: all).
func readsProject(d *datadriven.TestData) []string {
	if v := arg(d, "project"); v != "" {
		return strings.Split(v, ",")
	}
	return nil
}

func readsHistoryOpts(d *datadriven.TestData) query.HistoryOptions {
	opts := query.HistoryOptions{Tx: readsTimeArg(d, "tx", query.Latest), Clip: d.HasArg("clip"), Project: readsProject(d)}
	if v := arg(d, "limit"); v != "" {
		opts.Limit, _ = strconv.Atoi(v)
	}
	return opts
}

func readsHistory(db *store.DB, d *datadriven.TestData) (string, error) {
	table := arg(d, "table")
	from, to := readsTimeArg(d, "from", store.NegInfinity), readsTimeArg(d, "to", store.Infinity)
	if k := arg(d, "key"); k != "" {
		return readsLines(query.History(db, table, readsKey(db, table, k), from, to, readsHistoryOpts(d)), FmtRecord)
	}
	return readsLines(query.HistoryRange(db, table, readsKeyRange(db, d), from, to, readsHistoryOpts(d)), FmtRecord)
}

// runPages reads HistoryPage to the end; with commit-between, every page is
// followed by a commit that rewrites the whole table, which the pages must not
// see.
func readsPages(db *store.DB, d *datadriven.TestData) (string, error) {
	table := arg(d, "table")
	from, to := readsTimeArg(d, "from", store.NegInfinity), readsTimeArg(d, "to", store.Infinity)
	opts := readsHistoryOpts(d)
	var out strings.Builder
	for n := 1; ; n++ {
		page, err := query.HistoryPage(db, table, readsKeyRange(db, d), from, to, opts)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&out, "page %d:\n", n)
		for _, v := range page.Rows {
			out.WriteString("  " + FmtRecord(v) + "\n")
		}
		if page.Next == "" {
			return out.String(), nil
		}
		opts.Cursor = page.Next
		if d.HasArg("commit-between") {
			if _, err := txn.Update(db, func(tx *txn.Tx) error {
				for v, err := range query.Snapshot(db, table, query.AsOf{Valid: 0}, query.KeyRange{}, query.SnapshotOptions{}) {
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

func readsGet(db *store.DB, d *datadriven.TestData) (string, error) {
	table := arg(d, "table")
	at := query.AsOf{Valid: parseTime(arg(d, "valid")), Tx: readsTimeArg(d, "tx", query.Latest)}
	v, err := query.Get(db, table, readsKey(db, table, arg(d, "key")), at, query.GetOptions{Project: readsProject(d)})
	var miss *query.Miss
	if errors.As(err, &miss) {
		return "miss: " + miss.Reason.String() + "\n", nil
	}
	if err != nil {
		return "", err
	}
	return FmtRecord(v) + "\n", nil
}

func readsAudit(db *store.DB, d *datadriven.TestData) (string, error) {
	table := arg(d, "table")
	return readsLines(query.Audit(db, table, readsKey(db, table, arg(d, "key")), query.AuditOptions{Project: readsProject(d)}), FmtRecord)
}

func readsChanges(db *store.DB, d *datadriven.TestData) (string, error) {
	table := arg(d, "table")
	since, until := readsTimeArg(d, "since", 0), readsTimeArg(d, "until", query.Latest)
	limit := 0
	if v := arg(d, "limit"); v != "" {
		limit, _ = strconv.Atoi(v)
	}
	var out strings.Builder
	cur := ""
	for n := 1; ; n++ {
		page, err := query.ChangesPage(db, table, since, until, limit, cur, query.ChangesOptions{Project: readsProject(d)})
		if err != nil {
			return "", err
		}
		if limit > 0 {
			fmt.Fprintf(&out, "page %d:\n", n)
		}
		for _, c := range page.Rows {
			fmt.Fprintf(&out, "tx %d %s %s\n", c.Tx, c.Op, FmtRecord(c.Version))
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

func readsBySK(db *store.DB, d *datadriven.TestData) (string, error) {
	sk, err := strconv.ParseUint(arg(d, "sk"), 10, 64)
	if err != nil {
		return "", err
	}
	v, err := query.GetBySK(db, arg(d, "table"), sk, readsTimeArg(d, "tx", query.Latest), query.GetOptions{Project: readsProject(d)})
	var miss *query.SKMiss
	if errors.As(err, &miss) {
		return "miss: " + miss.Error() + "\n", nil
	}
	if err != nil {
		return "", err
	}
	return FmtRecord(v) + "\n", nil
}

func readsGaps(db *store.DB, d *datadriven.TestData) (string, error) {
	opts := query.GapOptions{Keys: readsKeyRange(db, d), Tx: readsTimeArg(d, "tx", query.Latest)}
	if v := arg(d, "starts-after"); v != "" {
		opts.CheckStart, opts.StartsAfter = true, parseTime(v)
	}
	return readsLines(query.Gaps(db, arg(d, "table"), opts), func(g query.KeyGaps) string {
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

func readsResolve(db *store.DB, d *datadriven.TestData) (string, error) {
	table := arg(d, "table")
	var facts []query.Fact
	for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			return "", fmt.Errorf("bad fact line %q", line)
		}
		fact := query.Fact{Key: readsKey(db, table, f[0]), At: parseTime(f[1])}
		if len(f) > 2 {
			fact.Tx = parseTime(f[2])
		}
		facts = append(facts, fact)
	}
	opts := query.ResolveOptions{Attrs: d.HasArg("attrs"), Project: readsProject(d)}
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
	case "inferred": // unknown keys get inferred members, other misses are null
		opts.Miss = query.MissNull
	}
	var res []query.Resolution
	var err error
	if arg(d, "miss") == "inferred" {
		res, err = txn.ResolveInferred(db, table, facts, opts)
	} else {
		res, err = query.Resolve(db, table, facts, opts)
	}
	if err != nil {
		return "", err
	}
	if err := VerifyStore(db); err != nil {
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
