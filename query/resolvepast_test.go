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
			s, err := db.Snapshot()
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			tb, err := s.Table("d")
			if err != nil {
				t.Fatal(err)
			}
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
			check := func(name string, facts []query.Fact, project []string) {
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
			// The row view, ResolveRows: every field of each row against
			// query.Get's answer for the fact alone.
			rows := func(name string, facts []query.Fact, project []string) {
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
			for k, t0 := range append(slices.Clone(txs[:len(txs)-1]), txs[0]-1, txs[len(txs)/2]+3) {
				if k%3 != 0 && k < len(txs)-1 {
					continue
				}
				check(fmt.Sprint("one past tx ", t0), drawFacts(2000, func() int64 { return t0 }), nil)
				check(fmt.Sprint("projected at ", t0), drawFacts(300, func() int64 { return t0 }), []string{"name", "zz"})
				rows(fmt.Sprint("rows at ", t0), drawFacts(1000, func() int64 { return t0 }), nil)
				rows(fmt.Sprint("projected rows at ", t0), drawFacts(300, func() int64 { return t0 }), []string{"v", "zz"})
			}
			// store.Snapshot.LookupSorted, under Resolve, returns whole versions:
			// their periods must be VersionAt's too.
			lookups := func(facts []query.Fact) {
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
			lookups(drawFacts(3000, func() int64 { return txs[len(txs)/2] }))
			lookups(drawFacts(3000, func() int64 { return txs[rng.IntN(len(txs)-1)] - rng.Int64N(2) }))
			mixed := func() int64 {
				if rng.IntN(3) == 0 {
					return query.Latest
				}
				return txs[rng.IntN(len(txs))] - rng.Int64N(2)
			}
			check("mixed transaction times", drawFacts(5000, mixed), nil)
			rows("rows at mixed transaction times", drawFacts(3000, mixed), nil)
			// Enough facts for Resolve's parallel path (forks of the snapshot
			// sharing the projected table) on a machine with two or more cores.
			check("parallel and projected", drawFacts(40_000, mixed), []string{"v", "w"})
		})
	}
}
