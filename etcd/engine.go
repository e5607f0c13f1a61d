package etcd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.etcd.io/raft/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/bitempo/bitempo/engine"
	"github.com/bitempo/bitempo/store"
)

// Key layout under Config.Prefix: the store's keys follow "/d/" (so a range of
// store keys is a range of etcd keys), the write lock's keys (one per waiting
// process, concurrency.Mutex) follow "/lock/", and "/gen" is the generation key
// every commit writes.
const (
	dataSuffix = "/d/"
	lockSuffix = "/lock/"
	genSuffix  = "/gen"
)

// txnOverhead is what a transaction request adds to its operations' bytes:
// the generation compare and put, the lock compare, and the Raft request's
// header, with room to spare.
const txnOverhead = 512

// Engine is the engine.Engine of a store on etcd. It implements
// engine.SharedEngine, engine.CommitLimiter and engine.LimitSource.
type Engine struct {
	cli     *clientv3.Client
	ownsCli bool
	cfg     Config
	data    string // Prefix + dataSuffix
	dataEnd string // the end of the data range
	genKey  string

	mu      sync.Mutex // guards the fields below
	session *concurrency.Session
	mutex   *concurrency.Mutex // held from LockWrites to unlock
	// gen is the generation this process expects the store at when it
	// commits: read when the lock was taken, then that of its own commits.
	gen int64
	// committed is the generation of this process's last commit.
	committed int64
	// viewGen is the generation of the newest view taken (for a commit made
	// without LockWrites: the store's initialisation).
	viewGen int64
	closed  bool
	// last is the newest view taken, for testHookStaleViews.
	last struct {
		rev, gen int64
		at       time.Time
	}

	// points caches the answers of point reads (view.Get) at generation
	// pointsGen: the store's meta keys, which every snapshot reads. Every
	// commit of every process writes the generation key, so the data under
	// the prefix is the same at every revision of one generation, and a view
	// of that generation may answer from the cache. It holds the newest
	// generation seen, and is emptied when a view of a newer one reads.
	pointsMu  sync.Mutex
	pointsGen int64
	points    map[string]point

	// noStreams is set once the cluster refused a RangeStream as
	// unimplemented (etcd before v3.7): iterators then read unary pages only.
	noStreams atomic.Bool
}

// point is a cached answer of view.Get.
type point struct {
	value []byte
	found bool
}

// Bounds of the point cache: meta keys are few and small.
const (
	maxPoints     = 256
	maxPointBytes = 4096
)

// testHookStaleViews, when positive, breaks View for the test that the
// linearizability check catches a stale read path: outside the write lock a
// view reuses the revision of the last view taken less than that long ago,
// instead of reading the newest one.
var testHookStaleViews time.Duration

// cachedPoint returns the cached answer for key at generation gen.
func (e *Engine) cachedPoint(gen int64, key []byte) (point, bool) {
	e.pointsMu.Lock()
	defer e.pointsMu.Unlock()
	if gen == 0 || gen != e.pointsGen {
		return point{}, false
	}
	p, ok := e.points[string(key)]
	return p, ok
}

// rememberPoint caches the answer for key read at generation gen.
func (e *Engine) rememberPoint(gen int64, key []byte, p point) {
	if gen == 0 || len(p.value) > maxPointBytes {
		return
	}
	e.pointsMu.Lock()
	defer e.pointsMu.Unlock()
	if gen > e.pointsGen {
		e.pointsGen, e.points = gen, make(map[string]point)
	}
	if gen == e.pointsGen && len(e.points) < maxPoints {
		e.points[string(key)] = point{value: bytes.Clone(p.value), found: p.found}
	}
}

func newEngine(cli *clientv3.Client, own bool, cfg Config) *Engine {
	data := cfg.Prefix + dataSuffix
	return &Engine{cli: cli, ownsCli: own, cfg: cfg, data: data,
		dataEnd: clientv3.GetPrefixRangeEnd(data), genKey: cfg.Prefix + genSuffix}
}

// Name implements engine.Engine.
func (e *Engine) Name() string { return "etcd" }

// CommitLimits implements engine.CommitLimiter: the writes and request bytes of
// one commit the cluster accepts, less what the engine adds.
func (e *Engine) CommitLimits() (maxWrites, maxBytes int) {
	return e.cfg.MaxTxnOps - 1, e.cfg.MaxRequestBytes - txnOverhead
}

