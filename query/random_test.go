package query_test

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/bitempo/bitempo/internal/testutil"
	"github.com/bitempo/bitempo/internal/testutil/randstore"
	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// The randomized test writes random transactions and, after each commit, checks
// every read of this package against a brute-force answer computed from the
// records of every key (Snapshot.KeyRecords) with nothing but loops: snapshot,
// history and its pages, audit against the change feed, changes, GetBySK, gaps,
// and Resolve under each miss policy against per-fact Get. rapid shrinks a
// failure to a short list of operations.

// The groups share string prefixes ("a" starts "ab") so that a KeyRange with
// StringPrefix selects more than one group.
var randomGroups = []string{"a", "ab", "b"}

// randomKeys is the key universe, in key order.
func randomKeys() []store.Key {
	var keys []store.Key
	for _, g := range randomGroups {
		for n := int64(-1); n <= 2; n++ {
			keys = append(keys, store.Key{g, n})
		}
	}
	return keys
}

// compareKeys orders keys of the (string, int64) schema component by component;
// a shorter key (a partial bound) compares on its own components only.
func compareKeys(a, b store.Key) int {
	for i := range min(len(a), len(b)) {
		var c int
		switch x := a[i].(type) {
		case string:
			c = strings.Compare(x, b[i].(string))
		case int64:
			c = cmp.Compare(x, b[i].(int64))
		}
		if c != 0 {
			return c
		}
	}
	return 0
}

func inRange(k store.Key, kr query.KeyRange) bool {
	if kr.StringPrefix && len(kr.Prefix) == 1 {
		// the string last component matches as a string prefix
		return strings.HasPrefix(k[0].(string), kr.Prefix[0].(string)) &&
			(kr.Start == nil || compareKeys(k, kr.Start) >= 0) &&
			(kr.End == nil || compareKeys(k, kr.End) < 0)
	}
	return (kr.Prefix == nil || compareKeys(k, kr.Prefix) == 0) &&
		(kr.Start == nil || compareKeys(k, kr.Start) >= 0) &&
		(kr.End == nil || compareKeys(k, kr.End) < 0)
}

type randomWorld struct {
	db   *store.DB
	keys []store.Key
	txs  []int64
}

func drawKey(t *rapid.T, keys []store.Key, label string) store.Key {
	return rapid.SampledFrom(keys).Draw(t, label)
}

func drawTime(t *rapid.T, label string) int64 {
	return rapid.OneOf(rapid.Int64Range(-2, 30), rapid.SampledFrom([]int64{store.NegInfinity, store.Infinity})).Draw(t, label)
}

// drawTx returns Latest, a commit's time, or a time just before one.
func (w *randomWorld) drawTx(t *rapid.T, label string) int64 {
	if len(w.txs) == 0 || rapid.IntRange(0, 2).Draw(t, label+" latest") == 0 {
		return query.Latest
	}
	return rapid.SampledFrom(w.txs).Draw(t, label) - int64(rapid.IntRange(0, 1).Draw(t, label+" before"))
}

func (w *randomWorld) drawRange(t *rapid.T) query.KeyRange {
	var kr query.KeyRange
	if rapid.Bool().Draw(t, "has prefix") {
		kr.Prefix = store.Key{rapid.SampledFrom(append([]string{""}, randomGroups...)).Draw(t, "prefix")}
		if rapid.Bool().Draw(t, "whole prefix key") {
			kr.Prefix = append(kr.Prefix, int64(rapid.IntRange(-1, 2).Draw(t, "prefix n")))
		}
		kr.StringPrefix = rapid.Bool().Draw(t, "string prefix")
	}
	bound := func(label string) store.Key {
		switch rapid.IntRange(0, 2).Draw(t, label) {
		case 1:
			return store.Key{rapid.SampledFrom(randomGroups).Draw(t, label+" group")}
		case 2:
			return drawKey(t, w.keys, label+" key")
		}
		return nil
	}
	kr.Start, kr.End = bound("start"), bound("end")
	return kr
}

