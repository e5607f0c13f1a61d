package fuzz_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	bpebble "github.com/bitempo/bitempo/engine/pebble"
	"github.com/bitempo/bitempo/fuzz/model"
	"github.com/bitempo/bitempo/fuzz/model/oplog"
	"github.com/bitempo/bitempo/internal/storetest"
	"github.com/bitempo/bitempo/internal/testlong"
	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

var powerSeed = flag.Uint64("power.seed", 0, "seed of TestPowerLoss and TestInjectedIOErrors (0: random)")

// seedOrRandom returns *powerSeed, or a random seed.
func seedOrRandom() uint64 {
	if *powerSeed != 0 {
		return *powerSeed
	}
	return uint64(rand.Int64())
}

// powerCyclesEnv sets how many crash images TestPowerLoss checks (default 300;
// 1,000 with BITEMPO_LONG=1).
const powerCyclesEnv = "BITEMPO_POWER_CYCLES"

// powerTxns is the length of the operation log of one run of TestPowerLoss.
const powerTxns = 40

// powerCycles returns the number of crash images to check.
func powerCycles(t *testing.T) int {
	n := testlong.Size(1000, 300)
	if testing.Short() {
		n = 50
	}
	if s := os.Getenv(powerCyclesEnv); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			t.Fatalf("%s=%q: want a positive number", powerCyclesEnv, s)
		}
		n = v
	}
	return n
}

// crashImage is a crash image of a running store: what a power loss at one
// moment leaves on disk.
type crashImage struct {
	fs *vfs.MemFS
	// acked is the index, in the run's states, of the newest commit
	// acknowledged when the image was taken.
	acked int
	// at says when it was taken, for messages.
	at string
	// watermarkLost: an injected error hit the synced watermark
	// (BITEMPO-WAL-SYNCED), which the store then stops keeping and removes.
	watermarkLost bool
}

// powerStats are the figures a TestPowerLoss run reports.
type powerStats struct {
	images, ops, commits, inFlight int
	// states counts, per image, which state it held relative to the newest
	// acknowledged commit: "acked" or "acked+n".
	states map[string]int
}

// TestPowerLoss runs random operation logs of the reference model's generator
// (puts, deletes, upserts, delete-ats, erasures, failed transactions, vacuums,
// and manual compactions on top) against a store on Pebble's crashable
// in-memory file system, with synced commits, and takes crash images at random
// file-system operations: everything synced, and a random share (0-100%, by
// 4 KiB block and directory entry) of what was not. Each image is opened and
// must be consistent: Verify clean, and its state (every key's audit trail in
// every table, and the last transaction time) equal to the model's after some
// commit at or after the newest one acknowledged when the image was taken:
// no acknowledged commit lost, no transaction present in part.
// BITEMPO_POWER_CYCLES sets the number of images (default 300, 1,000 with
// BITEMPO_LONG=1, 50 with -short).
func TestPowerLoss(t *testing.T) {
	cycles := powerCycles(t)
	seed := seedOrRandom()
	t.Logf("seed %d, %d crash images (rerun with -power.seed=%d)", seed, cycles, seed)
	st := powerStats{states: map[string]int{}}
	for run := 0; st.images < cycles; run++ {
		powerRun(t, seed+uint64(run), cycles-st.images, &st)
	}
	t.Logf("%d crash images checked, %d operations in %d commits; %d images held a commit in flight; states held: %v",
		st.images, st.ops, st.commits, st.inFlight, st.states)
}