// SourceOfLimits implements engine.LimitSource: the cluster's flags the
// engine is configured for (Config.MaxTxnOps and MaxRequestBytes).
func (e *Engine) SourceOfLimits() string {
	return fmt.Sprintf("the cluster's --max-txn-ops %d and --max-request-bytes %d, less what a commit adds; raise both flags on the cluster and in Config (or the --db URL) to commit more at once",
		e.cfg.MaxTxnOps, e.cfg.MaxRequestBytes)
}

// Client returns the engine's etcd client.
func (e *Engine) Client() *clientv3.Client { return e.cli }

func (e *Engine) etcdKey(k []byte) string { return e.data + string(k) }

// rangeEnd maps an exclusive upper bound of store keys (nil: none).
func (e *Engine) rangeEnd(upper []byte) string {
	if upper == nil {
		return e.dataEnd
	}
	return e.etcdKey(upper)
}

// rpcErr wraps an error of a request to the cluster in the store's sentinel
// for it.
func (e *Engine) rpcErr(op string, err error) error {
	var sentinel error
	code := status.Code(err)
	switch {
	case code == codes.DeadlineExceeded, code == codes.Unavailable, errors.Is(err, context.DeadlineExceeded), errors.Is(err, rpctypes.ErrNoLeader),
		errors.Is(err, rpctypes.ErrTimeout), errors.Is(err, rpctypes.ErrTimeoutDueToLeaderFail),
		errors.Is(err, rpctypes.ErrTimeoutDueToConnectionLost), errors.Is(err, rpctypes.ErrLeaderChanged),
		errors.Is(err, rpctypes.ErrNotLeader), errors.Is(err, rpctypes.ErrTooManyRequests),
		// A member drops a proposal while the leadership moves or no leader is
		// known, and says so without a gRPC code of its own: nothing was written.
		strings.Contains(err.Error(), raft.ErrProposalDropped.Error()):
		return fmt.Errorf("%w: %s: no answer from the etcd cluster within %s, or one saying it cannot act now (has it lost quorum, or is its leadership moving?): %v",
			store.ErrUnavailable, op, e.cfg.RequestTimeout, err)
	case errors.Is(err, rpctypes.ErrCompacted):
		sentinel = store.ErrSnapshotTooOld
	case errors.Is(err, rpctypes.ErrTooManyOps), errors.Is(err, rpctypes.ErrRequestTooLarge):
		return fmt.Errorf("%w: %s: the cluster refused it (%v); this store is configured for --max-txn-ops %d and --max-request-bytes %d: set Config.MaxTxnOps and MaxRequestBytes to the cluster's flags",
			store.ErrCommitTooLarge, op, err, e.cfg.MaxTxnOps, e.cfg.MaxRequestBytes)
	default:
		sentinel = store.ErrIO
	}
	return fmt.Errorf("%w: etcd %s: %v", sentinel, op, err)
}

func (e *Engine) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), e.cfg.RequestTimeout)
}

// View implements engine.Engine: one linearizable read of the generation key
// fixes the view's revision.
func (e *Engine) View() (engine.View, error) {
	if d := testHookStaleViews; d > 0 {
		e.mu.Lock()
		last, locked := e.last, e.mutex != nil
		e.mu.Unlock()
		if !locked && last.rev != 0 && time.Since(last.at) < d {
			return &view{e: e, rev: last.rev, gen: last.gen}, nil
		}
	}
	ctx, cancel := e.ctx()
	defer cancel()
	resp, err := e.cli.Get(ctx, e.genKey)
	if err != nil {
		return nil, e.rpcErr("read", err)
	}
	var gen int64
	if len(resp.Kvs) > 0 {
		gen = resp.Kvs[0].ModRevision
	}
	e.mu.Lock()
	e.viewGen = gen
	if testHookStaleViews > 0 {
		e.last.rev, e.last.gen, e.last.at = resp.Header.Revision, gen, time.Now()
	}
	e.mu.Unlock()
	return &view{e: e, rev: resp.Header.Revision, gen: gen}, nil
}

