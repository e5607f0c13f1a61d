// Package enginetest is the one semantic suite every storage engine of bitempo
// runs: the transaction and CDC apply scenarios (txn/testdata), the read and
// aggregation scenarios (query/testdata), the comparison of random
// operation logs with the reference model (fuzz/model), CDC apply of shuffled,
// replayed batches against the model's derivation, and store.Verify after
// every write. Run takes an Opener, so the same test code runs on Pebble (this
// package's own test) and on a 3-member etcd cluster (the etcd module's).
package enginetest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/fuzz/model"
	"github.com/bitempo/bitempo/fuzz/model/oplog"
	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// Opener opens a fresh, empty store with opts for one test. The suite closes
// it; the opener registers any other cleanup with t.
type Opener func(t *testing.T, opts store.Options) *store.DB

// Memory opens an in-memory Pebble store.
func Memory(t *testing.T, opts store.Options) *store.DB {
	opts.InMemory = true
	db, err := store.Open("db", opts)
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// Config sizes a Run: engines whose commits are round trips over a network
// run fewer operations.
type Config struct {
	// ModelLogs is how many random operation logs are compared with the
	// model, each of ModelTxns transactions.
	ModelLogs, ModelTxns int
	// CDCRuns is how many random event sets are applied in shuffled batches.
	CDCRuns int
	// Seed makes the random parts reproducible (0: a fixed seed).
	Seed uint64
}

// Run runs the whole suite on the stores open returns.
func Run(t *testing.T, open Opener, cfg Config) {
	t.Run("scenarios/periods", func(t *testing.T) {
		WalkScenarios(t, RepoPath("txn/testdata/periods"), open, Periods)
	})
	t.Run("scenarios/erase", func(t *testing.T) {
		WalkScenarios(t, RepoPath("txn/testdata/erase"), open, Erase)
	})
	t.Run("scenarios/apply", func(t *testing.T) {
		WalkScenarioFiles(t, RepoPath("txn/testdata/apply"), open, NewApply)
	})
	t.Run("scenarios/reads", func(t *testing.T) {
		WalkScenarios(t, RepoPath("query/testdata/reads"), open, Reads)
	})
	t.Run("scenarios/aggregate", func(t *testing.T) {
		WalkScenarios(t, RepoPath("query/testdata/aggregate"), open, Aggregate)
	})
	t.Run("model", func(t *testing.T) { ModelLogs(t, open, cfg) })
	t.Run("cdc-shuffled", func(t *testing.T) { CDCShuffled(t, open, cfg) })
}

// RepoPath returns the path of rel, a path from the repository's root, in
// this source tree (the scenario files stay beside the package they specify).
func RepoPath(rel string) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", filepath.FromSlash(rel))
}

// WalkScenarios runs every scenario file under dir on a fresh store whose
// clock is stuck at 0 (commits get tx 1, 2, 3, ...); a command's error is its
// output, and one matching ErrCheck also fails the test.
func WalkScenarios(t *testing.T, dir string, open Opener, run Driver) {
	WalkScenarioFiles(t, dir, open, func() Driver { return run })
}

// WalkScenarioFiles is WalkScenarios for a driver that keeps state within a
// file: newDriver is called once per file.
func WalkScenarioFiles(t *testing.T, dir string, open Opener, newDriver func() Driver) {
	datadriven.Walk(t, dir, func(t *testing.T, path string) {
		db := open(t, store.Options{Clock: func() int64 { return 0 }})
		defer db.Close()
		run := newDriver()
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			out, err := run(db, d)
			if errors.Is(err, ErrCheck) {
				t.Errorf("%s: %v", d.Pos, err)
			}
			if err != nil {
				return "error: " + err.Error() + "\n"
			}
			return out
		})
	})
}