// powerRun runs one operation log and checks up to budget crash images of it.
func powerRun(t *testing.T, seed uint64, budget int, st *powerStats) {
	rng := rand.New(rand.NewPCG(seed, 11))
	l := oplog.Random(rng, powerTxns, false)
	r := oplog.NewRunner(l.Tables, l.Keys, seed)
	mem := vfs.NewCrashableMem()

	var states []string // the model's state after each commit
	var acked atomic.Int64
	// Crash images are taken at random file-system operations (errorfs's
	// injector is the hook; it injects nothing here). Roughly every
	// opsPerImage-th operation, up to budget images.
	var mu sync.Mutex
	var images []crashImage
	var cloneRNG = rand.New(rand.NewPCG(seed, 13))
	opsPerImage := 40 + rng.IntN(200)
	var armed atomic.Bool
	hook := errorfs.InjectorFunc(func(op errorfs.Op) error {
		if !armed.Load() || op.Kind.ReadOrWrite() != errorfs.OpIsWrite {
			return nil
		}
		mu.Lock()
		defer mu.Unlock()
		if len(images) >= budget || cloneRNG.IntN(opsPerImage) != 0 {
			return nil
		}
		images = append(images, crashImage{
			fs:    mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: cloneRNG.IntN(101), RNG: cloneRNG}),
			acked: int(acked.Load()),
			at:    fmt.Sprintf("op %d on %s", op.Kind, op.Path),
		})
		return nil
	})
	fs := errorfs.Wrap(mem, hook)
	popts := bpebble.Options{FS: fs, Logger: slog.New(slog.DiscardHandler)}
	if rng.IntN(2) == 0 { // constant flushes and compactions
		popts.MemTableSize = 16 << 10
		popts.Tune = tinyLevels
	}
	db, err := storetest.Open("db", popts, store.Options{Clock: r.Clock, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	if err := r.Attach(db, true); err != nil {
		t.Fatal(err)
	}
	states = append(states, modelState(r.Model, l))
	armed.Store(true)

	checked := 0
	check := func() {
		mu.Lock()
		pending := images[checked:]
		checked = len(images)
		mu.Unlock()
		for _, im := range pending {
			held := checkImage(t, im, states, l, seed)
			st.images++
			st.states[held]++
			if held != "acked" {
				st.inFlight++
			}
		}
	}
	commit := func() {
		if tx := r.Model.LastTx(); modelState(r.Model, l) != states[len(states)-1] || tx == 0 {
			states = append(states, modelState(r.Model, l))
			st.commits++
		}
		acked.Store(int64(len(states) - 1))
	}
	for i, txn := range l.Txns {
		vacuum := txn.Vacuum
		txn.Vacuum = false
		if err := r.Apply(i, txn); err != nil {
			t.Fatalf("seed %d: %v\nlog:\n%s", seed, err, l)
		}
		st.ops += len(txn.Ops)
		commit()
		if vacuum { // a commit of its own: a crash image may hold the state before it
			if err := r.Apply(i, oplog.Txn{End: oplog.Commit, Clock: txn.Clock, Vacuum: true}); err != nil {
				t.Fatalf("seed %d: vacuum: %v\nlog:\n%s", seed, err, l)
			}
			commit()
		}
		if rng.IntN(12) == 0 {
			if err := db.Compact(context.Background()); err != nil {
				t.Fatalf("seed %d: compact: %v", seed, err)
			}
		}
		check()
	}
	armed.Store(false)
	check()
}

// tinyLevels makes Pebble flush and compact constantly.
func tinyLevels(o *pebble.Options) {
	o.L0CompactionThreshold = 1
	o.L0CompactionFileThreshold = 1
	o.LBaseMaxBytes = 8 << 10
	for i := range o.TargetFileSizes {
		o.TargetFileSizes[i] = 4 << 10
	}
}

// checkImage opens a crash image and checks it against the states from the
// newest acknowledged commit on. It returns which state the image held. An
// image whose store had lost its synced watermark may be refused as a damaged
// log (ErrDamagedWAL); it must then open with RecoverWAL, under the same
// checks.
func checkImage(t *testing.T, im crashImage, states []string, l oplog.Log, seed uint64) string {
	t.Helper()
	popts := bpebble.Options{FS: im.fs}
	sopts := store.Options{MustExist: true, Logger: slog.New(slog.DiscardHandler)}
	db, err := storetest.Open("db", popts, sopts)
	if err != nil && im.watermarkLost && errors.Is(err, store.ErrDamagedWAL) {
		// Without the watermark, unreadable bytes in the newest log followed
		// by readable ones are either a power loss's unsynced pages surviving
		// out of order or damage to synced bytes, and Open refuses both
		// (docs/design/wal-synced-watermark.md). Recovery keeps what precedes
		// them, which must hold every acknowledged commit: a crash never
		// damages synced bytes.
		popts.RecoverWAL = true
		db, err = storetest.Open("db", popts, sopts)
	}
	if err != nil {
		t.Fatalf("seed %d: open of a crash image taken at %s (commit %d acknowledged): %v", seed, im.at, im.acked, err)
	}
	defer func() { _ = db.Close() }()
	rep, err := store.Verify(db)
	if err != nil || !rep.OK() {
		t.Fatalf("seed %d: verify of a crash image taken at %s: %v %v", seed, im.at, rep, err)
	}
	got, err := storeState(db, l)
	if err != nil {
		t.Fatalf("seed %d: read of a crash image taken at %s: %v", seed, im.at, err)
	}
	for j := im.acked; j < len(states); j++ {
		if got == states[j] {
			if j == im.acked {
				return "acked"
			}
			return fmt.Sprintf("acked+%d", j-im.acked)
		}
	}
	for j := range im.acked {
		if got == states[j] {
			t.Fatalf("seed %d: a crash image taken at %s holds the state after commit %d; commit %d was acknowledged\nlog:\n%s",
				seed, im.at, j, im.acked, l)
		}
	}
	t.Fatalf("seed %d: a crash image taken at %s (commit %d acknowledged) holds no state the model went through:\n%s\nwant (acknowledged):\n%s\nlog:\n%s",
		seed, im.at, im.acked, got, states[im.acked], l)
	return ""
}

// modelState renders the model's tables: every record of every key, and the
// last transaction time.
func modelState(m *model.Model, l oplog.Log) string {
	var b strings.Builder
	fmt.Fprintf(&b, "last tx %d\n", m.LastTx())
	for _, spec := range l.Tables {
		for _, k := range l.Keys {
			rs, _ := m.Records(spec.Name, k)
			for _, r := range rs {
				fmt.Fprintf(&b, "%s %s\n", spec.Name, recordLine(r))
			}
		}
	}
	return b.String()
}

// storeState renders a store's tables as modelState renders the model's.
func storeState(db *store.DB, l oplog.Log) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "last tx %d\n", db.LastTx())
	for _, spec := range l.Tables {
		for _, k := range l.Keys {
			for v, err := range query.Audit(db, spec.Name, store.Key{k}, query.AuditOptions{}) {
				if err != nil {
					return "", err
				}
				fmt.Fprintf(&b, "%s %s\n", spec.Name, recordLine(model.Record{
					Key: k, ValidFrom: v.ValidFrom, ValidTo: v.ValidTo, TxFrom: v.TxFrom, TxTo: v.TxTo,
					SK: v.SK, Attrs: model.Attrs(v.Attrs), Inferred: v.Inferred,
				}))
			}
		}
	}
	return b.String(), nil
}

