package query_test

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// TestAggregate runs the scenario files in testdata/aggregate. Valid times are
// dates or date-times (2024-01-08, 2024-01-08T06:00, UTC) or integers on int-axis
// tables; "-inf" and "+inf" are allowed. Transaction times come from a clock
// stuck at 0, so the commits get tx 1, 2, 3, ... (each write prints its tx).
//
//	create table=T key=col:type[,col:type] [group=a[,b]] [axis=int]
//	upsert table=T key=K at=A          attributes on the next line: name=value ...
//	put table=T key=K from=F to=T      (same)
//	delete table=T key=K from=F to=T
//	deleteat table=T key=K at=A
//	group table=T group=G [tx=N]       the group index: records of G alive at tx
//	agg table=T group=G ts=TS [tx=N]   one spec per line; prints the features
//	agg table=T all ts=TS [tx=N]       table-wide
//	backfill table=T [tx=N] [all]      lines "agg SPEC" and "row GROUP TS [tx=N]"
//
// Values: integers, decimals (float64), null, true/false, "quoted strings",
// t:RFC3339 times (time.Time), other words are strings. Group keys are written like values. Every point query is
// checked against a one-row backfill, and every backfill row against the point
// query, so each expectation holds for both paths. The store is verified after
// every write.
func TestAggregate(t *testing.T) {
	datadriven.Walk(t, "testdata/aggregate", func(t *testing.T, path string) {
		db, err := store.Open("db", store.Options{InMemory: true, Clock: func() int64 { return 0 }})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			out, err := runAggCmd(t, db, d)
			if err != nil {
				return "error: " + err.Error() + "\n"
			}
			return out
		})
	})
}

func runAggCmd(t *testing.T, db *store.DB, d *datadriven.TestData) (string, error) {
	switch d.Cmd {
	case "create":
		return "", aggCreate(db, d)
	case "upsert", "put", "delete", "deleteat":
		return aggWrite(t, db, d)
	case "group":
		return aggGroup(db, d)
	case "agg":
		return aggPoint(t, db, d)
	case "backfill":
		return aggBackfill(t, db, d)
	}
	return "", fmt.Errorf("unknown command %q", d.Cmd)
}

func aggArg(d *datadriven.TestData, key string) string {
	for _, a := range d.CmdArgs {
		if a.Key == key && len(a.Vals) > 0 {
			return a.Vals[0]
		}
	}
	return ""
}

func aggCreate(db *store.DB, d *datadriven.TestData) error {
	def := store.TableDef{Name: aggArg(d, "table")}
	for _, col := range strings.Split(aggArg(d, "key"), ",") {
		name, typ, _ := strings.Cut(col, ":")
		kt, err := store.ParseKeyType(typ)
		if err != nil {
			return err
		}
		def.Key = append(def.Key, store.KeyColumn{Name: name, Type: kt})
	}
	if g := aggArg(d, "group"); g != "" {
		def.GroupBy = strings.Split(g, ",")
	}
	if aggArg(d, "axis") == "int" {
		def.Axis = store.AxisInt
	}
	_, err := db.CreateTable(def)
	return err
}

// aggTime parses a valid time: a date, a date-time, an integer or ±inf.
func aggTime(s string) (int64, error) {
	switch s {
	case "-inf":
		return store.NegInfinity, nil
	case "+inf", "inf":
		return store.Infinity, nil
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, nil
	}
	for _, layout := range []string{"2006-01-02", "2006-01-02T15:04", "2006-01-02T15:04:05"} {
		if tm, err := time.Parse(layout, s); err == nil {
			return tm.UnixMicro(), nil
		}
	}
	return 0, fmt.Errorf("bad time %q", s)
}

func aggFormatTime(t int64, intAxis bool) string {
	switch {
	case t == store.Infinity:
		return "+inf"
	case t == store.NegInfinity:
		return "-inf"
	case intAxis:
		return fmt.Sprint(t)
	}
	tm := time.UnixMicro(t).UTC()
	if tm.Hour() == 0 && tm.Minute() == 0 && tm.Second() == 0 && tm.Nanosecond() == 0 {
		return tm.Format("2006-01-02")
	}
	return tm.Format("2006-01-02T15:04:05.999999")
}

