// Package etcd runs a bitempo store on an etcd v3 cluster: the same store, with
// every txn and query function unchanged, replicated by Raft instead of kept in
// one process's Pebble directory.
//
// Open connects to the cluster and opens (or creates) the store under a key
// prefix, so several stores share one cluster. The store's keys are the keys of
// the Pebble layout behind that prefix; the engine (Engine) maps the store's
// engine boundary (engine.Engine) onto etcd:
//
//   - A view is an etcd revision: the first read of a view learns the cluster's
//     current revision (one linearizable read), and every read through the view
//     reads at it, so a view is exactly as consistent as a Pebble snapshot.
//     Those later reads are serializable (one member answers from the state it
//     has applied, without a round to the leader): a revision's state never
//     changes, and a member that has not yet applied the view's revision
//     refuses it, whereupon the read is repeated linearizably
//     (docs/design/etcd-serializable-reads.md).
//     etcd keeps old revisions until the cluster compacts them: a view older
//     than the compaction fails with an error wrapping
//     store.ErrSnapshotTooOld, never with other data.
//   - Iterators read a range at the view's revision a page at a time (Config
//     PageSize keys per range request), forwards and backwards, and seek inside
//     the page they hold without a request. etcd counts every key from a range
//     request's start to its end, whatever its limit, and reads a descending
//     range whole before cutting it to the limit; so a SeekPrefixGE reads only
//     its key's engine prefix (layout.Split), and a backward step reads within
//     the engine prefix of the key it steps back from before it reads further.
//     A Next that leaves a page (not one of a SeekPrefixGE), or the second of
//     two forward seeks in a row that leave one, streams the rest of the range
//     in one RangeStream request (etcd v3.7; unary pages on an older cluster),
//     whose chunks are read without that count and become the iterator's next
//     pages; forward seeks then take the chunks up to their key (stream.go).
//   - Point reads (View.Get: the store's meta keys, which every snapshot reads)
//     are cached per generation: the data under the prefix is the same at every
//     revision of one generation, so a view of the generation the cache holds
//     answers from it. A point read of the latest version is then two requests:
//     the view's linearizable read of the generation key and the seek to the
//     record.
//   - A commit is one etcd transaction. Each process writes under a write lock
//     held through an etcd lease (the TTL of its concurrency.Session: the lock is lost when the
//     process stops renewing it), and the transaction compares both that the
//     lock is still this process's and that the store's generation key is as
//     this process last saw it: a process that lost its lock, or that missed
//     another process's commit, cannot commit (store.ErrLocked). The generation
//     key is written by every commit, so every cache of every process (the last
//     transaction time, the catalog, surrogate keys, attribute names) is
//     reloaded when another process has committed (engine.SharedEngine).
//   - etcd bounds one transaction (--max-txn-ops, default 128 operations, and
//     --max-request-bytes, default 1.5 MiB). A commit over Config.MaxTxnOps or
//     Config.MaxRequestBytes fails before anything is sent, with an error
//     wrapping store.ErrCommitTooLarge that names both numbers. Set them to the
//     cluster's flags: a store transaction of one upsert is 4 to 8 writes.
//   - A commit, or the wait for the write lock, that gets no answer within
//     Config.RequestTimeout (a cluster without quorum) fails with an error
//     wrapping store.ErrUnavailable.
//
// When to choose etcd over Pebble: when the history must survive the loss of a
// machine or a disk, and several processes on several machines write one store
// in turn. etcd holds its whole key space in memory-mapped B-trees and
// replicates every write through Raft and an fsync on a majority, so it suits
// stores up to a few gigabytes (etcd's default quota is 2 GiB, at most 8 GiB
// recommended) written at a few hundred to a few thousand transactions a
// second; a large or write-heavy store belongs on Pebble. Three members tolerate
// one failure, five tolerate two; more members make writes slower, not safer
// in practice.
//
// Pebble-only operations are refused with an error wrapping
// store.ErrUnsupported: Backup (take an etcd snapshot: etcdctl snapshot save),
// transactions spilled to disk (the tool's one-transaction loads of large
// files: load in batches), RecoverWAL. DB.Compact does nothing: etcd's history
// compaction and defragmentation are the cluster operator's. Erasure deletes the
// erased keys, but their bytes stay in etcd's history until the cluster
// compacts past the erasing revision, and in its backend file until it is
// defragmented; DB.Purge has nothing to do.
package etcd

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/bitempo/bitempo/store"
)

