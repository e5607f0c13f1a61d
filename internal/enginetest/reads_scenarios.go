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
		return "", createTable(db, d)
	case "put", "delete", "upsert", "deleteat":
		return readsWrite(db, []*datadriven.TestData{d})
	case "txn":
		ops, err := parseOps(d.Input)
		if err != nil {
			return "", err
		}
		return readsWrite(db, ops)
	case "snapshot":
		return readsSnapshot(db, d)
	case "history":
		return readsHistory(db, d)
	case "pages":
		return readsPages(db, d)
	case "get":
		return runGet(db, d, FmtRecord)
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

// readsWrite runs ops in one transaction and prints what the commit wrote.
func readsWrite(db *store.DB, ops []*datadriven.TestData) (string, error) {
	c, _, err := commitOps(db, ops, false)
	if err != nil {
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

// keyRangeArg reads the prefix, start and end arguments of a range read.
func keyRangeArg(db *store.DB, d *datadriven.TestData) (query.KeyRange, error) {
	var r query.KeyRange
	table := arg(d, "table")
	for _, k := range []struct {
		name string
		key  *store.Key
	}{{"prefix", &r.Prefix}, {"start", &r.Start}, {"end", &r.End}} {
		var err error
		if *k.key, err = parseKey(db, table, arg(d, k.name)); err != nil {
			return query.KeyRange{}, err
		}
	}
	return r, nil
}

// readsLines renders the rows of a read, or "(none)".
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
	at, err := asOfArg(d)
	if err != nil {
		return "", err
	}
	keys, err := keyRangeArg(db, d)
	if err != nil {
		return "", err
	}
	return readsLines(query.Snapshot(db, arg(d, "table"), at, keys, query.SnapshotOptions{Project: projectArg(d)}), readsVersion)
}

// historyArgs reads the arguments of a history read: the valid-time window
// (from, to; unbounded when absent), the key range and the options.
func historyArgs(db *store.DB, d *datadriven.TestData) (from, to int64, keys query.KeyRange, opts query.HistoryOptions, err error) {
	if from, err = timeArg(d, "from", store.NegInfinity); err != nil {
		return
	}
	if to, err = timeArg(d, "to", store.Infinity); err != nil {
		return
	}
	if keys, err = keyRangeArg(db, d); err != nil {
		return
	}
	opts = query.HistoryOptions{Clip: d.HasArg("clip"), Project: projectArg(d)}
	if opts.Tx, err = timeArg(d, "tx", query.Latest); err != nil {
		return
	}
	if v := arg(d, "limit"); v != "" {
		opts.Limit, err = strconv.Atoi(v)
	}
	return
}

func readsHistory(db *store.DB, d *datadriven.TestData) (string, error) {
	table := arg(d, "table")
	from, to, keys, opts, err := historyArgs(db, d)
	if err != nil {
		return "", err
	}
	if k := arg(d, "key"); k != "" {
		key, err := parseKey(db, table, k)
		if err != nil {
			return "", err
		}
		return readsLines(query.History(db, table, key, from, to, opts), FmtRecord)
	}
	return readsLines(query.HistoryRange(db, table, keys, from, to, opts), FmtRecord)
}

// readsPages reads HistoryPage to the end; with commit-between, every page is
// followed by a commit that rewrites the whole table, which the pages must not
// see.
func readsPages(db *store.DB, d *datadriven.TestData) (string, error) {
	table := arg(d, "table")
	from, to, keys, opts, err := historyArgs(db, d)
	if err != nil {
		return "", err
	}
	var out strings.Builder
	for n := 1; ; n++ {
		page, err := query.HistoryPage(db, table, keys, from, to, opts)
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

func readsAudit(db *store.DB, d *datadriven.TestData) (string, error) {
	table := arg(d, "table")
	key, err := parseKey(db, table, arg(d, "key"))
	if err != nil {
		return "", err
	}
	return readsLines(query.Audit(db, table, key, query.AuditOptions{Project: projectArg(d)}), FmtRecord)
}

func readsChanges(db *store.DB, d *datadriven.TestData) (string, error) {
	since, until, err := changesArgs(d)
	if err != nil {
		return "", err
	}
	limit := 0
	if v := arg(d, "limit"); v != "" {
		if limit, err = strconv.Atoi(v); err != nil {
			return "", err
		}
	}
	var out strings.Builder
	cur := ""
	for n := 1; ; n++ {
		page, err := query.ChangesPage(db, arg(d, "table"), since, until, limit, cur, query.ChangesOptions{Project: projectArg(d)})
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
	v, err := getBySK(db, d)
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
	keys, err := keyRangeArg(db, d)
	if err != nil {
		return "", err
	}
	opts := query.GapOptions{Keys: keys}
	if opts.Tx, err = timeArg(d, "tx", query.Latest); err != nil {
		return "", err
	}
	if v := arg(d, "starts-after"); v != "" {
		opts.CheckStart = true
		if opts.StartsAfter, err = parseTime(v); err != nil {
			return "", err
		}
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
		var fact query.Fact
		var err error
		if fact.Key, err = parseKey(db, table, f[0]); err != nil {
			return "", err
		}
		if fact.At, err = parseTime(f[1]); err != nil {
			return "", err
		}
		if len(f) > 2 {
			if fact.Tx, err = parseTime(f[2]); err != nil {
				return "", err
			}
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
			fmt.Fprintf(&out, " {%s}", joinAttrs(r.Attrs, plainValue))
		}
		out.WriteString("\n")
	}
	if len(res) == 0 {
		out.WriteString("(none)\n")
	}
	return out.String(), nil
}