// aggValue parses an attribute value or a group key component.
func aggValue(s string) any {
	switch {
	case s == "null":
		return nil
	case s == "true" || s == "false":
		return s == "true"
	case strings.HasPrefix(s, `"`):
		u, err := strconv.Unquote(s)
		if err == nil {
			return u
		}
	case strings.HasPrefix(s, "t:"):
		if tm, err := time.Parse(time.RFC3339Nano, s[2:]); err == nil {
			return tm
		}
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return f
	}
	return s
}

func aggFormatValue(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64) + "f"
	case string:
		return strconv.Quote(x)
	case []byte:
		return fmt.Sprintf("0x%x", x)
	case time.Time:
		return "t:" + x.Format(time.RFC3339Nano)
	}
	return fmt.Sprint(v)
}

func aggAttrs(line string) store.Attrs {
	attrs := store.Attrs{}
	for _, f := range strings.Fields(line) {
		name, value, _ := strings.Cut(f, "=")
		attrs[name] = aggValue(value)
	}
	return attrs
}

func aggKey(db *store.DB, table, s string) (store.Key, error) {
	tb, err := db.Table(table)
	if err != nil {
		return nil, err
	}
	parts := strings.Split(s, ",")
	key := make(store.Key, len(parts))
	for i, p := range parts {
		if i < len(tb.Key) && tb.Key[i].Type == store.Int64 {
			n, err := strconv.ParseInt(p, 10, 64)
			if err != nil {
				return nil, err
			}
			key[i] = n
		} else {
			key[i] = p
		}
	}
	return key, nil
}

func aggWrite(t *testing.T, db *store.DB, d *datadriven.TestData) (string, error) {
	table := aggArg(d, "table")
	key, err := aggKey(db, table, aggArg(d, "key"))
	if err != nil {
		return "", err
	}
	times := map[string]int64{}
	for _, name := range []string{"at", "from", "to"} {
		if v := aggArg(d, name); v != "" {
			if times[name], err = aggTime(v); err != nil {
				return "", err
			}
		}
	}
	attrs := aggAttrs(d.Input)
	c, err := txn.Update(db, func(tx *txn.Tx) error {
		switch d.Cmd {
		case "upsert":
			_, err := tx.Upsert(table, key, attrs, times["at"])
			return err
		case "put":
			return tx.Put(table, key, attrs, times["from"], times["to"])
		case "delete":
			return tx.Delete(table, key, times["from"], times["to"])
		}
		_, err := tx.DeleteAt(table, key, times["at"])
		return err
	})
	if err != nil {
		return "", err
	}
	rep, err := store.Verify(db)
	if err != nil {
		return "", err
	}
	if !rep.OK() {
		t.Fatalf("verify after %s: %s", d.Pos, rep)
	}
	if c.Tx == 0 {
		return "no change\n", nil
	}
	return fmt.Sprintf("tx %d\n", c.Tx), nil
}

func aggTx(d *datadriven.TestData) int64 {
	n, _ := strconv.ParseInt(aggArg(d, "tx"), 10, 64)
	return n
}

func aggGroup(db *store.DB, d *datadriven.TestData) (string, error) {
	s, err := db.Snapshot()
	if err != nil {
		return "", err
	}
	defer s.Close()
	tb, err := s.Table(aggArg(d, "table"))
	if err != nil {
		return "", err
	}
	group, err := tb.AppendGroupKey(nil, store.Key{aggValue(aggArg(d, "group"))})
	if err != nil {
		return "", err
	}
	tx := aggTx(d)
	if tx == 0 {
		tx = s.LastTx()
	}
	intAxis := tb.Axis == store.AxisInt
	var b strings.Builder
	for r, err := range s.GroupRecords(tb, group, tx, tx) {
		if err != nil {
			return "", err
		}
		key, err := tb.DecodeKey(r.Tuple)
		if err != nil {
			return "", err
		}
		attrs, err := r.Attrs()
		if err != nil {
			return "", err
		}
		var parts []string
		for _, n := range attrs.Names() {
			parts = append(parts, n+"="+aggFormatValue(attrs[n]))
		}
		fmt.Fprintf(&b, "%s [%s, %s) tx %d %s\n", key, aggFormatTime(r.ValidFrom, intAxis), aggFormatTime(r.ValidTo, intAxis), r.TxFrom, strings.Join(parts, " "))
	}
	if b.Len() == 0 {
		return "empty\n", nil
	}
	return b.String(), nil
}