// recordLine renders a record with its transaction times; attribute values
// print with their Go types, so that numbers of different kinds differ.
func recordLine(r model.Record) string { return r.String() }

// powerErrorsEnv sets how many runs TestInjectedIOErrors makes (default 40;
// 400 with BITEMPO_LONG=1).
const powerErrorsEnv = "BITEMPO_IOERR_RUNS"

// storeSentinels are the errors a failed file-system operation may surface as.
var storeSentinels = []error{store.ErrIO, store.ErrFailed, store.ErrCorrupt}

// TestInjectedIOErrors runs random operation logs on a store whose file system
// fails reads and writes at random (errorfs, with a probability drawn per
// run), until the first error a call returns. Every such error must wrap one
// of the store's sentinels (ErrIO, ErrFailed, ErrCorrupt). The store is then
// closed and opened again without injection, on an image of the file system
// as a crash at that moment leaves it (everything synced, a random share of
// the rest): it must verify clean and hold the model's state after a commit at
// or after the newest acknowledged one (the failed commit present whole, or
// absent). BITEMPO_IOERR_RUNS sets the number of runs.
//
// An injected error on the synced watermark makes the store drop it, and a
// crash image of its newest log may then keep unsynced pages out of order:
// Open refuses that as damage, which it cannot tell apart without the
// watermark, and the image must open with RecoverWAL instead, holding every
// acknowledged commit (docs/design/wal-synced-watermark.md). With
// BITEMPO_IOERR_RUNS=1 and -power.seed=6455797632881865437 about one try in
// four takes that path (the order of the store's goroutines varies).
//
// Reads of table files' contents fail too. A failed table read fails the
// store (ErrFailed, engine/pebble's fence.go): Pebble drops the error of a
// compaction's first read of its inputs' range keys and then installs the
// compaction with no output, which before the fence lost every key of its
// inputs in about one run in 300 (docs/design/failed-table-reads.md).
func TestInjectedIOErrors(t *testing.T) {
	runs := testlong.Size(400, 40)
	if testing.Short() {
		runs = 10
	}
	if s := os.Getenv(powerErrorsEnv); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			t.Fatalf("%s=%q: want a positive number", powerErrorsEnv, s)
		}
		runs = v
	}
	seed := seedOrRandom()
	t.Logf("seed %d, %d runs (rerun with -power.seed=%d)", seed, runs, seed)
	classes := map[string]int{}
	for run := range runs {
		classes[ioErrorRun(t, seed+uint64(run))]++
	}
	t.Logf("runs by the first error surfaced: %v", classes)
}