// LockWrites implements engine.SharedEngine: it takes the lock (creating the
// lease-holding session on first use, or again after its lease expired) and
// reads the generation the next commit must find.
func (e *Engine) LockWrites(ctx context.Context) (unlock func(), err error) {
	ctx, cancel := context.WithTimeout(ctx, e.cfg.RequestTimeout)
	defer cancel()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, store.ErrClosed
	}
	if e.session != nil {
		select {
		case <-e.session.Done(): // the lease expired or was revoked
			e.session = nil
		default:
		}
	}
	if e.session == nil {
		// The lease is granted here, within ctx's bound; the session only
		// keeps it alive, for as long as the engine is open.
		lease, err := e.cli.Grant(ctx, int64(e.cfg.LockTTL))
		if err != nil {
			return nil, e.rpcErr("write lock (lease)", err)
		}
		s, err := concurrency.NewSession(e.cli, concurrency.WithLease(lease.ID), concurrency.WithTTL(e.cfg.LockTTL), concurrency.WithContext(context.WithoutCancel(ctx)))
		if err != nil {
			return nil, e.rpcErr("write lock (lease)", err)
		}
		e.session = s
	}
	m := concurrency.NewMutex(e.session, e.cfg.Prefix+lockSuffix)
	if err := m.Lock(ctx); err != nil {
		return nil, e.rpcErr("write lock", err)
	}
	resp, err := e.cli.Get(ctx, e.genKey)
	if err != nil {
		uctx, ucancel := e.ctx()
		_ = m.Unlock(uctx)
		ucancel()
		return nil, e.rpcErr("write lock", err)
	}
	e.gen = 0
	if len(resp.Kvs) > 0 {
		e.gen = resp.Kvs[0].ModRevision
	}
	e.mutex = m
	return func() {
		e.mu.Lock()
		defer e.mu.Unlock()
		if e.mutex != m {
			return
		}
		e.mutex = nil
		uctx, ucancel := e.ctx()
		defer ucancel()
		_ = m.Unlock(uctx) // if it fails, the lease ends the lock
	}, nil
}

// CommitGeneration implements engine.SharedEngine.
func (e *Engine) CommitGeneration() int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.committed
}

// Commit implements engine.Engine as one etcd transaction (see the package
// doc). sync is ignored: an etcd commit is durable on a majority once
// acknowledged. A commit made without LockWrites (the store's initialisation
// at Open) takes the lock for itself and expects the generation of the newest
// view, so two processes creating one store cannot both succeed.
func (e *Engine) Commit(writes []engine.Write, sync bool) error {
	ops, err := e.ops(writes)
	if err != nil {
		return err
	}
	e.mu.Lock()
	held := e.mutex != nil
	e.mu.Unlock()
	if !held {
		gen := e.viewGenNow()
		unlock, err := e.LockWrites(context.Background())
		if err != nil {
			return err
		}
		defer unlock()
		e.mu.Lock()
		if e.gen != gen {
			e.mu.Unlock()
			return fmt.Errorf("%w: another process committed to the store at the same time", store.ErrLocked)
		}
		e.mu.Unlock()
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.mutex == nil {
		return fmt.Errorf("%w: commit after the write lock was released", store.ErrLocked)
	}
	ownerCmp := e.mutex.IsOwner() // the lock key still exists with the revision it was created at
	owner := ownerCmp.GetCompare()
	req := &etcdserverpb.TxnRequest{
		Compare: []*etcdserverpb.Compare{
			owner,
			{Key: []byte(e.genKey), Target: etcdserverpb.Compare_MOD, Result: etcdserverpb.Compare_EQUAL,
				TargetUnion: &etcdserverpb.Compare_ModRevision{ModRevision: e.gen}},
		},
		Success: append(ops, &etcdserverpb.RequestOp{Request: &etcdserverpb.RequestOp_RequestPut{
			RequestPut: &etcdserverpb.PutRequest{Key: []byte(e.genKey), Value: []byte(strconv.Itoa(len(writes)))}}}),
		Failure: []*etcdserverpb.RequestOp{{Request: &etcdserverpb.RequestOp_RequestRange{
			RequestRange: &etcdserverpb.RangeRequest{Key: []byte(e.mutex.Key())}}}},
	}
	if n, size := len(req.Success), proto.Size(req)+txnOverhead; n > e.cfg.MaxTxnOps || size > e.cfg.MaxRequestBytes {
		return fmt.Errorf("%w: %d writes in %d etcd operations of %d bytes; the cluster takes at most --max-txn-ops %d operations and --max-request-bytes %d bytes in one transaction: commit it in smaller transactions",
			store.ErrCommitTooLarge, len(writes), n, size, e.cfg.MaxTxnOps, e.cfg.MaxRequestBytes)
	}
	ctx, cancel := e.ctx()
	defer cancel()
	resp, err := etcdserverpb.NewKVClient(e.cli.ActiveConnection()).Txn(ctx, req)
	if err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return e.rpcErr("commit", rpctypes.Error(err))
	}
	if !resp.Succeeded {
		lost := len(resp.Responses) == 0 || len(resp.Responses[0].GetResponseRange().Kvs) == 0
		if lost {
			e.mutex = nil
			return fmt.Errorf("%w: the write lock's lease expired (the process stopped renewing it for %ds); nothing was written", store.ErrLocked, e.cfg.LockTTL)
		}
		return fmt.Errorf("%w: another process committed to the store without this process's write lock; nothing was written", store.ErrLocked)
	}
	e.gen = resp.Header.Revision
	e.committed = resp.Header.Revision
	return nil
}

