package etcd_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/bitempo/bitempo/etcd"
	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// TestTransactionPastLimitFailsAtOnce: on a store configured for etcd's
// default --max-txn-ops 128, a transaction flushed key by key fails at the
// first flush whose writes pass the limit, long before its last key, with
// store.ErrCommitTooLarge naming the cluster's flags; no request writes
// anything under the store's prefix, and the store is usable after it.
func TestTransactionPastLimitFailsAtOnce(t *testing.T) {
	prefix := "/test/" + t.Name()
	db, err := etcd.Open(context.Background(), etcd.Config{
		Endpoints: testCluster.Endpoints(), Prefix: prefix, MaxTxnOps: 128,
	}, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.CreateTable(store.TableDef{Name: "t", Key: []store.KeyColumn{{Name: "k", Type: store.String}}, Axis: store.AxisInt}); err != nil {
		t.Fatal(err)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: testCluster.Endpoints()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	// Every commit writes the generation key, in the same etcd transaction
	// as the store's keys.
	revision := func() int64 {
		gen, err := cli.Get(context.Background(), prefix+"/gen")
		if err != nil || len(gen.Kvs) != 1 {
			t.Fatalf("the generation key: %v", err)
		}
		return gen.Kvs[0].ModRevision
	}
	before := revision()
	failedAt := -1
	_, err = txn.Update(db, func(tx *txn.Tx) error {
		for i := range 5000 {
			if _, err := tx.Upsert("t", store.Key{fmt.Sprintf("k%05d", i)}, store.Attrs{"v": int64(i)}, 0); err != nil {
				return err
			}
			if err := tx.Flush(); err != nil {
				failedAt = i
				return err
			}
		}
		return nil
	})
	if !errors.Is(err, store.ErrCommitTooLarge) || !strings.Contains(err.Error(), "--max-txn-ops 128") {
		t.Fatalf("a transaction past the limit: %v", err)
	}
	// Three writes a new key (record, sk index entry, transaction log entry):
	// 3i+2 passes the 127 writes a commit may hold at key 42.
	if failedAt != 42 {
		t.Errorf("failed at key %d, want 42", failedAt)
	}
	if after := revision(); after != before {
		t.Errorf("the store's generation moved from revision %d to %d", before, after)
	}
	if _, err := query.Get(db, "t", store.Key{"k00000"}, query.AsOf{Valid: 0}, query.GetOptions{}); !errors.Is(err, query.ErrUnknownKey) {
		t.Errorf("a key of the refused transaction: %v", err)
	}
	if _, err := txn.Update(db, func(tx *txn.Tx) error {
		_, err := tx.Upsert("t", store.Key{"k00000"}, store.Attrs{"v": int64(1)}, 0)
		return err
	}); err != nil {
		t.Fatalf("a small transaction after the refused one: %v", err)
	}
}
