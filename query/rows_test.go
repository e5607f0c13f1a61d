package query_test

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/internal/testlong"
	"github.com/bitempo/bitempo/internal/testutil/randstore"
	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
)

// rowAnswer is one row of ResolveRows, copied out of the view.
type rowAnswer struct {
	seen               bool
	sk                 uint64
	reason             store.MissReason
	inferred, deflt    bool
	validFrom, validTo int64
	attrs              map[string]string // Walk's values, formatted
	values             []string          // Attr per referenced name, formatted
}

// rowsAttrNames are the names of randomAttrs and one no record holds.
var rowsAttrNames = []string{"i", "s", "f", "b", "t", "d", "y", "u", "zz"}

// fmtAttr formats an attribute value so that equal values (a time at any
// location) format alike.
func fmtAttr(x any) string {
	if t, ok := x.(time.Time); ok {
		return fmt.Sprint("time.Time:", t.UnixMicro())
	}
	return fmt.Sprintf("%T:%v", x, x)
}

// randomAttrs draws attributes of every kind a record holds, some absent.
func randomAttrs(rng *rand.Rand) store.Attrs {
	a := store.Attrs{}
	if rng.IntN(5) != 0 {
		a["i"] = rng.Int64N(2000) - 1000
	}
	if rng.IntN(5) != 0 {
		a["s"] = fmt.Sprint("s", rng.IntN(7))
	}
	switch rng.IntN(7) {
	case 0:
		a["f"] = rng.Float64()
	case 1:
		a["b"] = rng.IntN(2) == 0
	case 2:
		a["t"] = time.UnixMicro(rng.Int64N(1 << 40)).UTC()
	case 3:
		d, _ := encoding.NewDecimal(rng.Int64N(100_000), 2)
		a["d"] = d
	case 4:
		a["y"] = []byte{byte(rng.IntN(256)), 0, 7}
	case 5:
		a["u"] = uint64(math.MaxInt64) + uint64(rng.IntN(9)) + 1
	case 6:
		a["s"] = ""
	}
	return a
}

// TestResolveRowsMatchesVersionAt resolves random batches with ResolveRows
// under every miss policy, at the newest and at past transaction times,
// projected and not, and checks every row against the per-fact point read
// (Snapshot.VersionAt, which decodes the record into a map on its own): the
// reason, surrogate key, flags and valid period, every attribute Walk visits
// and every attribute the AttrRef accessors read. Resolve's answers (the map API
// over the same rows) must agree with both. The store holds attributes of
// every kind, SCD2 closes whose retired records share their successor's
// attributes, corrections, deletions and gaps.
func TestResolveRowsMatchesVersionAt(t *testing.T) {
	for _, seed := range testlong.Size([]uint64{1, 2, rand.Uint64()}, []uint64{3, rand.Uint64()}) {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 11))
			db := tickingStore(t)
			const keys = 50
			txs := randstore.Write(t, db, rng, randstore.History{
				Table: "d", Commits: 60, MaxOps: 8,
				Ops:   []randstore.Op{randstore.Upsert, randstore.Upsert, randstore.Put, randstore.Correct, randstore.Delete, randstore.Inferred},
				Key:   func(int) store.Key { return store.Key{rng.Int64N(keys)} },
				Attrs: func() store.Attrs { return randomAttrs(rng) }, Valid: 40, PutLen: 10, DeleteLen: 6, Correction: [2]int64{0, 20},
				InferredKey: func(n int) store.Key { // a placeholder of a key nothing else writes
					if n == 5 {
						return nil
					}
					return store.Key{int64(keys + n)}
				},
			})
			s, tb := snapshotOf(t, db, "d")
			draw := func(n int) []query.Fact {
				facts := make([]query.Fact, n)
				for i := range facts {
					facts[i] = query.Fact{Key: store.Key{rng.Int64N(keys + 5)}, At: rng.Int64N(50) - 3}
					if rng.IntN(2) == 0 {
						facts[i].Tx = txs[rng.IntN(len(txs))] - rng.Int64N(2)
					}
				}
				return facts
			}
			for _, n := range []int{1, 500, 3000} {
				facts := draw(n)
				for _, project := range [][]string{nil, {"s"}, {"d", "i", "zz", "t", "y"}} {
					for _, miss := range []query.MissPolicy{query.MissNull, query.MissSkip, query.MissDefault, query.MissError} {
						opts := query.ResolveOptions{Miss: miss, Default: 99, Attrs: true, Project: project}
						checkResolveRows(t, s, tb, facts, opts)
					}
				}
				checkResolveRows(t, s, tb, facts, query.ResolveOptions{Miss: query.MissNull})
			}
			// Enough facts for the parallel merge on a machine with two or
			// more cores: rows on several goroutines at once.
			checkResolveRows(t, s, tb, draw(40_000), query.ResolveOptions{Miss: query.MissNull, Attrs: true, Project: []string{"i", "s", "t"}})
		})
	}
}