func aggSpecs(lines []string) ([]query.Agg, error) {
	var aggs []query.Agg
	for _, l := range lines {
		a, err := query.ParseAgg(l)
		if err != nil {
			return nil, err
		}
		aggs = append(aggs, a)
	}
	return aggs, nil
}

func aggFormatFeatures(names []string, values []any) string {
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = n + "=" + aggFormatValue(values[i])
	}
	return strings.Join(parts, " ")
}

func aggPoint(t *testing.T, db *store.DB, d *datadriven.TestData) (string, error) {
	table := aggArg(d, "table")
	aggs, err := aggSpecs(strings.Split(strings.TrimSpace(d.Input), "\n"))
	if err != nil {
		return "", err
	}
	ts, err := aggTime(aggArg(d, "ts"))
	if err != nil {
		return "", err
	}
	at := query.AsOf{Valid: ts, Tx: aggTx(d)}
	row := query.LeftRow{TS: ts, Tx: at.Tx}
	var f query.Features
	if d.HasArg("all") {
		f, err = query.AggregateTable(db, table, at, aggs)
	} else {
		row.Group = store.Key{aggValue(aggArg(d, "group"))}
		f, err = query.Aggregate(db, table, row.Group, at, aggs)
	}
	got := ""
	if err == nil {
		got = aggFormatFeatures(f.Names, f.Values) + "\n"
	}
	// The same request through Backfill must agree, error included.
	bf, berr := aggRunBackfill(db, table, []query.LeftRow{row}, aggs, query.BackfillOptions{TableWide: d.HasArg("all")})
	if (err == nil) != (berr == nil) || (err == nil && bf[0] != got) {
		t.Errorf("%s: point query %q (%v) but backfill %q (%v)", d.Pos, got, err, bf, berr)
	}
	return got, err
}

// aggRunBackfill returns one formatted line per row.
func aggRunBackfill(db *store.DB, table string, rows []query.LeftRow, aggs []query.Agg, opts query.BackfillOptions) ([]string, error) {
	names, err := query.FeatureNames(aggs)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(rows))
	for r, err := range query.Backfill(db, table, rows, aggs, opts) {
		if err != nil {
			return nil, err
		}
		if r.Index != len(out) {
			return nil, fmt.Errorf("row %d yielded at position %d", r.Index, len(out))
		}
		out = append(out, aggFormatFeatures(names, r.Values)+"\n")
	}
	if len(out) != len(rows) {
		return nil, fmt.Errorf("%d rows yielded for %d", len(out), len(rows))
	}
	return out, nil
}

