package query_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/internal/testlong"
	"github.com/bitempo/bitempo/internal/testutil/randstore"
	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
)

// rowsStore writes a random history of table "h", keyed by (g string, n
// int64), into a store whose clock ticks by ten per commit: attributes of
// every kind, SCD2 closes (some whose retired records share their
// successor's attributes), corrections at every later transaction time,
// deletions, gaps and placeholders. It returns the store, the keys the
// history may hold (in key order) and the transaction times of its commits.
func rowsStore(t *testing.T, rng *rand.Rand, keys, commits int) (*store.DB, []store.Key, []int64) {
	t.Helper()
	db := tickingStore(t)
	def := store.TableDef{Name: "h", Key: []store.KeyColumn{{Name: "g", Type: store.String}, {Name: "n", Type: store.Int64}}}
	if _, err := db.CreateTable(def); err != nil {
		t.Fatal(err)
	}
	key := func(i int) store.Key { return store.Key{fmt.Sprint("g", i%5), int64(i / 5)} }
	all := make([]store.Key, keys+3)
	for i := range all {
		all[i] = key(i)
	}
	txs := randstore.Write(t, db, rng, randstore.History{
		Table: "h", Commits: commits, MaxOps: 8,
		Ops: []randstore.Op{randstore.Upsert, randstore.Reupsert, randstore.Reupsert, randstore.Put, randstore.Correct,
			randstore.Delete, randstore.DeleteAt, randstore.Inferred},
		Key:   func(int) store.Key { return key(rng.IntN(keys)) },
		Attrs: func() store.Attrs { return randomAttrs(rng) }, Valid: 40, PutLen: 10, DeleteLen: 6, Open: 3,
		Correction: [2]int64{5, 25},
		InferredKey: func(n int) store.Key { // a placeholder of a key nothing else writes
			if n == 3 {
				return nil
			}
			return key(keys + n)
		},
	})
	tb, err := db.Table("h")
	if err != nil {
		t.Fatal(err)
	}
	tuple := func(k store.Key) []byte {
		b, err := tb.AppendKey(nil, k)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	// In key order, as the scans return them.
	for i := 1; i < len(all); i++ {
		for j := i; j > 0 && bytes.Compare(tuple(all[j]), tuple(all[j-1])) < 0; j-- {
			all[j], all[j-1] = all[j-1], all[j]
		}
	}
	return db, all, txs
}

// rowsRender renders one version of a history read: its key, periods,
// surrogate key and flags, every attribute with its type (attrs, formatted
// by fmtAttr) and the value of each of rowsAttrNames (values).
func rowsRender(key store.Key, tuple []byte, validFrom, validTo, txFrom, txTo int64, sk uint64, inferred bool, attrs map[string]string, values []string) string {
	return fmt.Sprintf("%v %x valid [%d, %d) tx [%d, %d) sk %d inferred %v attrs %v values %v",
		key, tuple, validFrom, validTo, txFrom, txTo, sk, inferred, attrs, values)
}

// renderVersion renders a version of the map path: its Attrs, or its
// RawAttrs walked when it was read with them. The values of rowsAttrNames
// are those of full's attributes, or of v's when full is nil.
func renderVersion(t *testing.T, v *store.Version, full store.Attrs) string {
	t.Helper()
	attrs := map[string]string{}
	for n, x := range v.Attrs {
		attrs[n] = fmtAttr(x)
	}
	if err := v.RawAttrs().Walk(func(name string, x *encoding.Value) error {
		attrs[name] = fmtAttr(x.Any())
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	values := make([]string, len(rowsAttrNames))
	for i, n := range rowsAttrNames {
		values[i] = fmtAttr(nil)
		if x, ok := attrs[n]; ok && full == nil {
			values[i] = x
		} else if x, ok := full[n]; ok {
			values[i] = fmtAttr(x)
		}
	}
	return rowsRender(v.Key, v.Tuple(), v.ValidFrom, v.ValidTo, v.TxFrom, v.TxTo, v.SK, v.Inferred, attrs, values)
}

// rowsReader reads history rows into text: each row rendered from the view
// (Walk, then every AttrRef accessor, checked against each other) and,
// after it, from Row.Version.
type rowsReader struct {
	t    *testing.T
	refs []*store.AttrRef
	text strings.Builder
	rows int
	err  error
}

func newRowsReader(t *testing.T) *rowsReader {
	rr := &rowsReader{t: t}
	for _, n := range rowsAttrNames {
		rr.refs = append(rr.refs, store.NewAttrRef(n))
	}
	return rr
}

// read renders row and reports whether the scan goes on.
func (rr *rowsReader) read(row *store.Row) bool {
	rr.rows++
	key, err := row.Key()
	if err != nil {
		rr.err = err
		return false
	}
	attrs := map[string]string{}
	if err := row.Walk(func(name string, v *encoding.Value) error {
		attrs[name] = fmtAttr(v.Any())
		return nil
	}); err != nil {
		rr.err = err
		return false
	}
	values := make([]string, len(rr.refs))
	for i, ref := range rr.refs {
		var v encoding.Value
		held, err := row.Attr(ref, &v)
		if err == nil {
			err = checkTypedAccessors(row, ref, &v, held)
		}
		if err != nil {
			rr.err = err
			return false
		}
		values[i] = fmtAttr(v.Any())
	}
	rr.text.WriteString(rowsRender(key, row.Tuple(), row.ValidFrom, row.ValidTo, row.TxFrom, row.TxTo, row.SK, row.Inferred, attrs, values) + "\n")
	v, err := row.Version()
	if err != nil {
		rr.err = err
		return false
	}
	rr.text.WriteString("  version " + renderVersion(rr.t, &v, nil) + "\n")
	return true
}

// TestHistoryRowsMatchesHistoryRange reads random histories of many keys
// with HistoryRows and checks every row, field by field and attribute by
// attribute with its type, against the map path (HistoryRange and
// HistoryPage) and against a reference built from each key's versions
// (Snapshot.KeyVersions, which decodes every record into a map on its own,
// filtered, clipped and projected by hand): at the newest and at past
// transaction times, over whole and partial valid periods, clipped or not,
// projected or not, over key ranges and prefixes, page by page with Limit
// and Cursor. Each row's Version must be the version HistoryRange returns.
func TestHistoryRowsMatchesHistoryRange(t *testing.T) {
	for _, seed := range testlong.Size([]uint64{1, 2, rand.Uint64()}, []uint64{3, rand.Uint64()}) {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 17))
			db, keys, txs := rowsStore(t, rng, 200, 150)
			s, err := db.Snapshot()
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			tb, err := s.Table("h")
			if err != nil {
				t.Fatal(err)
			}
			shared := 0 // rows whose record shares its successor's attributes
			for range testlong.Size(60, 20) {
				opts := query.HistoryOptions{Clip: rng.IntN(2) == 0, RawAttrs: rng.IntN(4) == 0}
				switch rng.IntN(3) {
				case 0: // Latest
				case 1:
					opts.Tx = txs[rng.IntN(len(txs))] - rng.Int64N(2)
				default:
					opts.Tx = s.LastTx()
				}
				switch rng.IntN(3) {
				case 1:
					opts.Project = []string{"s"}
				case 2:
					opts.Project = []string{"d", "i", "zz", "t", "y"}
				}
				from, to := rng.Int64N(50)-5, store.Infinity
				switch rng.IntN(3) {
				case 0:
					from = store.NegInfinity
				case 1:
					to = from + 1 + rng.Int64N(20)
				}
				var kr query.KeyRange
				switch rng.IntN(4) {
				case 1:
					kr.Prefix = store.Key{fmt.Sprint("g", rng.IntN(5))}
				case 2:
					kr.Prefix = keys[rng.IntN(len(keys))] // one key
				case 3:
					kr.Start, kr.End = keys[rng.IntN(len(keys))], keys[rng.IntN(len(keys))]
				}
				want, n := historyReference(t, s, tb, keys, kr, from, to, opts)
				checkHistoryRows(t, s, kr, from, to, opts, want)
				shared += n
			}
			// Whole histories as of each commit until one reads a record
			// that shares its successor's attributes.
			for _, tx := range txs {
				if shared > 0 {
					break
				}
				opts := query.HistoryOptions{Tx: tx}
				want, n := historyReference(t, s, tb, keys, query.KeyRange{}, store.NegInfinity, store.Infinity, opts)
				checkHistoryRows(t, s, query.KeyRange{}, store.NegInfinity, store.Infinity, opts, want)
				shared += n
			}
			if shared == 0 {
				t.Fatal("no row read a retired record that shares its successor's attributes")
			}
		})
	}
}

