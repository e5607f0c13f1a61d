package fuzz_test

import (
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	bpebble "github.com/bitempo/bitempo/engine/pebble"
	"github.com/bitempo/bitempo/internal/storetest"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/bitempo/bitempo/fuzz/model/oplog"
	"github.com/bitempo/bitempo/internal/testlong"
	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
)

var metaSeed = flag.Uint64("meta.seed", 0, "seed of TestMetamorphic's operation log (0: time-based)")

// metaConfig is one way of running the store: where it lives, whether commits
// sync, how small Pebble's memtable and levels are, and how often the store is
// closed and reopened.
type metaConfig struct {
	name        string
	onDisk      bool
	noSync      bool
	tiny        bool // 16 KiB memtables and KiB-sized levels: constant flushes and compactions
	reopenEvery int  // close and reopen after every n transactions (0: never)
}

var metaConfigs = []metaConfig{
	{name: "memory"},
	{name: "memory, tiny memtable and levels", tiny: true},
	{name: "memory, nosync, reopen every 3", noSync: true, reopenEvery: 3},
	{name: "disk, sync", onDisk: true},
	{name: "disk, nosync, tiny, reopen every transaction", onDisk: true, noSync: true, tiny: true, reopenEvery: 1},
}

// TestMetamorphic runs one random operation log under every configuration of
// metaConfigs and requires identical read results: after every transaction,
// each key's audit trail, Get at every valid instant of interest at the latest
// or an earlier transaction time, and a table snapshot; at the end, the
// versions of every key alive at every transaction time. Each run is also
// compared with the reference model as it goes (oplog.Runner.Apply). The log
// has 100 transactions with BITEMPO_LONG=1, 60 in the quick run, 20 with
// -short.
func TestMetamorphic(t *testing.T) {
	seed := *metaSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	n := testlong.Size(100, 60)
	if testing.Short() {
		n = 20
	}
	t.Logf("seed %d (rerun with -meta.seed=%d)", seed, seed)
	l := oplog.Random(rand.New(rand.NewPCG(seed, 3)), n, false)
	var want []string
	for i, cfg := range metaConfigs {
		got, flushes, compactions := metaRun(t, cfg, l, seed)
		// A -short log may be too small to fill even a tiny memtable.
		if cfg.tiny && !testing.Short() && (flushes == 0 || compactions == 0) {
			t.Errorf("%s: %d flushes and %d compactions; the configuration forces neither", cfg.name, flushes, compactions)
		}
		t.Logf("%s: %d lines of reads, %d flushes, %d compactions", cfg.name, len(got), flushes, compactions)
		if i == 0 {
			want = got
			continue
		}
		for j := range max(len(got), len(want)) {
			var g, w string
			if j < len(got) {
				g = got[j]
			}
			if j < len(want) {
				w = want[j]
			}
			if g != w {
				t.Fatalf("configuration %q reads differently from %q at line %d:\n got %s\nwant %s\nlog:\n%s",
					cfg.name, metaConfigs[0].name, j, g, w, l)
			}
		}
	}
}