func aggBackfill(t *testing.T, db *store.DB, d *datadriven.TestData) (string, error) {
	table := aggArg(d, "table")
	var err error
	var specs, labels []string
	var rows []query.LeftRow
	for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
		fields := strings.Fields(line)
		switch {
		case len(fields) == 2 && fields[0] == "agg":
			specs = append(specs, fields[1])
		case len(fields) >= 3 && fields[0] == "row":
			var row query.LeftRow
			if !d.HasArg("all") {
				row.Group = store.Key{aggValue(fields[1])}
			}
			if row.TS, err = aggTime(fields[2]); err != nil {
				return "", err
			}
			if len(fields) > 3 {
				if row.Tx, err = strconv.ParseInt(strings.TrimPrefix(fields[3], "tx="), 10, 64); err != nil {
					return "", err
				}
			}
			rows = append(rows, row)
			labels = append(labels, strings.Join(fields[1:], " "))
		default:
			return "", fmt.Errorf("bad line %q", line)
		}
	}
	aggs, err := aggSpecs(specs)
	if err != nil {
		return "", err
	}
	opts := query.BackfillOptions{Tx: aggTx(d), TableWide: d.HasArg("all")}
	var progress []query.BackfillProgress
	opts.Progress = func(p query.BackfillProgress) { progress = append(progress, p) }
	out, err := aggRunBackfill(db, table, rows, aggs, opts)
	if err != nil {
		return "", err
	}
	if n := len(progress); n == 0 || progress[n-1].Rows != len(rows) || progress[n-1].TotalRows != len(rows) {
		t.Errorf("%s: progress %+v does not end at %d rows", d.Pos, progress, len(rows))
	}
	var b strings.Builder
	for i, line := range out {
		// Each row must equal its point query.
		row := rows[i]
		tx := cmp.Or(row.Tx, opts.Tx)
		var f query.Features
		if opts.TableWide {
			f, err = query.AggregateTable(db, table, query.AsOf{Valid: row.TS, Tx: tx}, aggs)
		} else {
			f, err = query.Aggregate(db, table, row.Group, query.AsOf{Valid: row.TS, Tx: tx}, aggs)
		}
		if err != nil || aggFormatFeatures(f.Names, f.Values)+"\n" != line {
			t.Errorf("%s: row %d: backfill %q, point query %v (%v)", d.Pos, i, line, f, err)
		}
		fmt.Fprintf(&b, "%s: %s", labels[i], line)
	}
	return b.String(), nil
}

func TestParseAgg(t *testing.T) {
	for _, c := range []struct {
		spec, canon, names string
	}{
		{"sum(amount):7d,30d", "sum(amount):7d,30d", "amount_sum_7d amount_sum_30d"},
		{"avg(amount)", "avg(amount)", "amount_avg"},
		{"count", "count", "count"},
		{"COUNT()", "count", "count"},
		{"exists", "exists", "exists"},
		{"count_distinct(status)", "count_distinct(status)", "status_count_distinct"},
		{"count@birth_ts:10950d", "count@birth_ts:10950d", "count_by_birth_ts_10950d"},
		{"Max(amount)@signed_ts:12h, 90m", "max(amount)@signed_ts:12h,90m", "amount_max_by_signed_ts_12h amount_max_by_signed_ts_90m"},
		{"latest(status)", "latest(status)", "status_latest"},
		{"earliest(status):1d", "earliest(status):1d", "status_earliest_1d"},
		{"min(amount)", "min(amount)", "amount_min"},
	} {
		a, err := query.ParseAgg(c.spec)
		if err != nil {
			t.Errorf("%q: %v", c.spec, err)
			continue
		}
		if a.String() != c.canon || strings.Join(a.Names(), " ") != c.names {
			t.Errorf("%q: parsed as %q with names %v, want %q %q", c.spec, a.String(), a.Names(), c.canon, c.names)
		}
		if b, err := query.ParseAgg(a.String()); err != nil || b.String() != a.String() {
			t.Errorf("%q does not round-trip: %v %v", c.spec, b, err)
		}
	}
	for _, bad := range []string{"", "sum", "sum()", "count(amount)", "exists(x)", "median(amount)", "sum(amount", "sum(amount):",
		"sum(amount):7", "sum(amount):7w", "sum(amount):0d", "sum(amount):-1d", "sum(amount):+1d", "sum(amount):7d,7d",
		"count@:1d", "count@birth_ts", "sum(a b)", "sum(amount):999999999999d"} {
		_, err := query.ParseAgg(bad)
		var aerr *query.AggError
		if !errors.Is(err, query.ErrInvalidAgg) || !errors.As(err, &aerr) || aerr.Spec != bad {
			t.Errorf("%q: got %v, want an *AggError naming the spec", bad, err)
		}
	}
	if err := (query.Agg{Op: query.AggSum}).Validate(); !errors.Is(err, query.ErrInvalidAgg) || !strings.Contains(err.Error(), `"sum"`) {
		t.Errorf("Validate of sum without input: %v", err)
	}
	sum7, _ := query.ParseAgg("sum(amount):7d")
	sum7b, _ := query.ParseAgg("sum(amount):7d,30d")
	if _, err := query.FeatureNames([]query.Agg{sum7, sum7b}); !errors.Is(err, query.ErrInvalidAgg) || !strings.Contains(err.Error(), "amount_sum_7d") {
		t.Errorf("duplicate feature names: %v", err)
	}
	if _, err := query.FeatureNames(nil); !errors.Is(err, query.ErrInvalidAgg) {
		t.Errorf("no aggregations: %v", err)
	}
	if w, err := query.ParseWindow("10950d"); err != nil || w.Ticks() != 10950*86_400_000_000 {
		t.Errorf("10950d: %v %v", w, err)
	}
	if max, err := query.ParseWindow(fmt.Sprintf("%dm", math.MaxInt64/60_000_000)); err != nil || max.Ticks() <= 0 {
		t.Errorf("largest window: %v %v", max, err)
	}
}

