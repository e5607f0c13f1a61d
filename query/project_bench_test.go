package query_test

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/bitempo/bitempo/internal/sealed"

	"github.com/bitempo/bitempo/internal/enginetest"
	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// The benchmarks of this file compare two read paths in the same run, on
// stores built once per process in a temporary directory:
//
//   - BenchmarkProjection: a wide dimension (200k keys x 2 versions, eight
//     attributes), read whole (decode=all) and projected to one attribute
//     (decode=one): a snapshot scan, a history scan and Resolve with attributes
//     of 200k facts.
//   - BenchmarkResolvePastTx: 50k keys loaded by four rounds of SCD2 upserts
//     (200k versions, 150k of them retired), 200k facts resolved at the newest
//     commit (at=latest/path=merged), at the last commit of round two with the
//     merged path (at=past/path=merged), and the same facts one VersionAt each
//     in sorted order on one snapshot (at=past/path=per-fact).
//   - BenchmarkResolvePastTxLongHistories: 200 keys x 1,000 SCD2 versions (a
//     price history), one or ten facts per key resolved at the newest commit
//     and at the middle commit, and one VersionAt per fact at the middle
//     commit; the facts' valid times in the half of each history the middle
//     commit knew (spread=known) or anywhere in it (spread=whole): where the
//     merge answers probes one by one rather than read each key's whole
//     timeline, and where it reads it after all.
//   - BenchmarkBackfillLongGroupHistories: 100 groups of 5 contracts x 400
//     daily versions, 2,000 rows in the last 10 days: a backfill whose rows
//     span a small part of each group's history.
//   - BenchmarkBackfillIntPath: 20k contracts x 5 versions with int64 amounts in
//     2k groups, 200k left rows, the harness's features, on the integer path
//     (path=int) and the generic one (path=generic).
//   - BenchmarkAggregateIntPath: the same store, Aggregate, AggregateTable and
//     a table-wide backfill on the integer path and the generic one (which
//     decodes each version into a map and boxes every value).
//
// Run with -cpu 1 so Resolve's merge runs on one goroutine like the per-fact
// path, and compare with benchstat. The integer-path benchmarks report
// cpu-ns/op too (the process's CPU time), which a machine whose cores are
// shared disturbs less than wall time.

func benchOnly(b *testing.B) {
	if f := flag.Lookup("test.bench"); f == nil || f.Value.String() == "" {
		b.Skip("benchmark stores are built only with -bench")
	}
}

