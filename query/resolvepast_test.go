package query_test

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/bitempo/bitempo/internal/testlong"
	"github.com/bitempo/bitempo/internal/testutil"
	"github.com/bitempo/bitempo/internal/testutil/randstore"
	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
)

// tickingStore returns an in-memory store whose clock advances 10 ticks per
// commit from 1000, with an empty table "d" keyed by an int64 id.
func tickingStore(t *testing.T) *store.DB {
	t.Helper()
	db := testutil.OpenTicking(t, 10)
	if _, err := db.CreateTable(store.TableDef{Name: "d", Key: []store.KeyColumn{{Name: "id", Type: store.Int64}}}); err != nil {
		t.Fatal(err)
	}
	return db
}

// snapshotOf returns a snapshot of db, closed when the test ends, and its
// table name.
func snapshotOf(t *testing.T, db *store.DB, name string) (*store.Snapshot, *store.Table) {
	t.Helper()
	s, err := db.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	tb, err := s.Table(name)
	if err != nil {
		t.Fatal(err)
	}
	return s, tb
}

// TestResolveAtPastTxMatchesVersionAt resolves batches whose facts share one
// past transaction time (and batches mixing several, and the newest) with the
// merged path, and checks every answer against the per-fact path,
// Snapshot.VersionAt on the same snapshot: the reason, the surrogate key, the
// flags and the attributes (whole and projected), and the rows of the row
// view (ResolveRows) against query.Get's answer for each fact alone, periods
// included. The store has keys with many corrections of one valid_from
// (history runs longer than a few steps), SCD2 closes whose retired records
// share attributes, deletions and gaps.
func TestResolveAtPastTxMatchesVersionAt(t *testing.T) {
	for _, seed := range testlong.Size([]uint64{1, 2, rand.Uint64()}, []uint64{1, rand.Uint64()}) {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 3))
			db := tickingStore(t)
			const keys = 60
			txs := randstore.Write(t, db, rng, randstore.History{
				Table: "d", Commits: 80, MaxOps: 8,
				Ops: []randstore.Op{randstore.Upsert, randstore.Upsert, randstore.Put, randstore.Correct, randstore.Delete, randstore.DeleteAt},
				Key: func(commit int) store.Key {
					if commit%4 == 0 {
						return store.Key{int64(rng.IntN(3))} // a few keys corrected over and over
					}
					return store.Key{rng.Int64N(keys)}
				},
				Attrs: func() store.Attrs {
					return store.Attrs{"v": rng.Int64N(5), "name": fmt.Sprint("n", rng.IntN(3)), "w": float64(rng.IntN(4))}
				},
				Valid: 40, PutLen: 10, DeleteLen: 6, Correction: [2]int64{0, 20},
			})
			s, tb := snapshotOf(t, db, "d")
			drawFacts := func(n int, tx func() int64) []query.Fact {
				facts := make([]query.Fact, n)
				for i := range facts {
					at := rng.Int64N(50) - 3
					switch rng.IntN(20) {
					case 0:
						at = store.Infinity
					case 1:
						at = store.NegInfinity
					}
					facts[i] = query.Fact{Key: store.Key{rng.Int64N(keys + 5)}, At: at, Tx: tx()}
				}
				return facts
			}
			c := pastChecker{t: t, s: s, tb: tb}
			for k, t0 := range append(slices.Clone(txs[:len(txs)-1]), txs[0]-1, txs[len(txs)/2]+3) {
				if k%3 != 0 && k < len(txs)-1 {
					continue
				}
				c.check(fmt.Sprint("one past tx ", t0), drawFacts(2000, func() int64 { return t0 }), nil)
				c.check(fmt.Sprint("projected at ", t0), drawFacts(300, func() int64 { return t0 }), []string{"name", "zz"})
				c.rows(fmt.Sprint("rows at ", t0), drawFacts(1000, func() int64 { return t0 }), nil)
				c.rows(fmt.Sprint("projected rows at ", t0), drawFacts(300, func() int64 { return t0 }), []string{"v", "zz"})
			}
			c.lookups(drawFacts(3000, func() int64 { return txs[len(txs)/2] }))
			c.lookups(drawFacts(3000, func() int64 { return txs[rng.IntN(len(txs)-1)] - rng.Int64N(2) }))
			mixed := func() int64 {
				if rng.IntN(3) == 0 {
					return query.Latest
				}
				return txs[rng.IntN(len(txs))] - rng.Int64N(2)
			}
			c.check("mixed transaction times", drawFacts(5000, mixed), nil)
			c.rows("rows at mixed transaction times", drawFacts(3000, mixed), nil)
			// Enough facts for Resolve's parallel path (forks of the snapshot
			// sharing the projected table) on a machine with two or more cores.
			c.check("parallel and projected", drawFacts(40_000, mixed), []string{"v", "w"})
		})
	}
}

