package etcd_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/bitempo/bitempo/etcd"
	"github.com/bitempo/bitempo/internal/enginetest"
	"github.com/bitempo/bitempo/store"
)

var stores atomic.Int64

// openFresh opens a store under a prefix no other store uses.
func openFresh(t *testing.T, opts store.Options) *store.DB {
	prefix := fmt.Sprintf("/suite/%d", stores.Add(1))
	db, err := etcd.Open(context.Background(), etcd.Config{
		Endpoints: testCluster.Endpoints(), Prefix: prefix,
		MaxTxnOps: testMaxTxnOps, MaxRequestBytes: testMaxRequestBytes,
	}, opts)
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// TestSuite runs the semantic suite that Pebble runs (internal/enginetest) on
// the 3-member cluster.
func TestSuite(t *testing.T) {
	cfg := enginetest.Config{ModelLogs: 4, ModelTxns: 40, CDCRuns: 6} // as on Pebble
	if testing.Short() {
		cfg = enginetest.Config{ModelLogs: 1, ModelTxns: 15, CDCRuns: 1}
	}
	enginetest.Run(t, openFresh, cfg)
}