// TestAggregateChangesTable checks that the group index follows a changes table
// through CDC batches that arrive out of order, including an entity that moves
// between groups and a late event that lands in the middle of a timeline.
func TestAggregateChangesTable(t *testing.T) {
	db, err := store.Open("db", store.Options{InMemory: true, Clock: func() int64 { return 0 }})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.CreateTable(store.TableDef{
		Name: "accounts", Kind: store.Changes, Axis: store.AxisInt,
		Key: []store.KeyColumn{{Name: "id", Type: store.String}}, GroupBy: []string{"branch"},
	}); err != nil {
		t.Fatal(err)
	}
	ev := func(key string, at int64, op txn.Op, branch string, balance int64) txn.Event {
		return txn.Event{Key: store.Key{key}, At: at, Op: op, Attrs: store.Attrs{"branch": branch, "balance": balance}}
	}
	batches := [][]txn.Event{
		{ev("a1", 10, txn.OpUpsert, "north", 100), ev("a2", 10, txn.OpUpsert, "north", 5)},
		{ev("a1", 30, txn.OpUpsert, "south", 100)}, // a1 moves to south at 30
		{ev("a2", 40, txn.OpDelete, "", 0)},
		{ev("a1", 20, txn.OpUpsert, "north", 150)}, // late: lands between 10 and 30
	}
	var txs []int64
	for i, b := range batches {
		res, err := txn.Apply(db, "accounts", fmt.Sprint("batch-", i), b)
		if err != nil {
			t.Fatal(err)
		}
		txs = append(txs, res.Tx)
		rep, err := store.Verify(db)
		if err != nil || !rep.OK() {
			t.Fatalf("verify after batch %d: %v %v", i, rep, err)
		}
	}
	// A batch with a group value the index cannot hold is refused whole.
	last := db.LastTx()
	bad := txn.Event{Key: store.Key{"a9"}, At: 5, Op: txn.OpUpsert, Attrs: store.Attrs{"branch": 1.5}}
	if _, err := txn.Apply(db, "accounts", "bad", []txn.Event{bad}); !errors.Is(err, store.ErrGroupValue) {
		t.Fatalf("float group value: %v", err)
	}
	if db.LastTx() != last {
		t.Fatal("a refused batch committed")
	}
	sum, _ := query.ParseAgg("sum(balance)")
	count, _ := query.ParseAgg("count")
	aggs := []query.Agg{sum, count}
	for _, c := range []struct {
		branch string
		ts, tx int64
		want   string
	}{
		{"north", 15, 0, "amount=105 count=2"},
		{"north", 25, 0, "amount=155 count=2"},
		{"north", 25, txs[2], "amount=105 count=2"}, // before the late event
		{"north", 30, 0, "amount=5 count=1"},
		{"south", 30, 0, "amount=100 count=1"},
		{"south", 29, 0, "amount=<nil> count=0"},
		{"north", 40, 0, "amount=<nil> count=0"},
		{"north", 40, txs[1], "amount=5 count=1"},
	} {
		f, err := query.Aggregate(db, "accounts", store.Key{c.branch}, query.AsOf{Valid: c.ts, Tx: c.tx}, aggs)
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprintf("amount=%v count=%v", f.Values[0], f.Values[1]); got != c.want {
			t.Errorf("%s at %d tx %d: %s, want %s", c.branch, c.ts, c.tx, got, c.want)
		}
	}
}