// TestResolveAtPastTxLongHistoriesMatchesVersionAt resolves small batches at
// past transaction times over keys with long histories (hundreds of writes
// each: SCD2 changes, puts, corrections and deletions), where the merge reads
// too many of a key's records for the few probes it serves and answers them
// one by one instead, reading the whole timeline after all when a probe
// misses; and larger batches, where it reads some keys' timelines and answers
// others' probes one by one. Every answer is checked against the per-fact
// paths, as TestResolveAtPastTxMatchesVersionAt checks them.
func TestResolveAtPastTxLongHistoriesMatchesVersionAt(t *testing.T) {
	for _, seed := range testlong.Size([]uint64{1, rand.Uint64()}, []uint64{1}) {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 5))
			db := tickingStore(t)
			const keys = 4
			txs := randstore.Write(t, db, rng, randstore.History{
				Table: "d", Commits: 300, MaxOps: 4,
				Ops: []randstore.Op{randstore.Upsert, randstore.Upsert, randstore.Upsert, randstore.Put, randstore.Correct, randstore.Delete, randstore.DeleteAt},
				Key: func(int) store.Key { return store.Key{rng.Int64N(keys)} },
				Attrs: func() store.Attrs {
					return store.Attrs{"v": rng.Int64N(5), "name": fmt.Sprint("n", rng.IntN(3))}
				},
				Valid: 400, PutLen: 10, DeleteLen: 6, Correction: [2]int64{100, 150},
			})
			s, tb := snapshotOf(t, db, "d")
			drawFacts := func(n int, tx int64) []query.Fact {
				facts := make([]query.Fact, n)
				for i := range facts {
					at := rng.Int64N(420) - 10
					if rng.IntN(10) == 0 {
						at = store.Infinity
					}
					facts[i] = query.Fact{Key: store.Key{rng.Int64N(keys + 1)}, At: at, Tx: tx}
				}
				return facts
			}
			c := pastChecker{t: t, s: s, tb: tb}
			for k, t0 := range txs[:len(txs)-1] {
				if k%7 != 0 {
					continue
				}
				c.check(fmt.Sprint("few facts at ", t0), drawFacts(6, t0), nil)
				c.rows(fmt.Sprint("few rows at ", t0), drawFacts(6, t0), []string{"v"})
				c.lookups(drawFacts(3, t0))
				c.check(fmt.Sprint("more facts at ", t0), drawFacts(150, t0), nil)
			}
		})
	}
}

// pastChecker checks answers of batch reads at past transaction times on one
// snapshot of table "d" against the per-fact paths.
type pastChecker struct {
	t  *testing.T
	s  *store.Snapshot
	tb *store.Table
}

