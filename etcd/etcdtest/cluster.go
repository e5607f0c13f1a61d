// Package etcdtest starts etcd clusters inside the test process (etcd's embed
// package) on loopback ports, for the tests, the examples and the benchmark of
// the etcd engine. Members can be stopped and restarted to inject faults.
package etcdtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// Options shape a cluster.
type Options struct {
	// MaxTxnOps and MaxRequestBytes are the members' --max-txn-ops and
	// --max-request-bytes (0: etcd's defaults, 128 and 1.5 MiB).
	MaxTxnOps       uint
	MaxRequestBytes uint
	// Fsync makes the members sync their logs, as in production; tests leave
	// it off for speed (every member stop here is a clean one).
	Fsync bool
	// TickMs and ElectionMs are the members' --heartbeat-interval and
	// --election-timeout (0: 50 and 500, so that fault tests elect a new
	// leader quickly). A member fails a proposal it has not applied within
	// 5 s plus two election timeouts ("etcdserver: request timed out").
	TickMs, ElectionMs uint
	// WarnAfter is the members' --warning-apply-duration and
	// --warning-unary-request-duration (0: etcd's 100 and 300 ms). The
	// members log nowhere, yet etcd renders every request slower than these as
	// text before it logs it: a cost in proportion to the request's size.
	WarnAfter time.Duration
}

// Cluster is a running in-process cluster.
type Cluster struct {
	dir     string
	opts    Options
	initial string
	mu      sync.Mutex
	members []*Member
}

// Member is one member of a Cluster.
type Member struct {
	Name      string
	ClientURL url.URL
	PeerURL   url.URL
	etcd      *embed.Etcd // nil while stopped
}

// startAttempts is how many times Start picks fresh ports for a cluster whose
// member found its port taken.
const startAttempts = 3

// Start starts an n-member cluster with its data under dir and waits until it
// has a leader. A port is chosen free and bound a moment later, by etcd: in
// between, another process or an outgoing connection's source port can take
// it. A cluster a member of which could not bind its port is closed (its data
// removed) and started again on fresh ports, up to startAttempts times.
func Start(dir string, n int, opts Options) (*Cluster, error) {
	var err error
	for range startAttempts {
		var c *Cluster
		if c, err = startOnce(dir, n, opts); err == nil || !portTaken(err) {
			return c, err
		}
	}
	return nil, err
}

// portTaken reports whether err is a failure to bind a port in use. etcd
// does not always wrap the listener's error, so its text is matched too.
func portTaken(err error) bool {
	return errors.Is(err, syscall.EADDRINUSE) || strings.Contains(err.Error(), "address already in use")
}

func startOnce(dir string, n int, opts Options) (*Cluster, error) {
	c := &Cluster{dir: dir, opts: opts}
	var initial []string
	for i := range n {
		cu, err := freeURL()
		if err != nil {
			return nil, err
		}
		pu, err := freeURL()
		if err != nil {
			return nil, err
		}
		m := &Member{Name: fmt.Sprintf("m%d", i), ClientURL: cu, PeerURL: pu}
		c.members = append(c.members, m)
		initial = append(initial, m.Name+"="+pu.String())
	}
	c.initial = strings.Join(initial, ",")
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs[i] = c.start(i, embed.ClusterStateFlagNew) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// freeURL returns a loopback URL on a port that was free a moment ago.
func freeURL() (url.URL, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return url.URL{}, err
	}
	defer l.Close()
	return url.URL{Scheme: "http", Host: l.Addr().String()}, nil
}

