package etcd_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/bitempo/bitempo/etcd"
	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// rpcLog is what countingClient counts: the requests a client sent to etcd's
// key-value service (method names in order). Requests to the other services
// are not counted: the write lock's session keeps its lease alive from the
// client's own goroutines (a LeaseKeepAlive stream, opened again if it
// breaks), at moments no test chooses.
type rpcLog struct {
	mu      sync.Mutex
	methods []string
}

// kvService is the prefix of the gRPC methods of etcd's key-value service
// (Range, Txn, RangeStream, ...).
const kvService = "/etcdserverpb.KV/"

func (l *rpcLog) add(method string) {
	if !strings.HasPrefix(method, kvService) {
		return
	}
	l.mu.Lock()
	l.methods = append(l.methods, strings.TrimPrefix(method, kvService))
	l.mu.Unlock()
}

// Load returns how many requests were counted so far.
func (l *rpcLog) Load() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return int64(len(l.methods))
}

// since names the requests counted after the first n, for a failure's message.
func (l *rpcLog) since(n int64) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.methods[min(int(n), len(l.methods)):], " ")
}

// countingClient returns a client of testCluster that counts the requests it
// sends to the key-value service: every unary request (Range, Txn) and every
// stream it opens (a RangeStream) is one.
func countingClient(tb testing.TB) (*clientv3.Client, *rpcLog) {
	tb.Helper()
	var log rpcLog
	count := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		log.add(method)
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	countStream := func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		log.add(method)
		return streamer(ctx, desc, cc, method, opts...)
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints: testCluster.Endpoints(), Logger: zap.NewNop(),
		DialOptions: []grpc.DialOption{grpc.WithChainUnaryInterceptor(count), grpc.WithChainStreamInterceptor(countStream)},
	})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = cli.Close() })
	return cli, &log
}

