package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/bitempo/bitempo/encoding"
	bpebble "github.com/bitempo/bitempo/engine/pebble"
	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// bitempoEngine runs the workloads through bitempo's public API with its
// defaults: synced commits, a 64 MiB block cache, a 16 MiB memtable.
type bitempoEngine struct {
	db      *store.DB
	pe      *bpebble.Engine // nil on etcd
	snap    *store.Snapshot // reads of workloads 3-6
	roundTx []int64         // workload 4: the transaction time after each round
	baseTx  []int64         // workload 9: the transaction time after each commit of the base table's ingest
	facts   []query.Fact
	// pastFacts are facts at one past transaction time (stagePast).
	pastFacts []query.Fact
	rows      []query.LeftRow // workload 8
	aggs      []query.Agg
	// city and tier are get's references to the attributes it reads.
	city, tier *store.AttrRef
}

const (
	dimTable = "dim"
	oldTable = "old"
	cdcTable = "cdc"
	aggTable = "contracts"
)

func openBitempo(dir string) (engine, error) {
	quiet := slog.New(slog.DiscardHandler)
	pe, err := bpebble.Open(dir, bpebble.Options{CacheSize: pebbleSetup.cache(), MemTableSize: memTableBytes, Logger: quiet, Tune: pebbleSetup.apply})
	if err != nil {
		return nil, err
	}
	db, err := store.OpenEngine(pe, dir, store.Options{Logger: quiet})
	if err != nil {
		return nil, err
	}
	return &bitempoEngine{db: db, pe: pe}, nil
}

// blockCacheCounts reports Pebble's block-cache lookups so far
// (blockCacheCounter); on etcd there is no block cache and nothing to count.
func (e *bitempoEngine) blockCacheCounts() (hits, misses int64) {
	if e.pe == nil {
		return 0, 0
	}
	m := e.pe.Metrics().BlockCache
	return m.Hits, m.Misses
}

func bitempoVersion() string {
	return "this tree (synced commits, " + pebbleSetup.describe() + ")"
}

var keyColumn = []store.KeyColumn{{Name: "id", Type: store.String}}

func (e *bitempoEngine) createDim() error {
	_, err := e.db.CreateTable(store.TableDef{Name: dimTable, Key: keyColumn})
	return err
}

