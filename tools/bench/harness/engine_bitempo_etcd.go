package main

import (
	"context"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"time"

	"github.com/bitempo/bitempo/etcd"
	"github.com/bitempo/bitempo/etcd/etcdtest"
	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// bitempoEtcdEngine runs bitempo's workloads on a 3-member etcd cluster that
// it starts inside the process on loopback, members syncing their logs as in
// production. The cluster's transaction limits are raised so that one
// ingest batch (sc.batch changes) is one commit, as on Pebble. Opt-in
// (--engines bitempo-etcd): it is meant for workloads 1, 3, 5 and 6 at small
// scale, and 3, 5 and 6 at medium, where its base table is loaded in bulk
// (loadDim) rather than ingested.
type bitempoEtcdEngine struct {
	*bitempoEngine
	cluster *etcdtest.Cluster
	// bulkVersions is how many versions one commit of loadDim writes at most
	// (whole keys: a key with more is a commit of its own).
	bulkVersions int
}

const (
	etcdBenchTxnOps   = 1 << 20
	etcdBenchReqBytes = 64 << 20
	// etcdBenchTickMs and etcdBenchElectionMs are the members' heartbeat and
	// election timeout: ten times the test clusters', so that a member fails a
	// proposal only after 15 s (5 s plus two election timeouts) and a loaded
	// machine's stalls neither time commits out nor start elections.
	etcdBenchTickMs     = 500
	etcdBenchElectionMs = 5000
	// etcdBenchWarnAfter is how slow a request must be before the members
	// render it as text for a warning: an hour, never, where etcd's 100 ms
	// made them render most of the base table's commits (a tenth of a medium
	// run's CPU time).
	etcdBenchWarnAfter = time.Hour
	// etcdBenchRequestTimeout bounds each request of the client, beyond the
	// members' own 15 s.
	etcdBenchRequestTimeout = time.Minute
	// etcdBenchLockTTL is the write lock's lease in seconds, long enough that a
	// stalled machine does not lose it between renewals.
	etcdBenchLockTTL = 60
	// etcdBulkVersions is bulkVersions: a commit of 5,000 versions is about
	// 20,000 etcd operations and 3 MB, within the raised limits.
	etcdBulkVersions = 5_000
)

func openBitempoEtcd(dir string) (engine, error) {
	c, err := etcdtest.Start(filepath.Join(dir, "etcd"), 3, etcdtest.Options{
		Fsync: true, MaxTxnOps: etcdBenchTxnOps, MaxRequestBytes: etcdBenchReqBytes,
		TickMs: etcdBenchTickMs, ElectionMs: etcdBenchElectionMs, WarnAfter: etcdBenchWarnAfter,
	})
	if err != nil {
		return nil, err
	}
	db, err := etcd.Open(context.Background(), etcd.Config{
		Endpoints: c.Endpoints(), Prefix: "/bench", PageSize: 1024,
		MaxTxnOps: etcdBenchTxnOps, MaxRequestBytes: etcdBenchReqBytes,
		RequestTimeout: etcdBenchRequestTimeout, LockTTL: etcdBenchLockTTL,
	}, store.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		c.Close()
		return nil, err
	}
	return &bitempoEtcdEngine{bitempoEngine: &bitempoEngine{db: db}, cluster: c, bulkVersions: etcdBulkVersions}, nil
}

// loadDim writes the finished table (dimBulkLoader) with a Put of each
// version, keys in order, in commits of up to bulkVersions versions: each
// key is read once (empty) and written once, where the ingest reads and
// rewrites a key at every change. The table holds the same versions as after
// the ingest, without the ingest's retired ones.
func (e *bitempoEtcdEngine) loadDim(final map[string][]version) error {
	keys := slices.Sorted(maps.Keys(final))
	for lo := 0; lo < len(keys); {
		hi, n := lo, 0
		for hi < len(keys) && (hi == lo || n+len(final[keys[hi]]) <= e.bulkVersions) {
			n += len(final[keys[hi]])
			hi++
		}
		_, err := txn.Update(e.db, func(tx *txn.Tx) error {
			for _, k := range keys[lo:hi] {
				for _, v := range final[k] {
					if err := tx.Put(dimTable, store.Key{k}, storeAttrs(v.attrs), v.from, v.to); err != nil {
						return err
					}
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		lo = hi
	}
	return nil
}

func (e *bitempoEtcdEngine) close() error {
	err := e.bitempoEngine.close()
	e.cluster.Close()
	return err
}

func bitempoEtcdVersion() string {
	return "this tree on etcd v3.7 (3 in-process members on loopback, fsync on, 1024-key pages, 5 s election timeout)"
}