// membersApplied waits until every member of testCluster has applied the
// cluster's newest revision. The reads a test counts are serializable at its
// view's revision; a member that has not applied it yet refuses one, which
// is then repeated linearizably (view.go), one request more, as a loaded
// machine makes likely.
func membersApplied(tb testing.TB) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var rev int64
	for _, ep := range testCluster.Endpoints() {
		cli, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, Logger: zap.NewNop()})
		if err != nil {
			tb.Fatal(err)
		}
		defer func() { _ = cli.Close() }()
		if rev == 0 {
			resp, err := cli.Get(ctx, "/") // linearizable: the newest revision
			if err != nil {
				tb.Fatal(err)
			}
			rev = resp.Header.Revision
		}
		for {
			_, err := cli.Get(ctx, "/", clientv3.WithSerializable(), clientv3.WithRev(rev))
			if err == nil {
				break
			}
			if !errors.Is(err, rpctypes.ErrFutureRev) {
				tb.Fatalf("member %s at revision %d: %v", ep, rev, err)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// tableStore opens a store under the test's name through cli, with table "t"
// (keyDef) created; the test's cleanup closes it.
func tableStore(tb testing.TB, cli *clientv3.Client) *store.DB {
	tb.Helper()
	db, err := etcd.Open(context.Background(), etcd.Config{
		Client: cli, Prefix: "/test/" + tb.Name(),
		MaxTxnOps: testMaxTxnOps, MaxRequestBytes: testMaxRequestBytes,
	}, store.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = db.Close() })
	if _, err := db.CreateTable(keyDef); err != nil {
		tb.Fatal(err)
	}
	return db
}

// pointReadStore opens a store of keys "k0".."k<n-1>" through cli, each with
// two versions.
func pointReadStore(tb testing.TB, cli *clientv3.Client, n int) *store.DB {
	tb.Helper()
	db := tableStore(tb, cli)
	for round := range 2 {
		for lo := 0; lo < n; lo += 200 {
			if _, err := txn.Update(db, func(tx *txn.Tx) error {
				for i := lo; i < min(lo+200, n); i++ {
					if _, err := tx.Upsert("t", store.Key{fmt.Sprint("k", i)}, store.Attrs{"round": int64(round)}, 0); err != nil {
						return err
					}
				}
				return nil
			}); err != nil {
				tb.Fatal(err)
			}
		}
	}
	return db
}

// TestPointReadRoundTrips: a point read of the latest version, once a first
// read has seen the store's generation, is two requests: the view's
// linearizable read of the generation key and the seek to the record. The
// store's meta keys come from the engine's cache of that generation. A commit
// by another process changes the generation, and the next read reloads.
func TestPointReadRoundTrips(t *testing.T) {
	cli, rpcs := countingClient(t)
	db := pointReadStore(t, cli, 50)
	other := openStore(t, "/test/"+t.Name(), store.Options{})
	read := func(key string, want int64) int64 {
		t.Helper()
		before := rpcs.Load()
		v, err := query.Get(db, "t", store.Key{key}, query.AsOf{Valid: 0}, query.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if v.Attrs["round"] != want {
			t.Fatalf("%s: round %v, want %d", key, v.Attrs["round"], want)
		}
		return rpcs.Load() - before
	}
	read("k1", 1) // fills the cache
	for i := range 10 {
		if n := read(fmt.Sprint("k", i), 1); n > 2 {
			t.Fatalf("point read %d: %d requests, want at most 2", i, n)
		}
	}
	c, err := txn.Update(other, func(tx *txn.Tx) error {
		_, err := tx.Upsert("t", store.Key{"k3"}, store.Attrs{"round": int64(7)}, 0)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	read("k3", 7) // a new generation: the caches reload
	s, err := db.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if s.LastTx() != c.Tx {
		t.Fatalf("a snapshot after another process's commit at tx %d: LastTx %d (a stale cached meta key)", c.Tx, s.LastTx())
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if n := read("k3", 7); n > 2 {
		t.Fatalf("point read after the reload: %d requests, want at most 2", n)
	}
}

// snapshotRows reads the snapshot of table "t" at valid time valid, requires
// attribute attr of every row to be want, and returns the number of rows.
func snapshotRows(t *testing.T, s *store.Snapshot, valid int64, attr string, want int64) int {
	t.Helper()
	rows := 0
	for v, err := range query.Snapshot(s, "t", query.AsOf{Valid: valid}, query.KeyRange{}, query.SnapshotOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		if v.Attrs[attr] != want {
			t.Fatalf("%v at valid time %d: %s %v, want %d", v.Key, valid, attr, v.Attrs[attr], want)
		}
		rows++
	}
	return rows
}

// TestScanRoundTrips: a snapshot scan and a resolve of every key read the
// store in a bounded number of requests, not one per key: a seek reads a page
// of 64 keys, and the Next that leaves it streams the rest of the range
// (stream.go). As unary pages growing to Config.PageSize (256 here), 1,000
// keys were 6 requests.
func TestScanRoundTrips(t *testing.T) {
	cli, rpcs := countingClient(t)
	const n = 1000
	db := pointReadStore(t, cli, n)
	membersApplied(t)
	s, err := db.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	const maxRequests = 4 // the first page, the stream, and room for the table's open
	before := rpcs.Load()
	rows := snapshotRows(t, s, 0, "round", 1)
	if got := rpcs.Load() - before; rows != n || got > maxRequests {
		t.Fatalf("snapshot scan of %d keys: %d rows in %d requests (%s), want %d rows in at most %d", n, rows, got, rpcs.since(before), n, maxRequests)
	}
	facts := make([]query.Fact, n)
	for i := range facts {
		facts[i] = query.Fact{Key: store.Key{fmt.Sprint("k", i)}, At: 5}
	}
	before = rpcs.Load()
	res, err := query.Resolve(s, "t", facts, query.ResolveOptions{Attrs: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := rpcs.Load() - before; len(res) != n || got > maxRequests {
		t.Fatalf("resolve of %d facts: %d resolutions in %d requests (%s), want %d in at most %d", n, len(res), got, rpcs.since(before), n, maxRequests)
	}
	for i, r := range res {
		if r.Attrs["round"] != int64(1) {
			t.Fatalf("fact %d (%v): round %v, want 1", i, facts[i].Key, r.Attrs["round"])
		}
	}
}

// TestPastSnapshotRoundTrips: a snapshot at a past valid time seeks from key to
// key through the versions of the current index (each key's newest version
// starts after the valid time); the seeks past a page take the stream's chunks
// rather than a request each: 200 keys of 12 versions each are 5 requests
// (four Range pages and one RangeStream, once every member has applied the
// writes), where unary pages of 64 to 256 keys were 22, and streaming only
// after a Next 51.
func TestPastSnapshotRoundTrips(t *testing.T) {
	cli, rpcs := countingClient(t)
	db := tableStore(t, cli)
	const n, versions = 200, 12
	for v := range versions {
		if _, err := txn.Update(db, func(tx *txn.Tx) error {
			for i := range n {
				if _, err := tx.Upsert("t", store.Key{fmt.Sprintf("k%03d", i)}, store.Attrs{"v": int64(v)}, int64(10*v)); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	membersApplied(t)
	s, err := db.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	before := rpcs.Load()
	rows := snapshotRows(t, s, 15, "v", 1)
	if got := rpcs.Load() - before; rows != n || got > 6 {
		t.Fatalf("snapshot at a past valid time of %d keys: %d rows in %d requests (%s), want %d rows in at most 6", n, rows, got, rpcs.since(before), n)
	}
}

// BenchmarkPointRead is query.Get of the latest version of one of 1,000 keys
// on the 3-member cluster, beside the floor: one linearizable etcd range read
// of one key. It reports requests per read and the ratio to the floor.
func BenchmarkPointRead(b *testing.B) {
	cli, rpcs := countingClient(b)
	const n = 1000
	db := pointReadStore(b, cli, n)
	rng := rand.New(rand.NewPCG(1, 2))
	ctx := context.Background()
	var floor float64
	b.Run("etcd-get", func(b *testing.B) {
		for b.Loop() {
			if _, err := cli.Get(ctx, fmt.Sprint("/test/", b.Name(), "/k", rng.IntN(n))); err != nil {
				b.Fatal(err)
			}
		}
		floor = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	})
	b.Run("bitempo-get", func(b *testing.B) {
		before := rpcs.Load()
		for b.Loop() {
			if _, err := query.Get(db, "t", store.Key{fmt.Sprint("k", rng.IntN(n))}, query.AsOf{Valid: 0}, query.GetOptions{}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(rpcs.Load()-before)/float64(b.N), "requests/op")
		if floor > 0 {
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/floor, "x-floor")
		}
	})
}