// benchStore opens a store in a fresh temporary directory, which TestMain
// removes when the package's tests and benchmarks are done.
func benchStore(b *testing.B) *store.DB {
	dir, err := os.MkdirTemp("", "bitempo-bench-*")
	if err != nil {
		b.Fatal(err)
	}
	benchDirs = append(benchDirs, dir)
	db, err := store.Open(filepath.Join(dir, "db"), store.Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	return db
}

var benchDirs []string

// removeBenchDirs removes the directories of benchStore (from TestMain).
func removeBenchDirs() {
	for _, d := range benchDirs {
		_ = os.RemoveAll(d)
	}
}

var (
	wideOnce sync.Once
	wideDB   *store.DB
	wideErr  error
)

const (
	wideKeys     = 200_000
	wideVersions = 2
)

func wideStore(b *testing.B) *store.DB {
	benchOnly(b)
	wideOnce.Do(func() {
		db := benchStore(b)
		tb, err := db.CreateTable(store.TableDef{Name: "wide", Key: []store.KeyColumn{{Name: "id", Type: store.Int64}}})
		if err != nil {
			wideErr = err
			return
		}
		for lo := 0; lo < wideKeys && wideErr == nil; lo += 20_000 {
			w, err := db.BeginWrite(sealed.Key{})
			if err != nil {
				wideErr = err
				return
			}
			for i := lo; i < lo+20_000; i++ {
				key := store.Key{int64(i)}
				tuple, _ := tb.AppendKey(nil, key)
				for v := range wideVersions {
					to := int64(v+1) * 1000
					if v == wideVersions-1 {
						to = store.Infinity
					}
					attrs := store.Attrs{
						"name": fmt.Sprintf("customer %d", i), "city": fmt.Sprintf("city-%d", (i+v)%97), "tier": int64(v),
						"score": float64(i) / 7, "segment": "retail", "email": fmt.Sprintf("c%d@example.com", i),
						"since": int64(1_600_000_000 + i), "active": i%3 != 0,
					}
					if err := w.Assert(tb, tb.NewVersion(key, tuple, int64(v)*1000, to, w.AllocSK(tb), attrs)); err != nil {
						w.Abort()
						wideErr = err
						return
					}
				}
			}
			wideErr = w.Commit()
		}
		if wideErr == nil {
			wideErr = db.Compact(context.Background())
		}
		wideDB = db
	})
	if wideErr != nil {
		b.Fatal(wideErr)
	}
	return wideDB
}

func BenchmarkProjection(b *testing.B) {
	db := wideStore(b)
	rng := rand.New(rand.NewPCG(1, 2))
	facts := make([]query.Fact, wideKeys)
	for i := range facts {
		facts[i] = query.Fact{Key: store.Key{rng.Int64N(wideKeys)}, At: rng.Int64N(3000)}
	}
	for _, proj := range []struct {
		name  string
		names []string
	}{{"decode=all", nil}, {"decode=one", []string{"tier"}}} {
		b.Run("snapshot/"+proj.name, func(b *testing.B) {
			for b.Loop() {
				n := 0
				for _, err := range query.Snapshot(db, "wide", query.AsOf{Valid: 1500}, query.KeyRange{}, query.SnapshotOptions{Project: proj.names}) {
					if err != nil {
						b.Fatal(err)
					}
					n++
				}
				if n != wideKeys {
					b.Fatalf("%d rows", n)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*wideKeys), "ns/row")
		})
		b.Run("history/"+proj.name, func(b *testing.B) {
			for b.Loop() {
				n := 0
				for _, err := range query.HistoryRange(db, "wide", query.KeyRange{}, store.NegInfinity, store.Infinity, query.HistoryOptions{Project: proj.names}) {
					if err != nil {
						b.Fatal(err)
					}
					n++
				}
				if n != wideKeys*wideVersions {
					b.Fatalf("%d rows", n)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*wideKeys*wideVersions), "ns/row")
		})
		b.Run("resolve-attrs/"+proj.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := query.Resolve(db, "wide", facts, query.ResolveOptions{Miss: query.MissNull, Attrs: true, Project: proj.names}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(facts)), "ns/fact")
		})
	}
}

var (
	pastOnce sync.Once
	pastDB   *store.DB
	pastT0   int64
	pastErr  error
)

const (
	pastKeys   = 50_000
	pastRounds = 4
	pastFacts  = 200_000
)

func pastStore(b *testing.B) (*store.DB, int64) {
	benchOnly(b)
	pastOnce.Do(func() {
		db := benchStore(b)
		if _, pastErr = db.CreateTable(store.TableDef{Name: "dim", Key: []store.KeyColumn{{Name: "id", Type: store.Int64}}}); pastErr != nil {
			return
		}
		for round := range pastRounds {
			for lo := 0; lo < pastKeys; lo += 10_000 {
				c, err := txn.Update(db, func(tx *txn.Tx) error {
					for k := lo; k < lo+10_000; k++ {
						attrs := store.Attrs{"city": fmt.Sprintf("city-%d", (k+round)%97), "tier": int64(round)}
						if _, err := tx.Upsert("dim", store.Key{int64(k)}, attrs, int64(round)*1000+int64(k%500)); err != nil {
							return err
						}
					}
					return nil
				})
				if err != nil {
					pastErr = err
					return
				}
				if round == 1 {
					pastT0 = c.Tx // the last commit of round two
				}
			}
		}
		pastErr = db.Compact(context.Background())
		pastDB = db
	})
	if pastErr != nil {
		b.Fatal(pastErr)
	}
	return pastDB, pastT0
}

// pastFactSets returns pastFacts facts over pastStore's keys (a few unknown
// ones too) at valid times from before the first version to after the last,
// once at the newest commit and once at the past commit t0.
func pastFactSets(t0 int64) (latest, past []query.Fact) {
	rng := rand.New(rand.NewPCG(3, 4))
	latest = make([]query.Fact, pastFacts)
	past = make([]query.Fact, pastFacts)
	for i := range latest {
		latest[i] = query.Fact{Key: store.Key{rng.Int64N(pastKeys + pastKeys/100)}, At: rng.Int64N(pastRounds*1000+500) - 200}
		past[i] = latest[i]
		past[i].Tx = t0
	}
	return latest, past
}