func (e *Engine) viewGenNow() int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.viewGen
}

// ops maps writes to etcd operations. etcd refuses a transaction that writes a
// key twice, or a key inside a range it deletes, so the writes are reduced to
// their effect first: the last write to a key wins, and a point write before
// a range deletion that covers it is dropped. A point write after a range
// deletion that covers it (which no store operation makes) is refused.
func (e *Engine) ops(writes []engine.Write) ([]*etcdserverpb.RequestOp, error) {
	last := make(map[string]int, len(writes))
	var ranges []engine.Write
	for i, w := range writes {
		if w.RangeEnd != nil {
			ranges = append(ranges, w)
			continue
		}
		for _, r := range ranges {
			if bytes.Compare(w.Key, r.Key) >= 0 && bytes.Compare(w.Key, r.RangeEnd) < 0 {
				return nil, fmt.Errorf("%w: a write to a key inside a range deleted earlier in the same commit", store.ErrInvalidUse)
			}
		}
		last[string(w.Key)] = i
	}
	ops := make([]*etcdserverpb.RequestOp, 0, len(last)+len(ranges))
	for i, w := range writes {
		if w.RangeEnd != nil {
			ops = append(ops, &etcdserverpb.RequestOp{Request: &etcdserverpb.RequestOp_RequestDeleteRange{
				RequestDeleteRange: &etcdserverpb.DeleteRangeRequest{Key: []byte(e.etcdKey(w.Key)), RangeEnd: []byte(e.etcdKey(w.RangeEnd))}}})
			continue
		}
		if last[string(w.Key)] != i || covered(w.Key, ranges) {
			continue
		}
		if w.Delete {
			ops = append(ops, &etcdserverpb.RequestOp{Request: &etcdserverpb.RequestOp_RequestDeleteRange{
				RequestDeleteRange: &etcdserverpb.DeleteRangeRequest{Key: []byte(e.etcdKey(w.Key))}}})
			continue
		}
		ops = append(ops, &etcdserverpb.RequestOp{Request: &etcdserverpb.RequestOp_RequestPut{
			RequestPut: &etcdserverpb.PutRequest{Key: []byte(e.etcdKey(w.Key)), Value: w.Value}}})
	}
	return ops, nil
}

func covered(k []byte, ranges []engine.Write) bool {
	for _, r := range ranges {
		if bytes.Compare(k, r.Key) >= 0 && bytes.Compare(k, r.RangeEnd) < 0 {
			return true
		}
	}
	return false
}

// Close implements engine.Engine: it releases the write lock and its lease,
// and closes the client if the engine dialed it.
func (e *Engine) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil
	}
	e.closed = true
	var errs []error
	if e.session != nil {
		errs = append(errs, e.session.Close())
		e.session = nil
	}
	if e.ownsCli {
		errs = append(errs, e.cli.Close())
	}
	if err := errors.Join(errs...); err != nil {
		return e.rpcErr("close", err)
	}
	return nil
}