// metaRun runs the log under one configuration and returns its read transcript
// and how many flushes and compactions Pebble did.
func metaRun(t *testing.T, cfg metaConfig, l oplog.Log, seed uint64) (transcript []string, flushes, compactions int64) {
	r := oplog.NewRunner(l.Tables, l.Keys, seed)
	var nFlush, nCompact atomic.Int64
	opts := store.Options{NoSync: cfg.noSync, Clock: r.Clock, Logger: slog.New(slog.DiscardHandler)}
	var popts bpebble.Options
	dir := "meta"
	if cfg.onDisk {
		dir = t.TempDir()
	} else {
		popts.FS = vfs.NewMem()
	}
	if cfg.tiny {
		popts.MemTableSize = 16 << 10
	}
	popts.Tune = func(o *pebble.Options) {
		o.EventListener = &pebble.EventListener{
			FlushEnd:      func(pebble.FlushInfo) { nFlush.Add(1) },
			CompactionEnd: func(pebble.CompactionInfo) { nCompact.Add(1) },
		}
		if cfg.tiny {
			o.L0CompactionThreshold = 1
			o.L0CompactionFileThreshold = 1
			o.LBaseMaxBytes = 8 << 10
			for i := range o.TargetFileSizes {
				o.TargetFileSizes[i] = 4 << 10
			}
		}
	}
	db, err := storetest.Open(dir, popts, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	if err := r.Attach(db, true); err != nil {
		t.Fatal(err)
	}
	for i, txn := range l.Txns {
		if err := r.Apply(i, txn); err != nil {
			t.Fatalf("%s: %v\nlog:\n%s", cfg.name, err, l)
		}
		transcript = append(transcript, metaReads(t, db, l, r.Txs(), i)...)
		if cfg.reopenEvery > 0 && (i+1)%cfg.reopenEvery == 0 {
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			reopen := opts
			reopen.MustExist = true
			if db, err = storetest.Open(dir, popts, reopen); err != nil {
				t.Fatalf("%s: reopen after transaction %d: %v", cfg.name, i, err)
			}
			if err := r.Attach(db, false); err != nil {
				t.Fatal(err)
			}
		}
	}
	transcript = append(transcript, metaFinalReads(t, db, l, r.Txs())...)
	return transcript, nFlush.Load(), nCompact.Load()
}

// metaReads reads the store after transaction i: every key's audit trail, Get
// at every valid instant from -1 to MaxValid+1 (at the latest transaction time,
// and every fourth one at an earlier transaction time), and each table's
// snapshot at one valid time.
func metaReads(t *testing.T, db *store.DB, l oplog.Log, txs []int64, i int) []string {
	var out []string
	past := query.Latest
	if len(txs) > 0 {
		past = txs[(i*7)%len(txs)] - int64(i%2)
	}
	for _, spec := range l.Tables {
		for _, k := range l.Keys {
			key := store.Key{k}
			for v, err := range query.Audit(db, spec.Name, key, query.AuditOptions{}) {
				out = append(out, fmt.Sprintf("%d audit %s %s: %s %v", i, spec.Name, k, metaVersion(v), err))
			}
			for valid := int64(-1); valid <= oplog.MaxValid+1; valid++ {
				tx := query.Latest
				if valid%4 == 0 {
					tx = past
				}
				v, err := query.Get(db, spec.Name, key, query.AsOf{Valid: valid, Tx: tx}, query.GetOptions{})
				out = append(out, fmt.Sprintf("%d get %s %s valid %d tx %d: %s %v", i, spec.Name, k, valid, tx, metaVersion(v), err))
			}
		}
		for v, err := range query.Snapshot(db, spec.Name, query.AsOf{Valid: int64(i % (oplog.MaxValid + 1))}, query.KeyRange{}, query.SnapshotOptions{}) {
			out = append(out, fmt.Sprintf("%d snapshot %s: %s %v", i, spec.Name, metaVersion(v), err))
		}
	}
	return out
}

// metaFinalReads lists the versions of every key alive at every commit.
func metaFinalReads(t *testing.T, db *store.DB, l oplog.Log, txs []int64) []string {
	s, err := db.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var out []string
	for _, spec := range l.Tables {
		tbl, err := s.Table(spec.Name)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range l.Keys {
			tuple, err := tbl.AppendKey(nil, store.Key{k})
			if err != nil {
				t.Fatal(err)
			}
			for _, tx := range txs {
				vs, err := s.KeyVersions(tbl, tuple, tx)
				parts := make([]string, len(vs))
				for j, v := range vs {
					parts[j] = metaVersion(v)
				}
				out = append(out, fmt.Sprintf("final %s %s tx %d: %s %v", spec.Name, k, tx, strings.Join(parts, "; "), err))
			}
		}
	}
	return out
}

func metaVersion(v store.Version) string {
	if v.Key == nil {
		return "-"
	}
	return v.String()
}