// ioErrorRun makes one run of TestInjectedIOErrors and returns the class of the
// first error surfaced ("none" if the log ran to its end).
func ioErrorRun(t *testing.T, seed uint64) string {
	rng := rand.New(rand.NewPCG(seed, 17))
	l := oplog.Random(rng, powerTxns, false)
	m := model.New()
	for _, spec := range l.Tables {
		if err := m.CreateTable(spec.ModelDef()); err != nil {
			t.Fatal(err)
		}
	}
	mem := vfs.NewCrashableMem()
	var on atomic.Bool
	var injMu sync.Mutex
	injRNG := rand.New(rand.NewPCG(seed, 19))
	var injected []string // the failed operations (errorfs.OpKind numbers), for messages
	var watermarkHit bool // an injected error hit the synced watermark
	p := []float64{0.001, 0.005, 0.02}[rng.IntN(3)]
	kinds := rng.IntN(3) // 0: reads, 1: writes, 2: both
	inj := errorfs.InjectorFunc(func(op errorfs.Op) error {
		if !on.Load() {
			return nil
		}
		rw := op.Kind.ReadOrWrite()
		if (kinds == 0 && rw != errorfs.OpIsRead) || (kinds == 1 && rw != errorfs.OpIsWrite) {
			return nil
		}
		injMu.Lock()
		defer injMu.Unlock()
		if injRNG.Float64() < p {
			injected = append(injected, fmt.Sprintf("op %d on %s", op.Kind, op.Path))
			watermarkHit = watermarkHit || mem.PathBase(op.Path) == watermarkName
			return fmt.Errorf("op %d on %s: %w", op.Kind, op.Path, errorfs.ErrInjected)
		}
		return nil
	})
	var clock int64
	popts := bpebble.Options{FS: errorfs.Wrap(mem, inj), Logger: slog.New(slog.DiscardHandler), StallTimeout: 2e9}
	if rng.IntN(2) == 0 {
		popts.MemTableSize = 16 << 10
		popts.Tune = tinyLevels
	}
	db, err := storetest.Open("db", popts, store.Options{Clock: func() int64 { return clock }, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	for _, spec := range l.Tables {
		if _, err := db.CreateTable(spec.StoreDef()); err != nil {
			t.Fatal(err)
		}
	}
	states := []string{modelState(m, l)}
	acked := 0
	on.Store(true)
	var failed error
	for _, tx := range l.Txns {
		clock = tx.Clock
		if failed = ioErrorTxn(db, m, l, tx, &states, &acked); failed == nil && rng.IntN(12) == 0 {
			failed = db.Compact(context.Background())
		}
		if failed != nil {
			break
		}
	}
	on.Store(false)
	class := "none"
	if failed != nil {
		class = "untyped"
		for _, s := range storeSentinels {
			if errors.Is(failed, s) {
				class = s.Error()
				break
			}
		}
		if class == "untyped" {
			t.Fatalf("seed %d: an injected file-system error surfaced untyped: %v", seed, failed)
		}
	}
	_ = db.Close()
	injMu.Lock()
	at := fmt.Sprintf("the first error surfaced (%v), after injected errors %v", failed, injected)
	watermarkLost := watermarkHit
	injMu.Unlock()
	im := crashImage{fs: mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: rng.IntN(101), RNG: rng}), acked: acked, at: at, watermarkLost: watermarkLost}
	checkImage(t, im, states, l, seed)
	return class
}