// check resolves facts with Resolve and checks every answer against
// Snapshot.VersionAt on the same snapshot: the reason, the surrogate key, the
// flags and the attributes (projected to project when it is not nil).
func (c pastChecker) check(name string, facts []query.Fact, project []string) {
	t, s, tb := c.t, c.s, c.tb
	t.Helper()
	got, err := query.Resolve(s, "d", facts, query.ResolveOptions{Miss: query.MissNull, Attrs: true, Project: project})
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range facts {
		tuple, err := tb.AppendKey(nil, f.Key)
		if err != nil {
			t.Fatal(err)
		}
		tx := f.Tx
		if tx == query.Latest {
			tx = s.LastTx()
		}
		v, reason, err := s.VersionAt(tb, tuple, f.At, tx)
		if err != nil {
			t.Fatal(err)
		}
		want := query.Resolution{Index: i, Reason: reason}
		if reason == store.Found {
			want.SK, want.Inferred, want.Attrs = v.SK, v.Inferred, v.Attrs
			if project != nil {
				want.Attrs = restrict(v.Attrs, project)
			}
		}
		if a, b := fmtResolution(got[i]), fmtResolution(want); a != b {
			t.Fatalf("%s: fact %d %+v: merged %s, per fact %s", name, i, f, a, b)
		}
	}
}

// rows resolves facts with ResolveRows and checks every field of each row
// against query.Get's answer for the fact alone.
func (c pastChecker) rows(name string, facts []query.Fact, project []string) {
	t, s := c.t, c.s
	t.Helper()
	seen := make([]bool, len(facts))
	err := query.ResolveRows(s, "d", facts, query.ResolveOptions{Miss: query.MissNull, Attrs: true, Project: project},
		func(row *query.ResolvedRow) error {
			f := facts[row.Index]
			seen[row.Index] = true
			want, err := query.Get(s, "d", f.Key, query.AsOf{Valid: f.At, Tx: f.Tx}, query.GetOptions{Project: project})
			var miss *query.Miss
			switch {
			case errors.As(err, &miss):
				if row.Reason != miss.Reason || row.SK != 0 || row.ValidFrom != 0 || row.ValidTo != 0 {
					return fmt.Errorf("%s: fact %d %+v: row %v sk=%d [%d,%d), Get %v", name, row.Index, f,
						row.Reason, row.SK, row.ValidFrom, row.ValidTo, miss.Reason)
				}
				return nil
			case err != nil:
				return err
			}
			got, err := row.Map()
			if err != nil {
				return err
			}
			a := fmt.Sprintf("%v sk=%d inferred=%v [%d,%d) %v", row.Reason, row.SK, row.Inferred, row.ValidFrom, row.ValidTo, got)
			b := fmt.Sprintf("%v sk=%d inferred=%v [%d,%d) %v", store.Found, want.SK, want.Inferred, want.ValidFrom, want.ValidTo, want.Attrs)
			if a != b {
				return fmt.Errorf("%s: fact %d %+v: row %s, Get %s", name, row.Index, f, a, b)
			}
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	if i := slices.Index(seen, false); i >= 0 {
		t.Fatalf("%s: no row for fact %d", name, i)
	}
}

// lookups checks store.Snapshot.LookupSorted, under Resolve, which returns
// whole versions: their periods must be VersionAt's too.
func (c pastChecker) lookups(facts []query.Fact) {
	t, s, tb := c.t, c.s, c.tb
	t.Helper()
	probes := make([]store.Probe, len(facts))
	for i, f := range facts {
		tuple, err := tb.AppendKey(nil, f.Key)
		if err != nil {
			t.Fatal(err)
		}
		probes[i] = store.Probe{Tuple: tuple, Valid: f.At, Tx: f.Tx}
	}
	slices.SortFunc(probes, func(a, b store.Probe) int {
		if c := bytes.Compare(a.Tuple, b.Tuple); c != 0 {
			return c
		}
		return cmp.Compare(b.Valid, a.Valid)
	})
	if err := s.LookupSorted(tb, probes, true, func(i int, v *store.Version, reason store.MissReason) {
		p := probes[i]
		want, wreason, err := s.VersionAt(tb, p.Tuple, p.Valid, p.Tx)
		if err != nil {
			t.Fatal(err)
		}
		want.Key = nil
		if reason != wreason || (reason == store.Found && fmtRecord(*v) != fmtRecord(want)) {
			t.Fatalf("LookupSorted probe %+v: %v %s, VersionAt %v %s", p, reason, fmtRecord(*v), wreason, fmtRecord(want))
		}
	}); err != nil {
		t.Fatal(err)
	}
}