// ModelLogs applies random operation logs (oplog.Random, edge cases
// included) to fresh stores and to the reference model, comparing them after
// every transaction, and verifies each store at the end.
func ModelLogs(t *testing.T, open Opener, cfg Config) {
	for i := range cfg.ModelLogs {
		seed := cfg.Seed + uint64(i) + 1
		l := oplog.Random(rand.New(rand.NewPCG(seed, 11)), cfg.ModelTxns, i%2 == 1)
		r := oplog.NewRunner(l.Tables, l.Keys, seed)
		db := open(t, store.Options{Clock: r.Clock, NoSync: true})
		if err := r.Attach(db, true); err != nil {
			t.Fatal(err)
		}
		for j, tx := range l.Txns {
			if err := r.Apply(j, tx); err != nil {
				_ = db.Close()
				t.Fatalf("log %d (seed %d): %v\nlog:\n%s", i, seed, err, l)
			}
		}
		if err := VerifyStore(db); err != nil {
			t.Fatalf("log %d (seed %d): %v", i, seed, err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// CDCShuffled applies random CDC event sets to changes tables, in shuffled
// batches with duplicated events and replayed batch ids, and checks the table
// after every batch against the model's derivation from the events applied
// so far (model.ChangesTable.Derive), with Verify clean. Arrival order must
// not matter: the final tables of one batch in order and of the shuffled
// batches are equal.
func CDCShuffled(t *testing.T, open Opener, cfg Config) {
	rng := rand.New(rand.NewPCG(cfg.Seed+7, 13))
	for run := range cfg.CDCRuns {
		def := store.TableDef{Name: "t", Kind: store.Changes, Key: []store.KeyColumn{{Name: "k", Type: store.String}}}
		if run%2 == 1 {
			def.TrackExcept = []string{"y"}
			def.Compare = map[string]store.CompareOptions{"y": {Trim: true, FoldCase: true}}
		}
		def.IgnoreNulls = run%3 == 2
		events := randomEvents(rng, 6+rng.IntN(14))
		inOrder := applyBatches(t, open, def, [][]txn.Event{events}, rng)
		shuffled := slices.Clone(events)
		rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		var batches [][]txn.Event
		for rest := shuffled; len(rest) > 0; {
			n := 1 + rng.IntN(min(4, len(rest)))
			batch := slices.Clone(rest[:n])
			rest = rest[n:]
			if rng.IntN(3) == 0 {
				batch = append(batch, events[rng.IntN(len(events))]) // a duplicate delivery
			}
			batches = append(batches, batch)
		}
		if split := applyBatches(t, open, def, batches, rng); split != inOrder {
			t.Fatalf("run %d: arrival orders disagree:\nin order\n%s\nshuffled\n%s", run, inOrder, split)
		}
	}
}

func randomEvents(rng *rand.Rand, n int) []txn.Event {
	events := make([]txn.Event, 0, n)
	for range n {
		e := txn.Event{Key: store.Key{[]string{"a", "b", "c"}[rng.IntN(3)]}, At: int64(rng.IntN(24)) - 8, Seq: int64(rng.IntN(2)), Op: txn.OpUpsert}
		if rng.IntN(5) == 0 {
			e.Op = txn.OpDelete
		} else {
			e.Attrs = store.Attrs{"x": []any{int64(1), int64(2), nil}[rng.IntN(3)], "y": []string{"p", " P", "q"}[rng.IntN(3)]}
		}
		events = append(events, e)
	}
	return events
}

// applyBatches applies batches to a fresh store, replaying an earlier batch
// id now and then, and checks the table against the model after each. It
// returns the final table.
func applyBatches(t *testing.T, open Opener, def store.TableDef, batches [][]txn.Event, rng *rand.Rand) string {
	db := open(t, store.Options{NoSync: true})
	defer db.Close()
	tbl, err := db.CreateTable(def)
	if err != nil {
		t.Fatal(err)
	}
	ApplyBatches(t, db, tbl, batches, func(_, n int) int {
		if n > 0 && rng.IntN(4) == 0 {
			return rng.IntN(n)
		}
		return -1
	}, nil)
	return StoredVersions(t, db, tbl)
}

// ApplyBatches applies batches to the changes table tbl in order as batch ids
// b0, b1, ..., checking the table after each against Derived of the events
// applied so far and running Verify; a failed check fails the test. Before
// batch i it replays the committed batch replay(i, n) of the n committed so
// far, or none when that is -1; the replay must write nothing. A batch that
// txn.Apply refuses with an error skip accepts is left out (skip may be nil);
// any other error fails the test. It returns the events applied.
func ApplyBatches(t *testing.T, db *store.DB, tbl *store.Table, batches [][]txn.Event, replay func(i, n int) int, skip func(error) bool) []txn.Event {
	var applied []txn.Event
	var committed []string
	for i, batch := range batches {
		if r := replay(i, len(committed)); r >= 0 {
			if res, err := txn.Apply(db, tbl.Name, committed[r], batch); err != nil || !res.Replayed {
				t.Fatalf("replay of %s: %+v %v", committed[r], res, err)
			}
		}
		id := fmt.Sprintf("b%d", i)
		if _, err := txn.Apply(db, tbl.Name, id, batch); err != nil {
			if skip != nil && skip(err) {
				continue
			}
			t.Fatalf("apply %s %v: %v", id, batch, err)
		}
		committed = append(committed, id)
		applied = append(applied, batch...)
		if got, want := StoredVersions(t, db, tbl), Derived(tbl, applied); got != want {
			t.Fatalf("after batch %s (events so far %v):\ngot\n%s\nwant\n%s", id, applied, got, want)
		}
		if err := VerifyStore(db); err != nil {
			t.Fatalf("after batch %s: %v", id, err)
		}
	}
	return applied
}

// StoredVersions renders the current versions of every key of a changes table
// whose keys are one string column: valid period and attribute bytes
// (surrogate keys depend on arrival order, so they are left out).
func StoredVersions(t *testing.T, db *store.DB, tbl *store.Table) string {
	var b strings.Builder
	err := eachChangesKey(db, tbl, func(s *store.Snapshot, tuple []byte) error {
		vs, err := s.KeyVersions(tbl, tuple, store.Infinity)
		for _, v := range vs {
			writeVersion(&b, v.Key[0].(string), v.ValidFrom, v.ValidTo, v.Attrs)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// eachChangesKey calls fn with one snapshot and the key tuple of every key of
// the changes table tbl, in key order, and stops at its first error.
func eachChangesKey(db *store.DB, tbl *store.Table, fn func(s *store.Snapshot, tuple []byte) error) error {
	s, err := db.Snapshot()
	if err != nil {
		return err
	}
	defer s.Close()
	tuples, err := s.ChangesKeys(tbl)
	if err != nil {
		return err
	}
	for _, tuple := range tuples {
		if err := fn(s, tuple); err != nil {
			return err
		}
	}
	return nil
}

func writeVersion(b *strings.Builder, key string, from, to int64, attrs store.Attrs) {
	enc, _ := encoding.AppendAttrs(nil, attrs)
	fmt.Fprintf(b, "%s [%d, %d) %x\n", key, from, to, enc)
}

// Derived is the reference model's derivation of a changes table from events
// (model.Derive: the rules applied from scratch to the whole event set),
// rendered like StoredVersions.
func Derived(tbl *store.Table, events []txn.Event) string {
	ref := model.ChangesTableOf(tbl.TableDef)
	me := make([]model.Event, len(events))
	for i, e := range events {
		me[i] = model.Event{Key: e.Key[0].(string), At: e.At, Seq: e.Seq, Delete: e.Op == txn.OpDelete, Attrs: model.Attrs(e.Attrs)}
	}
	var b strings.Builder
	for _, v := range ref.Derive(me) {
		writeVersion(&b, v.Key, v.From, v.To, store.Attrs(v.Attrs))
	}
	return b.String()
}