// historyReference renders the versions a history read returns, from each
// key's versions alive at the read's transaction time, and counts those of
// retired records that share their successor's attributes: records that
// their retiring transaction asserted again with the same surrogate key,
// valid_from and attributes (Writer.shareAttrs).
func historyReference(t *testing.T, s *store.Snapshot, tb *store.Table, keys []store.Key, kr query.KeyRange, from, to int64, opts query.HistoryOptions) ([]string, int) {
	t.Helper()
	sp, err := kr.Span(tb)
	if err != nil {
		t.Fatal(err)
	}
	tx := opts.Tx
	if tx == query.Latest {
		tx = s.LastTx()
	}
	var want []string
	shared := 0
	for _, k := range keys {
		tuple, err := tb.AppendKey(nil, k)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Compare(tuple, sp.Start) < 0 || sp.End != nil && bytes.Compare(tuple, sp.End) >= 0 {
			continue
		}
		versions, err := s.KeyVersions(tb, tuple, tx)
		if err != nil {
			t.Fatal(err)
		}
		records, err := s.KeyRecords(tb, tuple)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range versions {
			if v.ValidTo <= from || v.ValidFrom >= to {
				continue
			}
			for _, o := range records {
				if o.TxFrom == v.TxTo && o.ValidFrom == v.ValidFrom && o.SK == v.SK && o.Attrs.Equal(v.Attrs) {
					shared++
				}
			}
			full := v.Attrs
			if opts.Project != nil {
				v.Attrs = restrict(v.Attrs, opts.Project)
			}
			if opts.Clip {
				v.ValidFrom, v.ValidTo = max(v.ValidFrom, from), min(v.ValidTo, to)
			}
			// A row's accessors read every attribute; Walk and Version
			// only the projected ones.
			want = append(want, renderVersion(t, &v, full)+"\n  version "+renderVersion(t, &v, nil)+"\n")
		}
	}
	return want, shared
}