// watermarkName is the file of the store's synced watermark (engine/pebble).
const watermarkName = "BITEMPO-WAL-SYNCED"

// errRollback ends a transaction of a log that does not commit.
var errRollback = errors.New("power-loss test: roll back")

// ioErrorTxn runs one transaction of a log, and its vacuum, on the store and
// the model, appending the model's state after each commit to states and
// setting acked to the newest acknowledged one. A commit (or vacuum) that
// fails may still have landed: its state is appended, and acked not moved.
// It returns the first error of a store call that the operation's arguments
// do not explain.
func ioErrorTxn(db *store.DB, m *model.Model, l oplog.Log, t oplog.Txn, states *[]string, acked *int) error {
	mt := m.Begin()
	var opErr error
	opsDone := false
	_, err := txn.Update(db, func(tx *txn.Tx) error {
		for _, op := range t.Ops {
			if opErr = applyOp(tx, mt, op); opErr != nil {
				return opErr
			}
		}
		if t.End != oplog.Commit {
			return errRollback
		}
		opsDone = true
		return nil
	})
	switch {
	case errors.Is(err, errRollback):
		return nil
	case err != nil && !opsDone:
		return err
	}
	before := m.LastTx()
	if _, merr := mt.Commit(max(t.Clock, before+1)); merr != nil {
		return fmt.Errorf("model commit: %w", merr)
	}
	if m.LastTx() != before {
		*states = append(*states, modelState(m, l))
	}
	if err != nil {
		return err
	}
	*acked = len(*states) - 1
	if !t.Vacuum {
		return nil
	}
	before = m.LastTx()
	_, err = db.Vacuum(context.Background())
	m.Vacuum(t.Clock)
	if m.LastTx() != before {
		*states = append(*states, modelState(m, l))
	}
	if err == nil {
		*acked = len(*states) - 1
	}
	return err
}

// applyOp runs one operation of a log on the store's transaction and the
// model's. Errors the operation's arguments explain (an invalid period or
// attribute, an erasure of an unknown key) are the semantics the other
// randomized tests check; only a failure of the store is returned.
func applyOp(tx *txn.Tx, mt *model.Txn, op oplog.Op) error {
	key := store.Key{op.Key}
	var err error
	switch op.Kind {
	case oplog.Put:
		err = tx.Put(op.Table, key, op.Attrs, op.From, op.To)
		_ = mt.Put(op.Table, op.Key, op.Attrs, op.From, op.To)
	case oplog.Delete:
		err = tx.Delete(op.Table, key, op.From, op.To)
		_ = mt.Delete(op.Table, op.Key, op.From, op.To)
	case oplog.Upsert:
		_, err = tx.Upsert(op.Table, key, op.Attrs, op.From)
		_, _ = mt.Upsert(op.Table, op.Key, op.Attrs, op.From)
	case oplog.DeleteAt:
		_, err = tx.DeleteAt(op.Table, key, op.From)
		_, _ = mt.DeleteAt(op.Table, op.Key, op.From)
	case oplog.Erase:
		err = tx.Erase(op.Table, key)
		_ = mt.Erase(op.Table, op.Key)
	}
	for _, s := range storeSentinels {
		if errors.Is(err, s) {
			return err
		}
	}
	if err != nil && !errors.Is(err, store.ErrInvalidPeriod) && !errors.Is(err, txn.ErrInvalidAttr) &&
		!errors.Is(err, txn.ErrErased) && !errors.Is(err, store.ErrUnknownKey) {
		return fmt.Errorf("%s: unexpected error: %w", op, err)
	}
	return nil
}