func BenchmarkResolvePastTx(b *testing.B) {
	db, t0 := pastStore(b)
	s, err := db.Snapshot()
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	tb, err := s.Table("dim")
	if err != nil {
		b.Fatal(err)
	}
	latest, past := pastFactSets(t0)
	// The per-fact path's probes, sorted as Resolve sorts them.
	type probe struct {
		tuple []byte
		at    int64
	}
	probes := make([]probe, len(past))
	for i, f := range past {
		tuple, _ := tb.AppendKey(nil, f.Key)
		probes[i] = probe{tuple, f.At}
	}
	slices.SortFunc(probes, func(a, b probe) int {
		if c := slices.Compare(a.tuple, b.tuple); c != 0 {
			return c
		}
		return -cmp.Compare(a.at, b.at)
	})
	for _, attrs := range []bool{false, true} {
		suffix := fmt.Sprintf("/attrs=%v", attrs)
		b.Run("at=latest/path=merged"+suffix, func(b *testing.B) {
			for b.Loop() {
				if _, err := query.Resolve(s, "dim", latest, query.ResolveOptions{Miss: query.MissNull, Attrs: attrs}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*pastFacts), "ns/fact")
		})
		b.Run("at=past/path=merged"+suffix, func(b *testing.B) {
			for b.Loop() {
				if _, err := query.Resolve(s, "dim", past, query.ResolveOptions{Miss: query.MissNull, Attrs: attrs}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*pastFacts), "ns/fact")
		})
		b.Run("at=past/path=per-fact"+suffix, func(b *testing.B) {
			for b.Loop() {
				for _, p := range probes {
					v, _, err := s.VersionAt(tb, p.tuple, p.at, t0)
					if err != nil {
						b.Fatal(err)
					}
					if !attrs {
						v.Attrs = nil
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*pastFacts), "ns/fact")
		})
	}
}

var (
	longPastOnce sync.Once
	longPastDB   *store.DB
	longPastT0   int64
	longPastErr  error
)

const (
	longPastKeys     = 200
	longPastVersions = 1_000
)

// longPastStore returns the store of BenchmarkResolvePastTxLongHistories,
// built once: every key changes once per commit, valid from 100 units after
// its last change, and t0 is the commit of each key's 500th version.
func longPastStore(b *testing.B) (*store.DB, int64) {
	benchOnly(b)
	longPastOnce.Do(func() {
		db := benchStore(b)
		if _, longPastErr = db.CreateTable(store.TableDef{Name: "prices", Key: []store.KeyColumn{{Name: "id", Type: store.Int64}}}); longPastErr != nil {
			return
		}
		for v := range longPastVersions {
			c, err := txn.Update(db, func(tx *txn.Tx) error {
				for k := range longPastKeys {
					if _, err := tx.Upsert("prices", store.Key{int64(k)}, store.Attrs{"price": int64(v*7 + k)}, int64(v)*100); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				longPastErr = err
				return
			}
			if v == longPastVersions/2 {
				longPastT0 = c.Tx
			}
		}
		longPastErr = db.Compact(context.Background())
		longPastDB = db
	})
	if longPastErr != nil {
		b.Fatal(longPastErr)
	}
	return longPastDB, longPastT0
}

func BenchmarkResolvePastTxLongHistories(b *testing.B) {
	db, t0 := longPastStore(b)
	s, err := db.Snapshot()
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	tb, err := s.Table("prices")
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, sc := range []struct {
		perKey int
		spread string
	}{{1, "known"}, {10, "known"}, {1, "whole"}, {10, "whole"}} {
		perKey := sc.perKey
		latest := make([]query.Fact, longPastKeys*perKey)
		past := make([]query.Fact, len(latest))
		for i := range latest {
			// Valid times the first half of each history covers, the
			// versions known at t0 (spread=known), or the whole history,
			// where half of them lie past what t0 knew (spread=whole).
			span := int64(longPastVersions / 2 * 100)
			if sc.spread == "whole" {
				span *= 2
			}
			latest[i] = query.Fact{Key: store.Key{int64(i % longPastKeys)}, At: rng.Int64N(span)}
			past[i] = latest[i]
			past[i].Tx = t0
		}
		for _, c := range []struct {
			name  string
			facts []query.Fact
		}{{"at=latest/path=merged", latest}, {"at=past/path=merged", past}} {
			b.Run(fmt.Sprintf("spread=%s/facts-per-key=%d/%s", sc.spread, perKey, c.name), func(b *testing.B) {
				for b.Loop() {
					if _, err := query.Resolve(s, "prices", c.facts, query.ResolveOptions{Miss: query.MissNull, Attrs: true}); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(c.facts)), "ns/fact")
			})
		}
		b.Run(fmt.Sprintf("spread=%s/facts-per-key=%d/at=past/path=per-fact", sc.spread, perKey), func(b *testing.B) {
			for b.Loop() {
				for _, f := range past {
					if _, _, err := s.KeyVersionAt(tb, f.Key, f.At, f.Tx); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(past)), "ns/fact")
		})
	}
}

func BenchmarkBackfillLongGroupHistories(b *testing.B) {
	benchOnly(b)
	db := benchStore(b)
	if _, err := db.CreateTable(store.TableDef{Name: "c", Key: []store.KeyColumn{{Name: "id", Type: store.String}}, GroupBy: []string{"user_id"}}); err != nil {
		b.Fatal(err)
	}
	const groups, perGroup, versions = 100, 5, 400
	for v := range versions {
		if _, err := txn.Update(db, func(tx *txn.Tx) error {
			for c := range groups * perGroup {
				attrs := store.Attrs{"user_id": fmt.Sprint("u", c%groups), "amount": int64(v + c)}
				if _, err := tx.Upsert("c", store.Key{fmt.Sprint("c", c)}, attrs, int64(v)*aggDay); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
	}
	if err := db.Compact(context.Background()); err != nil {
		b.Fatal(err)
	}
	var aggs []query.Agg
	for _, spec := range []string{"count", "sum(amount)", "sum(amount):30d"} {
		a, err := query.ParseAgg(spec)
		if err != nil {
			b.Fatal(err)
		}
		aggs = append(aggs, a)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	rows := make([]query.LeftRow, groups*20)
	for i := range rows {
		rows[i] = query.LeftRow{Group: store.Key{fmt.Sprint("u", i%groups)}, TS: (versions-10)*aggDay + rng.Int64N(10*aggDay)}
	}
	s, err := db.Snapshot()
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	for b.Loop() {
		for _, err := range query.BackfillRows(s, "c", rows, aggs, query.BackfillOptions{}) {
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(rows)), "ns/row")
}

var (
	intAggOnce sync.Once
	intAggDB   *store.DB
	intAggErr  error
)

const (
	intAggContracts = 20_000
	intAggVersions  = 5
	intAggGroups    = 2_000
	intAggRows      = 200_000
)

// intAggStore returns the store of BenchmarkBackfillIntPath and
// BenchmarkAggregateIntPath, built once.
func intAggStore(b *testing.B) *store.DB {
	benchOnly(b)
	intAggOnce.Do(func() {
		db := benchStore(b)
		if _, intAggErr = db.CreateTable(store.TableDef{Name: "contracts", Key: []store.KeyColumn{{Name: "id", Type: store.String}}, GroupBy: []string{"user_id"}}); intAggErr != nil {
			return
		}
		rng := rand.New(rand.NewPCG(5, 6))
		for lo := 0; lo < intAggContracts && intAggErr == nil; lo += 2_000 {
			_, intAggErr = txn.Update(db, func(tx *txn.Tx) error {
				for c := lo; c < lo+2_000; c++ {
					user := fmt.Sprintf("u%d", c%intAggGroups)
					for v := range intAggVersions {
						from := int64(v) * 10 * aggDay
						attrs := store.Attrs{"user_id": user, "amount": rng.Int64N(10_000), "status": []string{"active", "paused", "closed"}[rng.IntN(3)]}
						if err := tx.Put("contracts", store.Key{fmt.Sprintf("c%d", c)}, attrs, from, from+10*aggDay); err != nil {
							return err
						}
					}
				}
				return nil
			})
		}
		if intAggErr == nil {
			intAggErr = db.Compact(context.Background())
		}
		intAggDB = db
	})
	if intAggErr != nil {
		b.Fatal(intAggErr)
	}
	return intAggDB
}

func BenchmarkBackfillIntPath(b *testing.B) {
	db := intAggStore(b)
	var aggs []query.Agg
	for _, spec := range []string{"count", "sum(amount)", "sum(amount):30d", "max(amount)", "count_distinct(status)"} {
		a, err := query.ParseAgg(spec)
		if err != nil {
			b.Fatal(err)
		}
		aggs = append(aggs, a)
	}
	rng := rand.New(rand.NewPCG(7, 8))
	rows := make([]query.LeftRow, intAggRows)
	for i := range rows {
		rows[i] = query.LeftRow{Group: store.Key{fmt.Sprintf("u%d", rng.IntN(intAggGroups))}, TS: rng.Int64N(60 * aggDay)}
	}
	s, err := db.Snapshot()
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	for _, path := range []struct {
		name string
		on   query.AggPath
	}{{"path=int", query.IntPath}, {"path=generic", query.GenericPath}} {
		b.Run(path.name, func(b *testing.B) {
			defer enginetest.CPUPerOp(b)()
			for b.Loop() {
				for _, err := range query.BackfillOn(path.on, s, "contracts", rows, aggs, query.BackfillOptions{}) {
					if err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*intAggRows), "ns/row")
		})
	}
}

// BenchmarkAggregateIntPath runs the point aggregations and a table-wide
// backfill on BenchmarkBackfillIntPath's store, on the integer path (path=int)
// and the generic one (path=generic: each version decoded into a map, every
// value boxed): Aggregate of one group (50 versions, 10 alive at the time),
// AggregateTable (a scan of 20k versions) and a table-wide backfill of 1,000
// dates (one sweep over the table's 100k versions).
func BenchmarkAggregateIntPath(b *testing.B) {
	db := intAggStore(b)
	var aggs []query.Agg
	for _, spec := range []string{"count", "sum(amount)", "avg(amount)", "min(amount)", "max(amount)"} {
		a, err := query.ParseAgg(spec)
		if err != nil {
			b.Fatal(err)
		}
		aggs = append(aggs, a)
	}
	s, err := db.Snapshot()
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	rng := rand.New(rand.NewPCG(9, 10))
	series := make([]query.LeftRow, 1_000)
	for i := range series {
		series[i] = query.LeftRow{TS: rng.Int64N(50 * aggDay)}
	}
	for _, path := range []struct {
		name string
		on   query.AggPath
	}{{"path=int", query.IntPath}, {"path=generic", query.GenericPath}} {
		b.Run("read=aggregate/"+path.name, func(b *testing.B) {
			defer enginetest.CPUPerOp(b)()
			i := 0
			for b.Loop() {
				i++
				group := store.Key{fmt.Sprintf("u%d", i%intAggGroups)}
				if _, err := query.AggregateOn(path.on, s, "contracts", group, query.AsOf{Valid: int64(i%50) * aggDay}, aggs); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("read=aggregate-table/"+path.name, func(b *testing.B) {
			defer enginetest.CPUPerOp(b)()
			for b.Loop() {
				if _, err := query.AggregateTableOn(path.on, s, "contracts", query.AsOf{Valid: 25 * aggDay}, aggs); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("read=backfill-table-wide/"+path.name, func(b *testing.B) {
			defer enginetest.CPUPerOp(b)()
			for b.Loop() {
				for _, err := range query.BackfillOn(path.on, s, "contracts", series, aggs, query.BackfillOptions{TableWide: true}) {
					if err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// BenchmarkResolveRowsPastTxOutput resolves the facts of BenchmarkResolvePastTx
// through the row view, at the newest commit and at the past one, with a
// callback that stores each answer in a slice by the fact's input position
// (out=scattered, as a caller that keeps the answers does: a store to a
// random place per fact) and with one that keeps nothing (out=none). The
// difference between the two shows what the caller's stores cost each path.
func BenchmarkResolveRowsPastTxOutput(b *testing.B) {
	db, t0 := pastStore(b)
	s, err := db.Snapshot()
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	latest, past := pastFactSets(t0)
	type answer struct {
		from, to, sk int64
		city         string
		tier         int64
	}
	out := make([]answer, pastFacts)
	city, tier := store.NewAttrRef("city"), store.NewAttrRef("tier")
	opts := query.ResolveOptions{Miss: query.MissSkip, Attrs: true}
	for _, at := range []struct {
		name  string
		facts []query.Fact
	}{{"latest", latest}, {"past", past}} {
		for _, scatter := range []bool{true, false} {
			name := "at=" + at.name + "/out=none"
			if scatter {
				name = "at=" + at.name + "/out=scattered"
			}
			b.Run(name, func(b *testing.B) {
				var found int
				for b.Loop() {
					found = 0
					err := query.ResolveRows(s, "dim", at.facts, opts, func(row *query.ResolvedRow) error {
						c, _ := row.Text(city)
						t, _ := row.Int64(tier)
						if scatter {
							out[row.Index] = answer{row.ValidFrom, row.ValidTo, int64(row.SK), string(c), t}
						}
						found++
						return nil
					})
					if err != nil {
						b.Fatal(err)
					}
				}
				if found == 0 {
					b.Fatal("no fact resolved")
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*pastFacts), "ns/fact")
			})
		}
	}
}