// checkHistoryRows checks HistoryRows against want (historyReference) and the
// map path: whole, then page by page.
func checkHistoryRows(t *testing.T, s *store.Snapshot, kr query.KeyRange, from, to int64, opts query.HistoryOptions, want []string) {
	t.Helper()
	name := fmt.Sprintf("keys %+v [%d, %d) %+v", kr, from, to, opts)
	wantText := strings.Join(want, "")
	rr := newRowsReader(t)
	next, err := query.HistoryRows(s, "h", kr, from, to, opts, rr.read)
	if err != nil || rr.err != nil || next != "" {
		t.Fatalf("%s: HistoryRows error %v, row error %v, next %q", name, err, rr.err, next)
	}
	if got := rr.text.String(); got != wantText {
		t.Fatalf("%s: HistoryRows\n%s\nreference\n%s", name, got, wantText)
	}
	// The map path returns what each row's Version returns.
	var mapText, versions strings.Builder
	for v, err := range query.HistoryRange(s, "h", kr, from, to, opts) {
		if err != nil {
			t.Fatal(err)
		}
		mapText.WriteString("  version " + renderVersion(t, &v, nil) + "\n")
	}
	for _, line := range strings.SplitAfter(wantText, "\n") {
		if strings.HasPrefix(line, "  version ") {
			versions.WriteString(line)
		}
	}
	if mapText.String() != versions.String() {
		t.Fatalf("%s: HistoryRange\n%s\nreference\n%s", name, mapText.String(), versions.String())
	}
	// Page by page: the same pages, the same cursors.
	opts.Limit = 1 + rand.IntN(7)
	var paged strings.Builder
	for pages := 0; ; pages++ {
		page, err := query.HistoryPage(s, "h", kr, from, to, opts)
		if err != nil {
			t.Fatal(err)
		}
		rr := newRowsReader(t)
		next, err := query.HistoryRows(s, "h", kr, from, to, opts, rr.read)
		if err != nil || rr.err != nil || next != page.Next || rr.rows != len(page.Rows) {
			t.Fatalf("%s page %d: HistoryRows %d rows, next %q, error %v, row error %v; HistoryPage %d rows, next %q",
				name, pages, rr.rows, next, err, rr.err, len(page.Rows), page.Next)
		}
		paged.WriteString(rr.text.String())
		if next == "" {
			break
		}
		opts.Cursor = next
	}
	if paged.String() != wantText {
		t.Fatalf("%s by %d: HistoryRows\n%s\nreference\n%s", name, opts.Limit, paged.String(), wantText)
	}
}