func (e *bitempoEngine) ingest(changes []change, batch int) error {
	for lo := 0; lo < len(changes); lo += batch {
		part := changes[lo:min(lo+batch, len(changes))]
		_, err := txn.Update(e.db, func(tx *txn.Tx) error {
			for _, c := range part {
				if _, err := tx.Upsert(dimTable, store.Key{c.key}, storeAttrs(c.attrs), c.at); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		e.baseTx = append(e.baseTx, e.db.LastTx())
	}
	return nil
}

func (e *bitempoEngine) dimVersions(fn func(string, version)) error {
	return e.allVersions(dimTable, fn)
}

func (e *bitempoEngine) allVersions(table string, fn func(string, version)) error {
	for v, err := range query.HistoryRange(e.db, table, query.KeyRange{}, store.NegInfinity, store.Infinity, query.HistoryOptions{}) {
		if err != nil {
			return err
		}
		bv, err := fromStore(&v)
		if err != nil {
			return err
		}
		fn(v.Key[0].(string), bv)
	}
	return nil
}

func (e *bitempoEngine) startReads() error {
	s, err := e.db.Snapshot()
	if err != nil {
		return err
	}
	e.snap = s
	return nil
}

func (e *bitempoEngine) settle() error {
	if err := e.db.Compact(context.Background()); err != nil {
		return err
	}
	if e.snap == nil {
		return nil
	}
	// The snapshot's cached iterators still read the files the compaction
	// replaced; a new snapshot reads the compacted ones.
	err := e.snap.Close()
	e.snap = nil
	return errors.Join(err, e.startReads())
}

func (e *bitempoEngine) lookup(key string, valid int64) (version, bool, error) {
	return e.get(dimTable, key, query.AsOf{Valid: valid})
}

// get reads the version of key in effect at at as a row view (query.GetRow),
// its two attributes through references the engine keeps.
func (e *bitempoEngine) get(table, key string, at query.AsOf) (version, bool, error) {
	if e.city == nil {
		e.city, e.tier = store.NewAttrRef("city"), store.NewAttrRef("tier")
	}
	var v version
	err := query.GetRow(e.snap, table, store.Key{key}, at, query.GetOptions{}, func(r *store.Row) error {
		city, ok1 := r.String(e.city)
		tier, ok2 := r.Int64(e.tier)
		if !ok1 || !ok2 {
			rv, err := r.Version()
			if err != nil {
				return err
			}
			return fmt.Errorf("unexpected attributes %v", rv.Attrs)
		}
		v = version{from: r.ValidFrom, to: r.ValidTo, attrs: attrs{city: city, tier: tier}}
		return nil
	})
	if errors.Is(err, query.ErrNotFound) {
		return version{}, false, nil
	}
	if err != nil {
		return version{}, false, err
	}
	return v, true, nil
}

// loadCorrections replays workload 4's history through transactions: the
// initial versions, then each correction round as Puts of a version's own period
// with new attributes, in commits of 1,000 writes, noting the transaction time
// after each round.
func (e *bitempoEngine) loadCorrections(c *corrections) error {
	if _, err := e.db.CreateTable(store.TableDef{Name: oldTable, Key: keyColumn}); err != nil {
		return err
	}
	var initial []fixation
	for k, vs := range c.periods {
		for v := range vs {
			initial = append(initial, fixation{k: k, v: v, a: vs[v].attrs})
		}
	}
	for _, round := range append([][]fixation{initial}, c.rounds...) {
		for lo := 0; lo < len(round); lo += 1_000 {
			part := round[lo:min(lo+1_000, len(round))]
			_, err := txn.Update(e.db, func(tx *txn.Tx) error {
				for _, f := range part {
					p := c.periods[f.k][f.v]
					if err := tx.Put(oldTable, store.Key{c.keys[f.k]}, storeAttrs(f.a), p.from, p.to); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				return err
			}
		}
		e.roundTx = append(e.roundTx, e.db.LastTx())
	}
	return e.startReads()
}

func (e *bitempoEngine) lookupAsOf(key string, valid int64, round int) (version, bool, error) {
	return e.get(oldTable, key, query.AsOf{Valid: valid, Tx: e.roundTx[round]})
}

func (e *bitempoEngine) stageFacts(facts []probe) error {
	e.facts = make([]query.Fact, len(facts))
	for i, f := range facts {
		e.facts[i] = query.Fact{Key: store.Key{f.key}, At: f.valid}
	}
	return nil
}

func (e *bitempoEngine) resolve(out []answer) error { return e.resolveFacts(e.facts, out) }

// resolveFacts resolves facts against the base table with their attributes
// and writes the answers found into out, by fact index. It reads each answer
// as a row view (query.ResolveRows) on the merge's goroutines: each fact's
// slot of out is written once, by one of them.
func (e *bitempoEngine) resolveFacts(facts []query.Fact, out []answer) error {
	opts := query.ResolveOptions{Miss: query.MissSkip, Attrs: true, Project: []string{"city", "tier"}}
	city, tier := store.NewAttrRef("city"), store.NewAttrRef("tier")
	return query.ResolveRows(e.snap, dimTable, facts, opts, func(row *query.ResolvedRow) error {
		c, ok1 := row.Text(city)
		t, ok2 := row.Int64(tier)
		if !ok1 || !ok2 {
			return fmt.Errorf("fact %d: no city or tier", row.Index)
		}
		out[row.Index] = answer{found: true, v: version{attrs: attrs{city: string(c), tier: t}}}
		return nil
	})
}

// stagePast copies the staged facts with the transaction time the base table
// had after its ingest's first commits commits (workload 9), untimed: every
// fact at that one past transaction time.
func (e *bitempoEngine) stagePast(commits int) error {
	if commits < 1 || commits > len(e.baseTx) {
		return fmt.Errorf("no transaction time after %d of %d commits", commits, len(e.baseTx))
	}
	tx := e.baseTx[commits-1]
	e.pastFacts = make([]query.Fact, len(e.facts))
	for i, f := range e.facts {
		e.pastFacts[i] = query.Fact{Key: f.Key, At: f.At, Tx: tx}
	}
	return nil
}

// resolvePast resolves the facts stagePast prepared.
func (e *bitempoEngine) resolvePast(out []answer) error { return e.resolveFacts(e.pastFacts, out) }

// snapshot reads the rows in place (query.SnapshotRows): the key and the
// city are copied into strings for fn, as the floor copies them, and nothing
// else is allocated per row.
func (e *bitempoEngine) snapshot(valid int64, fn func(string, version)) error {
	city, tier := store.NewAttrRef("city"), store.NewAttrRef("tier")
	var key encoding.Value
	var err error
	scanErr := query.SnapshotRows(e.snap, dimTable, query.AsOf{Valid: valid}, query.KeyRange{}, query.SnapshotOptions{}, func(r *store.Row) bool {
		if err = r.KeyValue(0, &key); err != nil {
			return false
		}
		c, ok1 := r.Text(city)
		t, ok2 := r.Int64(tier)
		if !ok1 || !ok2 {
			err = fmt.Errorf("key %q valid from %d: no city or tier", key.Bytes, r.ValidFrom)
			return false
		}
		fn(string(key.Bytes), version{from: r.ValidFrom, to: r.ValidTo, attrs: attrs{city: string(c), tier: t}})
		return true
	})
	return errors.Join(scanErr, err)
}

func (e *bitempoEngine) createChanges() error {
	_, err := e.db.CreateTable(store.TableDef{Name: cdcTable, Key: keyColumn, Kind: store.Changes})
	return err
}

func (e *bitempoEngine) applyCDC(batchID string, events []cdcEvent) error {
	evs := make([]txn.Event, len(events))
	for i, ev := range events {
		evs[i] = txn.Event{Key: store.Key{ev.key}, At: ev.at, Seq: ev.seq, Op: txn.OpUpsert}
		if ev.del {
			evs[i].Op = txn.OpDelete
		} else {
			evs[i].Attrs = storeAttrs(ev.attrs)
		}
	}
	_, err := txn.Apply(e.db, cdcTable, batchID, evs)
	return err
}

func (e *bitempoEngine) changesVersions(fn func(string, version)) error {
	return e.allVersions(cdcTable, fn)
}

// loadAggregates loads the contracts with Puts of their versions, in commits of
// 1,000, into a table grouped by user_id.
func (e *bitempoEngine) loadAggregates(a *aggData) error {
	def := store.TableDef{Name: aggTable, Key: []store.KeyColumn{{Name: "contract_id", Type: store.String}}, GroupBy: []string{"user_id"}}
	if _, err := e.db.CreateTable(def); err != nil {
		return err
	}
	type put struct {
		c *contract
		v contractVersion
	}
	var puts []put
	for i := range a.contracts {
		for _, v := range a.contracts[i].versions {
			puts = append(puts, put{c: &a.contracts[i], v: v})
		}
	}
	for lo := 0; lo < len(puts); lo += 1_000 {
		_, err := txn.Update(e.db, func(tx *txn.Tx) error {
			for _, p := range puts[lo:min(lo+1_000, len(puts))] {
				attrs := store.Attrs{"user_id": p.c.user, "amount": p.v.amount, "status": p.v.status}
				if err := tx.Put(aggTable, store.Key{p.c.id}, attrs, p.v.from, p.v.to); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	for _, spec := range aggSpecs {
		agg, err := query.ParseAgg(spec)
		if err != nil {
			return err
		}
		e.aggs = append(e.aggs, agg)
	}
	e.rows = make([]query.LeftRow, len(a.rows))
	for i, r := range a.rows {
		e.rows[i] = query.LeftRow{Group: store.Key{r.user}, TS: r.ts}
	}
	return e.startReads()
}

func (e *bitempoEngine) backfill(out []features) error {
	for r, err := range query.BackfillRows(e.snap, aggTable, e.rows, e.aggs, query.BackfillOptions{}) {
		if err != nil {
			return err
		}
		for k := range r.Len() {
			if x, ok := r.Int(k); ok {
				out[r.Index][k] = x
			} else if out[r.Index][k], err = featureValue(r.Value(k)); err != nil {
				return err
			}
		}
	}
	return nil
}

func (e *bitempoEngine) close() error {
	var err error
	if e.snap != nil {
		err = e.snap.Close()
	}
	return errors.Join(err, e.db.Close())
}

func storeAttrs(a attrs) store.Attrs { return store.Attrs{"city": a.city, "tier": a.tier} }

func toAttrs(sa store.Attrs) (attrs, error) {
	city, ok1 := sa["city"].(string)
	tier, ok2 := sa["tier"].(int64)
	if !ok1 || !ok2 {
		return attrs{}, fmt.Errorf("unexpected attributes %v", sa)
	}
	return attrs{city: city, tier: tier}, nil
}

func fromStore(v *store.Version) (version, error) {
	a, err := toAttrs(v.Attrs)
	return version{from: v.ValidFrom, to: v.ValidTo, attrs: a}, err
}
