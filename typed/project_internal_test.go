package typed

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// wideRow declares every attribute the projection tests write; narrowRow maps
// two of them (one before and one after the others in ordinal order) and
// leaves the rest to be stepped over.
type wideRow struct {
	ID     string  `bitempo:"id,key"`
	City   string  `bitempo:"city"`
	Note   string  `bitempo:"note"`
	Orders int64   `bitempo:"orders"`
	Score  float64 `bitempo:"score"`
	Tier   *string `bitempo:"tier"`
}

type narrowRow struct {
	ID    string  `bitempo:"id,key"`
	Note  string  `bitempo:"note"`
	Score float64 `bitempo:"score"`
}

func narrowOf(w wideRow) narrowRow { return narrowRow{ID: w.ID, Note: w.Note, Score: w.Score} }

// TestReadsProjectToTheStruct checks that every read of a Table[T] decodes only
// the attributes T maps: the view Get and Snapshot read through is projected
// to them (a record's other attributes are never walked), and History, Audit
// and Resolve pass them to query as their projection. What a narrow struct
// reads equals what the wide struct reads, restricted to its fields, at the
// latest and at past transaction times (where retired records share their
// successors' attributes).
func TestReadsProjectToTheStruct(t *testing.T) {
	clock := int64(0) // transaction times 1, 2, 3, ...
	db, err := store.Open("db", store.Options{InMemory: true, Clock: func() int64 { clock++; return clock }})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	wide, err := New[wideRow]("rows")
	if err != nil {
		t.Fatal(err)
	}
	narrow, err := New[narrowRow]("rows")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateTable(wide.Def()); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	keys := []string{"a", "b", "c", "d"}
	for range 12 {
		if _, err := txn.Update(db, func(tx *txn.Tx) error {
			for range 1 + rng.IntN(3) {
				tier := []string{"gold", "silver"}[rng.IntN(2)]
				row := wideRow{ID: keys[rng.IntN(len(keys))], City: fmt.Sprint("city", rng.IntN(3)), Note: fmt.Sprint("note", rng.IntN(3)),
					Orders: rng.Int64N(5), Score: float64(rng.IntN(4)) / 2, Tier: &tier}
				if _, err := wide.Upsert(tx, row, rng.Int64N(20)); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}

	// The view is projected: walking a record read through it meets only the
	// narrow struct's attributes.
	c, err := narrow.tables(db)
	if err != nil {
		t.Fatal(err)
	}
	if !c.raw.Projected() || c.st.Projected() {
		t.Fatalf("Projected: view %v, catalog table %v", c.raw.Projected(), c.st.Projected())
	}
	if want := []string{"note", "score"}; !slices.Equal(narrow.s.project(nil), want) {
		t.Fatalf("query projection %v, want %v", narrow.s.project(nil), want)
	}
	s, err := db.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	walked := 0
	for v, err := range s.ScanHistory(c.raw, store.Span{}, s.LastTx(), store.NegInfinity, store.Infinity, nil) {
		if err != nil {
			t.Fatal(err)
		}
		names := slices.Collect(func(yield func(string) bool) {
			for n := range v.Attrs {
				yield(n)
			}
		})
		if err := v.RawAttrs().Walk(func(name string, _ *encoding.Value) error {
			names = append(names, name)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			if n != "note" && n != "score" {
				t.Fatalf("a read through the narrow view decoded %q", n)
			}
		}
		walked++
	}
	if walked == 0 {
		t.Fatal("no version read")
	}

	// Narrow reads are the wide reads restricted to the narrow fields.
	same := func(what string, n Version[narrowRow], w Version[wideRow]) {
		t.Helper()
		want := Version[narrowRow]{Value: narrowOf(w.Value), ValidFrom: w.ValidFrom, ValidTo: w.ValidTo, TxFrom: w.TxFrom, TxTo: w.TxTo, SK: w.SK, Inferred: w.Inferred}
		if !reflect.DeepEqual(n, want) {
			t.Fatalf("%s: narrow %+v, wide %+v", what, n, w)
		}
	}
	collect := func(seq func(func(Version[wideRow], error) bool)) []Version[wideRow] {
		var out []Version[wideRow]
		for v, err := range seq {
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, v)
		}
		return out
	}
	collectNarrow := func(seq func(func(Version[narrowRow], error) bool)) []Version[narrowRow] {
		var out []Version[narrowRow]
		for v, err := range seq {
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, v)
		}
		return out
	}
	sameAll := func(what string, n []Version[narrowRow], w []Version[wideRow]) {
		t.Helper()
		if len(n) != len(w) {
			t.Fatalf("%s: %d narrow versions, %d wide", what, len(n), len(w))
		}
		for i := range n {
			same(fmt.Sprint(what, " ", i), n[i], w[i])
		}
	}
	var facts []query.Fact
	for tx := int64(1); tx <= db.LastTx(); tx++ {
		for valid := int64(-1); valid < 22; valid += 3 {
			at := query.AsOf{Valid: valid, Tx: tx}
			sameAll(fmt.Sprint("Snapshot at ", at), collectNarrow(narrow.Snapshot(db, at, query.KeyRange{})), collect(wide.Snapshot(db, at, query.KeyRange{})))
			for _, k := range keys {
				key := store.Key{k}
				facts = append(facts, query.Fact{Key: key, At: valid, Tx: tx})
				n, nerr := narrow.Get(db, key, at)
				w, werr := wide.Get(db, key, at)
				if fmt.Sprint(nerr) != fmt.Sprint(werr) {
					t.Fatalf("Get %v at %+v: narrow %v, wide %v", key, at, nerr, werr)
				}
				if nerr == nil {
					same(fmt.Sprint("Get ", key, " at ", at), n, w)
				}
			}
		}
		for _, k := range keys {
			opts := query.HistoryOptions{Tx: tx}
			sameAll(fmt.Sprint("History of ", k, " at tx ", tx), collectNarrow(narrow.History(db, store.Key{k}, store.NegInfinity, store.Infinity, opts)),
				collect(wide.History(db, store.Key{k}, store.NegInfinity, store.Infinity, opts)))
		}
	}
	for _, k := range keys {
		sameAll("Audit of "+k, collectNarrow(narrow.Audit(db, store.Key{k})), collect(wide.Audit(db, store.Key{k})))
	}
	nres, err := narrow.Resolve(db, facts, query.ResolveOptions{Miss: query.MissNull})
	if err != nil {
		t.Fatal(err)
	}
	wres, err := wide.Resolve(db, facts, query.ResolveOptions{Miss: query.MissNull})
	if err != nil {
		t.Fatal(err)
	}
	for i := range nres {
		n, w := nres[i], wres[i]
		if n.Index != w.Index || n.SK != w.SK || n.Reason != w.Reason || (n.Found() && n.Value != narrowOf(w.Value)) {
			t.Fatalf("Resolve fact %d %+v: narrow %+v, wide %+v", i, facts[i], n, w)
		}
	}
}