// typedAccessors are the typed accessors query.AttrRow and store.Row share.
type typedAccessors interface {
	Int64(*store.AttrRef) (int64, bool)
	Float64(*store.AttrRef) (float64, bool)
	Bool(*store.AttrRef) (bool, bool)
	Text(*store.AttrRef) ([]byte, bool)
	String(*store.AttrRef) (string, bool)
}

// checkTypedAccessors checks that each typed accessor of row reads ref's
// value v (held or not) when it is of the accessor's kind, and nothing else.
func checkTypedAccessors(row typedAccessors, ref *store.AttrRef, v *encoding.Value, held bool) error {
	i, iok := row.Int64(ref)
	f, fok := row.Float64(ref)
	b, bok := row.Bool(ref)
	x, xok := row.Text(ref)
	str, sok := row.String(ref)
	switch {
	case iok != (held && v.Kind == encoding.KindInt) || iok && i != v.Int:
		return fmt.Errorf("%s: Int64 %d %v, Attr %+v", ref.Name(), i, iok, v)
	case fok != (held && v.Kind == encoding.KindFloat) || fok && f != v.Float:
		return fmt.Errorf("%s: Float64 %g %v, Attr %+v", ref.Name(), f, fok, v)
	case bok != (held && v.Kind == encoding.KindBool) || bok && b != v.Bool:
		return fmt.Errorf("%s: Bool %v %v, Attr %+v", ref.Name(), b, bok, v)
	case xok != (held && v.Kind == encoding.KindString) || xok && string(x) != string(v.Bytes):
		return fmt.Errorf("%s: Text %q %v, Attr %+v", ref.Name(), x, xok, v)
	case sok != xok || str != string(x):
		return fmt.Errorf("%s: String %q %v, Text %q %v", ref.Name(), str, sok, x, xok)
	}
	return nil
}

// checkResolveRows checks one batch of ResolveRows against VersionAt and
// Resolve.
func checkResolveRows(t *testing.T, s *store.Snapshot, tb *store.Table, facts []query.Fact, opts query.ResolveOptions) {
	t.Helper()
	name := fmt.Sprintf("%d facts, miss %d, attrs %v, project %v", len(facts), opts.Miss, opts.Attrs, opts.Project)
	got := make([]rowAnswer, len(facts))
	names := rowsAttrNames
	if opts.Project != nil {
		names = opts.Project
	}
	// Two references to one name; all of them shared by the merge's goroutines.
	names = append(names[:len(names):len(names)], names[0])
	refs := make([]*store.AttrRef, len(names))
	for i, n := range names {
		refs[i] = store.NewAttrRef(n)
	}
	var mu sync.Mutex
	calls := 0
	rowsErr := query.ResolveRows(s, "d", facts, opts, func(row *query.ResolvedRow) error {
		a := rowAnswer{seen: true, sk: row.SK, reason: row.Reason, inferred: row.Inferred, deflt: row.Default,
			validFrom: row.ValidFrom, validTo: row.ValidTo}
		if opts.Attrs && row.Found() {
			a.attrs = map[string]string{}
			if err := row.Walk(func(name string, v *encoding.Value) error {
				a.attrs[name] = fmtAttr(v.Any())
				return nil
			}); err != nil {
				return err
			}
			for _, ref := range refs {
				var v encoding.Value
				held, err := row.Attr(ref, &v)
				if err != nil {
					return err
				}
				if err := checkTypedAccessors(row.AttrRow, ref, &v, held); err != nil {
					return fmt.Errorf("fact %d: %w", row.Index, err)
				}
				a.values = append(a.values, fmtAttr(v.Any()))
			}
		}
		mu.Lock()
		calls++
		mu.Unlock()
		got[row.Index] = a
		return nil
	})
	res, resErr := query.Resolve(s, "d", facts, opts)
	firstMiss := -1
	for i, f := range facts {
		tx := f.Tx
		if tx == query.Latest {
			tx = s.LastTx()
		}
		tuple, err := tb.AppendKey(nil, f.Key)
		if err != nil {
			t.Fatal(err)
		}
		v, reason, err := s.VersionAt(tb, tuple, f.At, tx)
		if err != nil {
			t.Fatal(err)
		}
		if reason != store.Found && firstMiss < 0 {
			firstMiss = i
		}
		want := rowAnswer{seen: true, reason: reason}
		switch {
		case reason == store.Found:
			want.sk, want.inferred, want.validFrom, want.validTo = v.SK, v.Inferred, v.ValidFrom, v.ValidTo
			if opts.Attrs {
				attrs := v.Attrs
				if opts.Project != nil {
					attrs = restrict(attrs, opts.Project)
				}
				want.attrs = map[string]string{}
				for k, x := range attrs {
					want.attrs[k] = fmtAttr(x)
				}
				for _, n := range names {
					want.values = append(want.values, fmtAttr(attrs[n]))
				}
			}
		case opts.Miss == query.MissSkip, opts.Miss == query.MissError:
			want = rowAnswer{}
		case opts.Miss == query.MissDefault:
			want.sk, want.deflt = opts.Default, true
		}
		if a, b := fmt.Sprintf("%+v", got[i]), fmt.Sprintf("%+v", want); a != b {
			t.Fatalf("%s: fact %d %+v: row %s, point read %s", name, i, f, a, b)
		}
	}
	if opts.Miss == query.MissError && firstMiss >= 0 {
		var miss *query.Miss
		if !errors.As(rowsErr, &miss) || resErr == nil || rowsErr.Error() != resErr.Error() ||
			rowsErr.Error() != fmt.Sprintf("bitempo: resolve fact %d: %v", firstMiss, miss) {
			t.Fatalf("%s: ResolveRows error %v, Resolve error %v, first miss at %d", name, rowsErr, resErr, firstMiss)
		}
		return
	}
	if rowsErr != nil || resErr != nil {
		t.Fatalf("%s: ResolveRows error %v, Resolve error %v", name, rowsErr, resErr)
	}
	// Resolve keeps input order, without the skipped misses.
	var idx []int
	for i, a := range got {
		if a.seen {
			idx = append(idx, i)
		}
	}
	if calls != len(idx) || len(res) != len(idx) {
		t.Fatalf("%s: %d calls, %d rows, Resolve %d answers", name, calls, len(idx), len(res))
	}
	for k, i := range idx {
		r, a := res[k], got[i]
		attrs := map[string]string{}
		for n, x := range r.Attrs {
			attrs[n] = fmtAttr(x)
		}
		if !opts.Attrs || !r.Found() {
			attrs = nil
		}
		if r.Index != i || r.SK != a.sk || r.Reason != a.reason || r.Inferred != a.inferred || r.Default != a.deflt ||
			!maps.Equal(attrs, a.attrs) {
			t.Fatalf("%s: fact %d: Resolve %s (attrs %v), row %+v", name, i, fmtResolution(r), attrs, a)
		}
	}
}

