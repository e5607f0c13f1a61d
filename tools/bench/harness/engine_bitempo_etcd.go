package main

import (
	"context"
	"log/slog"
	"path/filepath"

	"github.com/bitempo/bitempo/etcd"
	"github.com/bitempo/bitempo/etcd/etcdtest"
	"github.com/bitempo/bitempo/store"
)

// bitempoEtcdEngine runs bitempo's workloads on a 3-member etcd cluster that
// it starts inside the process on loopback, members syncing their logs as in
// production. The cluster's transaction limits are raised so that one
// ingest batch (sc.batch changes) is one commit, as on Pebble. Opt-in
// (--engines bitempo-etcd): it is meant for workloads 1, 3, 5 and 6 at small
// scale.
type bitempoEtcdEngine struct {
	*bitempoEngine
	cluster *etcdtest.Cluster
}

const (
	etcdBenchTxnOps   = 1 << 20
	etcdBenchReqBytes = 64 << 20
)

func openBitempoEtcd(dir string) (engine, error) {
	c, err := etcdtest.Start(filepath.Join(dir, "etcd"), 3, etcdtest.Options{Fsync: true, MaxTxnOps: etcdBenchTxnOps, MaxRequestBytes: etcdBenchReqBytes})
	if err != nil {
		return nil, err
	}
	db, err := etcd.Open(context.Background(), etcd.Config{
		Endpoints: c.Endpoints(), Prefix: "/bench", PageSize: 1024,
		MaxTxnOps: etcdBenchTxnOps, MaxRequestBytes: etcdBenchReqBytes,
	}, store.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		c.Close()
		return nil, err
	}
	return &bitempoEtcdEngine{bitempoEngine: &bitempoEngine{db: db}, cluster: c}, nil
}

func (e *bitempoEtcdEngine) close() error {
	err := e.bitempoEngine.close()
	e.cluster.Close()
	return err
}

func bitempoEtcdVersion() string {
	return "this tree on etcd v3.7 (3 in-process members on loopback, fsync on, 1024-key pages)"
}