func (w *randomWorld) write(t *rapid.T) {
	w.txs = append(w.txs, randstore.Write(t, w.db, randstore.Rapid(t), randstore.History{
		Table: "r", Commits: 1, MaxOps: 3,
		Ops:   []randstore.Op{randstore.Put, randstore.Put, randstore.Delete, randstore.Upsert, randstore.DeleteAt},
		Key:   func(int) store.Key { return drawKey(t, w.keys, "key") },
		Attrs: func() store.Attrs { return store.Attrs{"v": rapid.Int64Range(0, 2).Draw(t, "v")} },
		Valid: 26, PutLen: 10, DeleteLen: 10, Open: 5, Log: t.Logf,
	})...)
}

// records returns every record of every key of the universe, by key.
func (w *randomWorld) records(t *rapid.T) [][]store.Version {
	s, err := w.db.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tb, err := s.Table("r")
	if err != nil {
		t.Fatal(err)
	}
	out := make([][]store.Version, len(w.keys))
	for i, k := range w.keys {
		tuple, err := tb.AppendKey(nil, k)
		if err != nil {
			t.Fatal(err)
		}
		if out[i], err = s.KeyRecords(tb, tuple); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// aliveAt returns the records alive at tx, in valid order.

func (w *randomWorld) concreteTx(tx int64) int64 {
	if tx == query.Latest {
		return w.db.LastTx()
	}
	return tx
}

func renderAll[T any](rows []T, render func(T) string) string {
	var b strings.Builder
	for _, r := range rows {
		b.WriteString(render(r) + "\n")
	}
	return b.String()
}

func seqRows[T any](t *rapid.T, seq func(func(T, error) bool)) []T {
	var out []T
	for v, err := range seq {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	return out
}

// newRandomWorld opens an in-memory store whose clock ticks by one per
// transaction, with table "r" keyed by (g string, n int64); the caller closes
// w.db.
func newRandomWorld(t *rapid.T) *randomWorld {
	clock := int64(1000)
	db, err := store.Open("db", store.Options{InMemory: true, Clock: func() int64 { clock++; return clock }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateTable(store.TableDef{Name: "r", Key: []store.KeyColumn{{Name: "g", Type: store.String}, {Name: "n", Type: store.Int64}}, MixedTypes: true}); err != nil {
		db.Close()
		t.Fatal(err)
	}
	return &randomWorld{db: db, keys: randomKeys()}
}

func TestReadsMatchBruteForce(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		w := newRandomWorld(t)
		defer w.db.Close()
		for range rapid.IntRange(1, 12).Draw(t, "commits") {
			w.write(t)
			recs := w.records(t)
			w.checkSnapshot(t, recs)
			w.checkHistory(t, recs)
			w.checkAuditAndChanges(t, recs)
			w.checkBySK(t, recs)
			w.checkGaps(t, recs)
			w.checkResolve(t)
		}
		w.checkResolveInferred(t)
	})
}

func (w *randomWorld) checkSnapshot(t *rapid.T, recs [][]store.Version) {
	at := query.AsOf{Valid: drawTime(t, "snapshot valid"), Tx: w.drawTx(t, "snapshot tx")}
	kr := w.drawRange(t)
	var want []store.Version
	for i, k := range w.keys {
		if !inRange(k, kr) {
			continue
		}
		for _, v := range testutil.AliveAt(recs[i], w.concreteTx(at.Tx)) {
			if v.Covers(at.Valid) {
				want = append(want, v)
			}
		}
	}
	got := seqRows(t, query.Snapshot(w.db, "r", at, kr, query.SnapshotOptions{}))
	if a, b := renderAll(got, fmtRecord), renderAll(want, fmtRecord); a != b {
		t.Fatalf("Snapshot(%+v, %+v):\n%s\nwant\n%s", at, kr, a, b)
	}
}

func (w *randomWorld) checkHistory(t *rapid.T, recs [][]store.Version) {
	from := drawTime(t, "history from")
	to := from + rapid.Int64Range(1, 20).Draw(t, "history length")
	if from == store.Infinity || rapid.IntRange(0, 3).Draw(t, "whole") == 0 {
		from, to = store.NegInfinity, store.Infinity
	}
	opts := query.HistoryOptions{Tx: w.drawTx(t, "history tx"), Clip: rapid.Bool().Draw(t, "clip")}
	kr := w.drawRange(t)
	var want []store.Version
	for i, k := range w.keys {
		if !inRange(k, kr) {
			continue
		}
		for _, v := range testutil.AliveAt(recs[i], w.concreteTx(opts.Tx)) {
			if v.ValidFrom < to && v.ValidTo > from {
				if opts.Clip {
					v.ValidFrom, v.ValidTo = max(v.ValidFrom, from), min(v.ValidTo, to)
				}
				want = append(want, v)
			}
		}
	}
	wantText := renderAll(want, fmtRecord)
	got := seqRows(t, query.HistoryRange(w.db, "r", kr, from, to, opts))
	if a := renderAll(got, fmtRecord); a != wantText {
		t.Fatalf("HistoryRange(%+v, [%d, %d), %+v):\n%s\nwant\n%s", kr, from, to, opts, a, wantText)
	}
	// Pages concatenate to the same rows, and a single key's History is its slice.
	opts.Limit = rapid.IntRange(1, 4).Draw(t, "page size")
	var paged []store.Version
	for pages := 0; ; pages++ {
		page, err := query.HistoryPage(w.db, "r", kr, from, to, opts)
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Rows) > opts.Limit || (page.Next != "" && len(page.Rows) != opts.Limit) || pages > len(want) {
			t.Fatalf("page %d of %d rows with next %q (limit %d)", pages, len(page.Rows), page.Next, opts.Limit)
		}
		paged = append(paged, page.Rows...)
		if page.Next == "" {
			break
		}
		opts.Cursor = page.Next
	}
	if a := renderAll(paged, fmtRecord); a != wantText {
		t.Fatalf("HistoryPage by %d:\n%s\nwant\n%s", opts.Limit, a, wantText)
	}
	key := drawKey(t, w.keys, "history key")
	var one []store.Version
	for _, v := range want {
		if compareKeys(v.Key, key) == 0 {
			one = append(one, v)
		}
	}
	opts.Limit, opts.Cursor = 0, ""
	if !inRange(key, kr) {
		return
	}
	got = seqRows(t, query.History(w.db, "r", key, from, to, opts))
	if a, b := renderAll(got, fmtRecord), renderAll(one, fmtRecord); a != b {
		t.Fatalf("History(%s):\n%s\nwant\n%s", key, a, b)
	}
}

type changeRow struct {
	tx  int64
	op  query.Op
	rec string
}

func sortChangeRows(rows []changeRow) {
	slices.SortFunc(rows, func(a, b changeRow) int {
		return cmp.Or(cmp.Compare(a.tx, b.tx), cmp.Compare(a.op, b.op), strings.Compare(a.rec, b.rec))
	})
}

// checkAuditAndChanges checks that Audit yields each key's records in
// transaction order, and that the change feed of a window holds exactly one
// assertion per record at its TxFrom and one retirement at its TxTo.
func (w *randomWorld) checkAuditAndChanges(t *rapid.T, recs [][]store.Version) {
	var audited []store.Version
	for i, k := range w.keys {
		got := seqRows(t, query.Audit(w.db, "r", k, query.AuditOptions{}))
		if len(got) != len(recs[i]) {
			t.Fatalf("Audit(%s): %d records, want %d", k, len(got), len(recs[i]))
		}
		for j := 1; j < len(got); j++ {
			if got[j].TxFrom < got[j-1].TxFrom {
				t.Fatalf("Audit(%s) out of transaction order:\n%s", k, renderAll(got, fmtRecord))
			}
		}
		audited = append(audited, got...)
	}
	since := w.drawTx(t, "since")
	until := w.drawTx(t, "until")
	end := w.concreteTx(until)
	var want []changeRow
	for _, r := range audited {
		if r.TxTo > end {
			r.TxTo = store.Infinity
		}
		if r.TxFrom > since && r.TxFrom <= end {
			want = append(want, changeRow{r.TxFrom, query.Asserted, fmtRecord(r)})
		}
		if r.TxTo != store.Infinity && r.TxTo > since {
			want = append(want, changeRow{r.TxTo, query.Retired, fmtRecord(r)})
		}
	}
	sortChangeRows(want)
	changes := seqRows(t, query.Changes(w.db, "r", since, until, "", query.ChangesOptions{}))
	var got []changeRow
	for i, c := range changes {
		if i > 0 && c.Tx < changes[i-1].Tx {
			t.Fatalf("Changes out of transaction order at %d", i)
		}
		got = append(got, changeRow{c.Tx, c.Op, fmtRecord(c.Version)})
		// Every change's cursor resumes right after it.
		if rest := seqRows(t, query.Changes(w.db, "r", since, until, c.Cursor(), query.ChangesOptions{})); len(rest) != len(changes)-i-1 {
			t.Fatalf("Changes resumed after change %d: %d changes, want %d", i, len(rest), len(changes)-i-1)
		}
	}
	sortChangeRows(got)
	if a, b := fmt.Sprint(got), fmt.Sprint(want); a != b {
		t.Fatalf("Changes(%d, %d]:\n%s\nwant\n%s", since, until, a, b)
	}
}

func (w *randomWorld) checkBySK(t *rapid.T, recs [][]store.Version) {
	var all []store.Version
	var maxSK uint64
	for _, rs := range recs {
		all = append(all, rs...)
		for _, r := range rs {
			maxSK = max(maxSK, r.SK)
		}
	}
	tx := w.drawTx(t, "sk tx")
	at := w.concreteTx(tx)
	for sk := uint64(0); sk <= maxSK+1; sk++ {
		var alive, newest *store.Version
		for i := range all {
			r := &all[i]
			if r.SK != sk || r.TxFrom > at {
				continue
			}
			if r.AliveAt(at) {
				alive = r
			}
			if newest == nil || r.TxFrom > newest.TxFrom {
				newest = r
			}
		}
		got, err := query.GetBySK(w.db, "r", sk, tx, query.GetOptions{})
		var miss *query.SKMiss
		switch {
		case alive != nil:
			if err != nil || fmtRecord(got) != fmtRecord(*alive) {
				t.Fatalf("GetBySK(%d, %d) = %s, %v; want %s", sk, tx, fmtRecord(got), err, fmtRecord(*alive))
			}
		case newest != nil:
			if !errors.As(err, &miss) || !errors.Is(err, query.ErrRetiredSK) || miss.Retired != newest.TxTo {
				t.Fatalf("GetBySK(%d, %d) = %v, want retired by %d", sk, tx, err, newest.TxTo)
			}
		default:
			if !errors.Is(err, query.ErrUnknownSK) || !errors.Is(err, query.ErrNotFound) {
				t.Fatalf("GetBySK(%d, %d) = %v, want unknown", sk, tx, err)
			}
		}
	}
}

func (w *randomWorld) checkGaps(t *rapid.T, recs [][]store.Version) {
	opts := query.GapOptions{Tx: w.drawTx(t, "gaps tx"), Keys: w.drawRange(t)}
	if rapid.Bool().Draw(t, "check start") {
		opts.CheckStart, opts.StartsAfter = true, drawTime(t, "starts after")
	}
	render := func(g query.KeyGaps) string {
		return fmt.Sprintf("%s %d %d %v %v", g.Key, g.First, g.Last, g.Gaps, g.LateStart)
	}
	var want []query.KeyGaps
	for i, k := range w.keys {
		vs := testutil.AliveAt(recs[i], w.concreteTx(opts.Tx))
		if !inRange(k, opts.Keys) || len(vs) == 0 {
			continue
		}
		g := query.KeyGaps{Key: k, First: vs[0].ValidFrom, Last: vs[len(vs)-1].ValidTo}
		for j := 1; j < len(vs); j++ {
			if vs[j-1].ValidTo < vs[j].ValidFrom {
				g.Gaps = append(g.Gaps, query.Period{From: vs[j-1].ValidTo, To: vs[j].ValidFrom})
			}
		}
		g.LateStart = opts.CheckStart && g.First > opts.StartsAfter
		if len(g.Gaps) > 0 || g.LateStart {
			want = append(want, g)
		}
	}
	got := seqRows(t, query.Gaps(w.db, "r", opts))
	if a, b := renderAll(got, render), renderAll(want, render); a != b {
		t.Fatalf("Gaps(%+v):\n%s\nwant\n%s", opts, a, b)
	}
}

// drawFacts draws facts over the universe and one key never written.
func (w *randomWorld) drawFacts(t *rapid.T) []query.Fact {
	keys := append(slices.Clone(w.keys), store.Key{"z", int64(9)})
	facts := make([]query.Fact, rapid.IntRange(0, 30).Draw(t, "facts"))
	for i := range facts {
		facts[i] = query.Fact{Key: drawKey(t, keys, "fact key"), At: drawTime(t, "fact at"), Tx: w.drawTx(t, "fact tx")}
	}
	return facts
}

// getAll answers each fact with Get, the reference for Resolve.
func (w *randomWorld) getAll(t *rapid.T, facts []query.Fact) []query.Resolution {
	want := make([]query.Resolution, len(facts))
	for i, f := range facts {
		v, err := query.Get(w.db, "r", f.Key, query.AsOf{Valid: f.At, Tx: f.Tx}, query.GetOptions{})
		var miss *query.Miss
		switch {
		case errors.As(err, &miss):
			want[i] = query.Resolution{Index: i, Reason: miss.Reason}
		case err != nil:
			t.Fatal(err)
		default:
			want[i] = query.Resolution{Index: i, SK: v.SK, Inferred: v.Inferred, Attrs: v.Attrs}
		}
	}
	return want
}

func fmtResolution(r query.Resolution) string {
	return fmt.Sprintf("%d sk=%d %v inferred=%v default=%v %v", r.Index, r.SK, r.Reason, r.Inferred, r.Default, r.Attrs)
}

func (w *randomWorld) checkResolve(t *rapid.T) {
	facts := w.drawFacts(t)
	want := w.getAll(t, facts)
	attrs := rapid.Bool().Draw(t, "attrs")
	if !attrs {
		for i := range want {
			want[i].Attrs = nil
		}
	}
	check := func(policy query.MissPolicy, want []query.Resolution) {
		got, err := query.Resolve(w.db, "r", facts, query.ResolveOptions{Miss: policy, Default: 77, Attrs: attrs})
		if err != nil {
			t.Fatalf("Resolve policy %d: %v", policy, err)
		}
		if a, b := renderAll(got, fmtResolution), renderAll(want, fmtResolution); a != b {
			t.Fatalf("Resolve policy %d of %v:\n%s\nwant\n%s", policy, facts, a, b)
		}
	}
	check(query.MissNull, want)
	var kept []query.Resolution
	defaulted := slices.Clone(want)
	for i, r := range want {
		if r.Found() {
			kept = append(kept, r)
		} else {
			defaulted[i].SK, defaulted[i].Default = 77, true
		}
	}
	check(query.MissSkip, kept)
	check(query.MissDefault, defaulted)
	_, err := query.Resolve(w.db, "r", facts, query.ResolveOptions{Miss: query.MissError})
	first := slices.IndexFunc(want, func(r query.Resolution) bool { return !r.Found() })
	var miss *query.Miss
	switch {
	case first < 0 && err != nil:
		t.Fatalf("Resolve MissError without misses: %v", err)
	case first >= 0 && (!errors.As(err, &miss) || miss.Reason != want[first].Reason ||
		!strings.Contains(err.Error(), fmt.Sprintf("fact %d:", first))):
		t.Fatalf("Resolve MissError: %v, want the miss of fact %d (%v)", err, first, want[first].Reason)
	}
}

// checkResolveInferred resolves with txn.ResolveInferred (which writes), then checks
// each fact against Get on the store it left.
func (w *randomWorld) checkResolveInferred(t *rapid.T) {
	facts := w.drawFacts(t)
	before := w.getAll(t, facts)
	last := w.db.LastTx()
	got, err := txn.ResolveInferred(w.db, "r", facts, query.ResolveOptions{Miss: query.MissNull})
	if err != nil {
		t.Fatal(err)
	}
	if err := verify(w.db); err != nil {
		t.Fatal(err)
	}
	for i, f := range facts {
		inferable := before[i].Reason == store.UnknownKey && (f.Tx == query.Latest || f.Tx >= last) && f.At != store.Infinity
		if !inferable {
			before[i].Attrs = nil
			if a, b := fmtResolution(got[i]), fmtResolution(before[i]); a != b {
				t.Fatalf("ResolveInferred fact %d %v: %s, want %s", i, f, a, b)
			}
			continue
		}
		v, err := query.Get(w.db, "r", f.Key, query.AsOf{Valid: f.At}, query.GetOptions{})
		if err != nil || !v.Inferred || !got[i].Inferred || got[i].SK != v.SK || !got[i].Found() {
			t.Fatalf("ResolveInferred fact %d %v: %s; the store has %s, %v", i, f, fmtResolution(got[i]), fmtRecord(v), err)
		}
	}
}