// TestBackfillRowsMatchesGeneric backfills random rows of a store holding
// integers, floats, decimals, strings and nulls with BackfillRows and checks
// every feature its typed accessors read against Backfill on the generic path
// (each version's attributes decoded into a map, every value boxed): Value
// gives the same value of the same type, Int and Float report exactly the
// int64 and float64 results, Null exactly the nulls.
func TestBackfillRowsMatchesGeneric(t *testing.T) {
	for _, seed := range testlong.Size([]uint64{1, rand.Uint64()}, []uint64{rand.Uint64()}) {
		rng := rand.New(rand.NewPCG(seed, 13))
		db := pathStore(t, rng)
		rows := make([]query.LeftRow, 300)
		for i := range rows {
			rows[i] = query.LeftRow{Group: store.Key{fmt.Sprint("u", rng.IntN(5))}, TS: (rng.Int64N(80) - 5) * pathMinute}
			if rng.IntN(3) == 0 {
				rows[i].Tx = 1 + rng.Int64N(db.LastTx())
			}
		}
		checked := 0
		for _, aggs := range pathSpecs(t) {
			var want [][]any
			var wantErr error
			for r, err := range query.BackfillOn(query.GenericPath, db, "c", rows, aggs, query.BackfillOptions{}) {
				if err != nil {
					wantErr = err
					break
				}
				want = append(want, r.Values)
			}
			n := 0
			var gotErr error
			for r, err := range query.BackfillRows(db, "c", rows, aggs, query.BackfillOptions{}) {
				if err != nil {
					gotErr = err
					break
				}
				if r.Index != n || r.Len() != len(want[n]) {
					t.Fatalf("seed %d %v: row %d of %d features, want row %d of %d", seed, aggs, r.Index, r.Len(), n, len(want[n]))
				}
				for k, w := range want[n] {
					i, isInt := r.Int(k)
					f, isFloat := r.Float(k)
					wi, wantInt := w.(int64)
					wf, wantFloat := w.(float64)
					v := r.Value(k)
					if fmtAttr(v) != fmtAttr(w) || isInt != wantInt || (isInt && i != wi) ||
						isFloat != wantFloat || (isFloat && math.Float64bits(f) != math.Float64bits(wf)) || r.Null(k) != (w == nil) {
						t.Fatalf("seed %d %v: row %d feature %d: value %s int %d %v float %v %v null %v, generic %s",
							seed, aggs, n, k, fmtAttr(v), i, isInt, f, isFloat, r.Null(k), fmtAttr(w))
					}
					checked++
				}
				n++
			}
			if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) || (gotErr == nil && n != len(rows)) {
				t.Fatalf("seed %d %v: %d rows, error %v; generic %d rows, error %v", seed, aggs, n, gotErr, len(want), wantErr)
			}
		}
		if checked == 0 {
			t.Fatalf("seed %d: no feature checked", seed)
		}
	}
}