func (c *Cluster) start(i int, state string) error {
	m := c.members[i]
	cfg := embed.NewConfig()
	cfg.Name = m.Name
	cfg.Dir = filepath.Join(c.dir, m.Name)
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{m.ClientURL}, []url.URL{m.ClientURL}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{m.PeerURL}, []url.URL{m.PeerURL}
	cfg.InitialCluster = c.initial
	cfg.InitialClusterToken = "bitempo-test"
	cfg.ClusterState = state
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	cfg.TickMs, cfg.ElectionMs = 50, 500
	if c.opts.TickMs != 0 {
		cfg.TickMs = c.opts.TickMs
	}
	if c.opts.ElectionMs != 0 {
		cfg.ElectionMs = c.opts.ElectionMs
	}
	if c.opts.WarnAfter != 0 {
		cfg.WarningApplyDuration, cfg.WarningUnaryRequestDuration = c.opts.WarnAfter, c.opts.WarnAfter
	}
	cfg.UnsafeNoFsync = !c.opts.Fsync
	if c.opts.MaxTxnOps != 0 {
		cfg.MaxTxnOps = c.opts.MaxTxnOps
	}
	if c.opts.MaxRequestBytes != 0 {
		cfg.MaxRequestBytes = c.opts.MaxRequestBytes
	}
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return fmt.Errorf("start etcd member %s: %w", m.Name, err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return fmt.Errorf("etcd member %s: %w", m.Name, err)
	case <-time.After(60 * time.Second):
		e.Close()
		return fmt.Errorf("etcd member %s: not ready after 60s", m.Name)
	}
	c.mu.Lock()
	m.etcd = e
	c.mu.Unlock()
	return nil
}

// Endpoints returns every member's client URL.
func (c *Cluster) Endpoints() []string {
	out := make([]string, len(c.members))
	for i, m := range c.members {
		out[i] = m.ClientURL.String()
	}
	return out
}

// Hosts returns every member's client host:port, joined by commas (the
// tool's etcd:// URL form).
func (c *Cluster) Hosts() string {
	out := make([]string, len(c.members))
	for i, m := range c.members {
		out[i] = m.ClientURL.Host
	}
	return strings.Join(out, ",")
}

// Stop stops member i (cleanly: its data stays).
func (c *Cluster) Stop(i int) {
	c.mu.Lock()
	e := c.members[i].etcd
	c.members[i].etcd = nil
	c.mu.Unlock()
	if e != nil {
		e.Close()
	}
}

// Restart starts the stopped member i again on its data. With a majority of
// the cluster stopped, it returns once the member is up, before it has a
// leader; restart enough members concurrently (RestartAll).
func (c *Cluster) Restart(i int) error {
	return c.start(i, embed.ClusterStateFlagExisting)
}

// RestartAll restarts the given stopped members concurrently.
func (c *Cluster) RestartAll(ids ...int) error {
	errs := make([]error, len(ids))
	var wg sync.WaitGroup
	for j, i := range ids {
		wg.Go(func() { errs[j] = c.Restart(i) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Close stops every member and removes the cluster's data.
func (c *Cluster) Close() {
	for i := range c.members {
		c.Stop(i)
	}
	_ = os.RemoveAll(c.dir)
}

// Leader returns the index of the member that leads the cluster, or -1 if no
// running member knows of a leader.
func (c *Cluster) Leader() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range c.members {
		if m.etcd == nil {
			continue
		}
		lead := m.etcd.Server.Leader()
		for j, o := range c.members {
			if o.etcd != nil && o.etcd.Server.MemberID() == lead {
				return j
			}
		}
	}
	return -1
}

// MoveLeader transfers the cluster's leadership to member to (Raft's leader
// transfer, as etcdctl move-leader does) and returns once the transfer is done.
func (c *Cluster) MoveLeader(to int) error {
	lead := c.Leader()
	if lead < 0 {
		return errors.New("etcdtest: move leader: no leader")
	}
	if lead == to {
		return nil
	}
	c.mu.Lock()
	from, target := c.members[lead].etcd, c.members[to].etcd
	c.mu.Unlock()
	if from == nil || target == nil {
		return fmt.Errorf("etcdtest: move leader from m%d to m%d: a member is stopped", lead, to)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := from.Server.MoveLeader(ctx, uint64(from.Server.MemberID()), uint64(target.Server.MemberID())); err != nil {
		return fmt.Errorf("etcdtest: move leader from m%d to m%d: %w", lead, to, err)
	}
	return nil
}