// Config says where a store is and how to talk to its cluster.
type Config struct {
	// Endpoints are the cluster's client URLs (host:port or http://host:port).
	// Ignored when Client is set.
	Endpoints []string
	// Prefix is the key prefix the store lives under, such as "/bitempo/prices".
	// It must not be empty, and no store's prefix may be a prefix of another's.
	Prefix string
	// Client, if set, is used instead of dialing Endpoints; Close leaves it open.
	Client *clientv3.Client
	// DialTimeout bounds the first connection. Default 5s.
	DialTimeout time.Duration
	// RequestTimeout bounds each request to the cluster: a commit, a read, the
	// wait for the write lock. Past it the call fails with an error wrapping
	// store.ErrUnavailable. Default 10s.
	RequestTimeout time.Duration
	// LockTTL is the lease of the write lock, in seconds: a writer that stops
	// renewing it (a crash, a partition) loses the lock after it. Default 10.
	LockTTL int
	// PageSize is how many keys one range request of an iterator reads.
	// Default 256.
	PageSize int
	// MaxTxnOps is the cluster's --max-txn-ops. Default 128, etcd's default.
	MaxTxnOps int
	// MaxRequestBytes is the cluster's --max-request-bytes. Default 1.5 MiB,
	// etcd's default.
	MaxRequestBytes int
}

func (c Config) withDefaults() Config {
	if c.DialTimeout == 0 {
		c.DialTimeout = 5 * time.Second
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = 10 * time.Second
	}
	if c.LockTTL == 0 {
		c.LockTTL = 10
	}
	if c.PageSize == 0 {
		c.PageSize = 256
	}
	if c.MaxTxnOps == 0 {
		c.MaxTxnOps = 128
	}
	if c.MaxRequestBytes == 0 {
		c.MaxRequestBytes = 1572864
	}
	return c
}

// ErrConfig is returned by Open and NewEngine for a Config that cannot work.
var ErrConfig = errors.New("bitempo/etcd: invalid configuration")

// Open opens the store under cfg.Prefix on the cluster, creating it unless
// opts.ReadOnly or opts.MustExist. Of opts, the Pebble-only fields are ignored.
// Closing the DB closes the engine and, unless cfg.Client was given, the client.
func Open(ctx context.Context, cfg Config, opts store.Options) (*store.DB, error) {
	e, err := NewEngine(ctx, cfg)
	if err != nil {
		return nil, err
	}
	name := "etcd://" + strings.Join(cfg.Endpoints, ",") + cfg.Prefix
	if len(cfg.Endpoints) == 0 {
		name = "etcd:" + cfg.Prefix
	}
	return store.OpenEngine(e, name, opts)
}

// NewEngine connects to the cluster (unless cfg.Client is set) and returns the
// engine of the store under cfg.Prefix, for store.OpenEngine.
func NewEngine(ctx context.Context, cfg Config) (*Engine, error) {
	cfg = cfg.withDefaults()
	if cfg.Prefix == "" {
		return nil, fmt.Errorf("%w: empty Prefix", ErrConfig)
	}
	if cfg.PageSize < 2 || cfg.MaxTxnOps < 2 || cfg.MaxRequestBytes < 1024 || cfg.LockTTL < 1 {
		return nil, fmt.Errorf("%w: PageSize %d, MaxTxnOps %d, MaxRequestBytes %d, LockTTL %d",
			ErrConfig, cfg.PageSize, cfg.MaxTxnOps, cfg.MaxRequestBytes, cfg.LockTTL)
	}
	cli, own := cfg.Client, false
	if cli == nil {
		if len(cfg.Endpoints) == 0 {
			return nil, fmt.Errorf("%w: no Endpoints and no Client", ErrConfig)
		}
		var err error
		cli, err = clientv3.New(clientv3.Config{
			Endpoints:   cfg.Endpoints,
			DialTimeout: cfg.DialTimeout,
			// gRPC's client refuses to send more than 2 MiB by default: a
			// commit as large as the cluster takes must get through.
			MaxCallSendMsgSize: cfg.MaxRequestBytes + txnOverhead,
			Context:            context.WithoutCancel(ctx),
			Logger:             zap.NewNop(),
		})
		if err != nil {
			return nil, fmt.Errorf("%w: connect to %s: %v", store.ErrUnavailable, strings.Join(cfg.Endpoints, ","), err)
		}
		own = true
	}
	e := newEngine(cli, own, cfg)
	// One read proves the cluster answers; a store on a cluster without quorum
	// fails here rather than at its first read.
	rctx, cancel := context.WithTimeout(ctx, cfg.RequestTimeout)
	defer cancel()
	if _, err := cli.Get(rctx, e.genKey); err != nil {
		_ = e.Close()
		return nil, e.rpcErr("open", err)
	}
	return e, nil
}
