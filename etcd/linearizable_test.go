package etcd_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/bitempo/bitempo/etcd"
	"github.com/bitempo/bitempo/etcd/etcdtest"
	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// The linearizability check: client processes (the test binary run again as
// TestLinearizableClient) put and get keyed registers through bitempo
// transactions and reads on a 3-member cluster while the parent stops and
// restarts members, moves the leader and kills a client mid-commit. Every
// operation's call and return times (absolute wall-clock nanoseconds, kept
// monotonic within a client) and outcome are recorded, and porcupine checks
// each history against the sequential model of the registers.
//
// The model: one register per key, absent at first. put(k, v) is a
// transaction upserting attribute "v" of key k over all valid time; get(k)
// reads k at valid time 0 as of the newest transaction and returns its "v",
// or absent (query.ErrUnknownKey). Every put writes a value of its own, so a
// read names the put it saw. A put that failed or never returned (its client
// killed) has an unknown outcome: it may have taken effect at any time after
// its call, so its return time is infinite. A get that failed says nothing
// and is left out.

// The environment of the check: BITEMPO_ETCD_HISTORIES is the knob; the rest
// pass a client process its part.
const (
	linHistories = "BITEMPO_ETCD_HISTORIES"   // how many histories TestLinearizable checks
	linOutEnv    = "BITEMPO_ETCD_LIN_HISTORY" // where a history that fails is drawn (default: the temporary directory)
	linClientEnv = "BITEMPO_ETCD_LIN"         // the cluster's endpoints, in a client
	linPrefixEnv = "BITEMPO_ETCD_LIN_PREFIX"  // the history's store
	linIDEnv     = "BITEMPO_ETCD_LIN_CLIENT"  // the client's id
	linSeedEnv   = "BITEMPO_ETCD_LIN_SEED"    // the client's random seed
	linStaleEnv  = "BITEMPO_ETCD_LIN_STALE"   // the client's etcd.BreakViews duration
)

// The shape of a history.
const (
	linDefault   = 3                       // histories in a default run (CI)
	linClients   = 3                       // client processes per history
	linKeys      = "abcd"                  // one register per letter
	linTable     = "r"                     // the registers' table
	linPrefixFmt = "/lin/%s/%d/%d"         // a history's store
	linReadyLine = "ready"                 // a client's first line
	linRun       = 2500 * time.Millisecond // how long the clients run, once all are ready
	linFaultGap  = 400 * time.Millisecond  // between the faults of a history
	linKillAfter = 1500 * time.Millisecond // when a client may be killed
	linOpTimeout = 2 * time.Second         // the clients' Config.RequestTimeout
	linMaxWait   = linRun + 30*time.Second // for the clients to start, and to finish
	linCheckTime = 2 * time.Minute         // porcupine's bound per history
	linStaleFor  = 150 * time.Millisecond  // the broken views' reuse
)

// linEvent is one line of a client's record: the call or the return of an
// operation.
type linEvent struct {
	Client int    `json:"c"`
	Op     int    `json:"i"`
	Kind   string `json:"k"` // "call" or "ret"
	Put    bool   `json:"put,omitempty"`
	Key    string `json:"key,omitempty"`
	Value  string `json:"v,omitempty"`
	Found  bool   `json:"found,omitempty"`
	Err    string `json:"err,omitempty"` // a ret's failure: "unavailable", "locked" or the error
	Time   int64  `json:"t"`
}

type linInput struct {
	put        bool
	key, value string
}

type linOutput struct {
	value string
	found bool
}

// registers is the sequential model, partitioned by key: each partition's
// state is its register's value, "" while absent.
var registers = porcupine.Model{
	Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		for _, op := range h {
			k := op.Input.(linInput).key
			byKey[k] = append(byKey[k], op)
		}
		var out [][]porcupine.Operation
		for _, ops := range byKey {
			out = append(out, ops)
		}
		return out
	},
	Init: func() any { return "" },
	Step: func(state, input, output any) (bool, any) {
		in := input.(linInput)
		if in.put {
			return true, in.value
		}
		out := output.(linOutput)
		if !out.found {
			return state.(string) == "", state
		}
		return out.value == state.(string), state
	},
	DescribeOperation: func(input, output any) string {
		in := input.(linInput)
		if in.put {
			return fmt.Sprintf("put(%s, %s)", in.key, in.value)
		}
		out := output.(linOutput)
		if !out.found {
			return fmt.Sprintf("get(%s) -> absent", in.key)
		}
		return fmt.Sprintf("get(%s) -> %s", in.key, out.value)
	},
}

// linHistory is one recorded history and what happened during it.
type linHistory struct {
	ops                     []porcupine.Operation
	puts, unknownPuts, gets int
	failedGets              int
	faults                  []string
	unexpected              []string // errors no fault explains
	killedAtWrite           bool     // a client was killed inside a put
}

// linSchedule is what the parent does to the cluster and the clients during
// a history.
type linSchedule struct {
	cluster *etcdtest.Cluster // nil: no faults
	leader  bool              // stop and restart the leader, rather than a follower
	moveTo  int               // the member to move the leadership to; -1: none
	kill    int               // the client to kill during a put; -1: none
}

// TestLinearizable checks BITEMPO_ETCD_HISTORIES histories (default 3) for
// linearizability. In each, three client processes run for 2.5 s while the
// parent stops a member (the leader in even histories, a follower in odd
// ones) and restarts it, moves the leadership to another member, and kills
// one client (SIGKILL) while it runs a put transaction.
func TestLinearizable(t *testing.T) {
	n := linDefault
	if s := os.Getenv(linHistories); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil || n < 1 {
			t.Fatalf("%s=%q: want a positive count", linHistories, s)
		}
	}
	c := startCluster(t)
	var total, unknown, killedInPut int
	for h := range n {
		sched := linSchedule{cluster: c, leader: h%2 == 0, moveTo: (h + 1) % 3, kill: h % linClients}
		hist := recordHistory(t, c, fmt.Sprint(h), uint64(h), sched, 0)
		for _, u := range hist.unexpected {
			t.Errorf("history %d: %s", h, u)
		}
		if hist.gets == 0 || hist.puts == 0 {
			t.Fatalf("history %d: %d gets and %d puts returned: nothing to check", h, hist.gets, hist.puts)
		}
		if res := checkHistory(t, hist, fmt.Sprint(h), true); res != porcupine.Ok {
			t.Fatalf("history %d: %s (%s)", h, res, strings.Join(hist.faults, ", "))
		}
		total += len(hist.ops)
		unknown += hist.unknownPuts
		if hist.killedAtWrite {
			killedInPut++
		}
		t.Logf("history %d: linearizable: %d operations (%d puts, %d of unknown outcome; %d gets, %d failed and left out); %s",
			h, len(hist.ops), hist.puts, hist.unknownPuts, hist.gets, hist.failedGets, strings.Join(hist.faults, ", "))
	}
	t.Logf("%d histories linearizable, 0 violations: %d operations, %d puts of unknown outcome, a client killed during a put in %d",
		n, total, unknown, killedInPut)
}

// TestLinearizableCatchesStaleViews: with views that reuse a revision read up
// to 150 ms earlier instead of the newest (etcd.BreakViews), a history of the
// same clients, without faults, is not linearizable, and the check says so.
func TestLinearizableCatchesStaleViews(t *testing.T) {
	hist := recordHistory(t, testCluster, "stale", 7, linSchedule{moveTo: -1, kill: -1}, linStaleFor)
	for _, u := range hist.unexpected {
		t.Errorf("%s", u)
	}
	if res := checkHistory(t, hist, "stale", false); res != porcupine.Illegal {
		t.Fatalf("a history read through stale views: %s, want Illegal (%d operations)", res, len(hist.ops))
	}
}

// checkHistory runs porcupine on hist; with show, a history that is not
// linearizable is written out as porcupine's visualization.
func checkHistory(t *testing.T, hist linHistory, name string, show bool) porcupine.CheckResult {
	t.Helper()
	res, info := porcupine.CheckOperationsVerbose(registers, hist.ops, linCheckTime)
	if res == porcupine.Illegal && show {
		dir := os.Getenv(linOutEnv)
		if dir == "" {
			dir = os.TempDir()
		}
		path := filepath.Join(dir, fmt.Sprintf("bitempo-etcd-history-%s.html", name))
		if err := porcupine.VisualizePath(registers, info, path); err == nil {
			t.Logf("history %s is not linearizable; its visualization: %s", name, path)
		}
	}
	return res
}

// recordHistory creates a fresh store, runs the clients on it (with stale,
// their views broken) and the schedule's faults, and returns the history.
func recordHistory(t *testing.T, c *etcdtest.Cluster, name string, seed uint64, sched linSchedule, stale time.Duration) linHistory {
	t.Helper()
	prefix := fmt.Sprintf(linPrefixFmt, t.Name(), seed, stores.Add(1))
	setup := openOn(t, c.Endpoints(), prefix, 10*time.Second)
	if _, err := setup.CreateTable(store.TableDef{Name: linTable, Key: []store.KeyColumn{{Name: "k", Type: store.String}}, Axis: store.AxisInt}); err != nil {
		t.Fatal(err)
	}
	if err := setup.Close(); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, 99))
	var (
		mu     sync.Mutex
		events []linEvent
		bad    []string
	)
	type client struct {
		cmd   *exec.Cmd
		stdin io.WriteCloser
		ready chan struct{}
		done  chan struct{}
	}
	puts := make(chan int, 64) // clients whose put has just been called
	clients := make([]*client, linClients)
	for id := range clients {
		cmd := exec.Command(os.Args[0], "-test.run=^TestLinearizableClient$")
		cmd.Env = append(os.Environ(), linClientEnv+"="+strings.Join(c.Endpoints(), ","), linPrefixEnv+"="+prefix,
			fmt.Sprint(linIDEnv, "=", id), fmt.Sprint(linSeedEnv, "=", seed*100+uint64(id)), fmt.Sprint(linStaleEnv, "=", stale))
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		in, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cl := &client{cmd: cmd, stdin: in, ready: make(chan struct{}), done: make(chan struct{})}
		clients[id] = cl
		go func() {
			defer close(cl.done)
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				line := sc.Bytes()
				if string(line) == linReadyLine {
					close(cl.ready)
					continue
				}
				if len(line) == 0 || line[0] != '{' {
					continue // the test framework's own output
				}
				var ev linEvent
				if err := json.Unmarshal(line, &ev); err != nil {
					mu.Lock()
					bad = append(bad, fmt.Sprintf("client %d: unreadable line %q", id, line))
					mu.Unlock()
					continue
				}
				mu.Lock()
				events = append(events, ev)
				mu.Unlock()
				if ev.Kind == "call" && ev.Put {
					select {
					case puts <- ev.Client:
					default:
					}
				}
			}
		}()
	}
	for id, cl := range clients {
		select {
		case <-cl.ready:
		case <-cl.done:
			t.Fatalf("client %d ended before it was ready", id)
		case <-time.After(linMaxWait):
			t.Fatalf("client %d not ready after %s", id, linMaxWait)
		}
	}
	start := time.Now()
	hist := linHistory{}
	var faultErr error
	faultsDone := make(chan struct{})
	go func() {
		defer close(faultsDone)
		hist.faults, faultErr = runFaults(sched, rng, start)
	}()
	killed := -1
	if sched.kill >= 0 {
		timer := time.NewTimer(linKillAfter)
	wait:
		for {
			select {
			case <-timer.C:
				timer.C = nil
			case id := <-puts:
				if timer.C != nil || id != sched.kill {
					continue
				}
				time.Sleep(time.Duration(rng.IntN(3000)) * time.Microsecond)
				_ = clients[id].cmd.Process.Kill()
				killed = id
				break wait
			case <-time.After(linRun):
				break wait
			}
		}
	}
	time.Sleep(time.Until(start.Add(linRun)))
	for _, cl := range clients {
		_ = cl.stdin.Close() // the clients stop at the end of their input
	}
	for id, cl := range clients {
		select {
		case <-cl.done:
		case <-time.After(linMaxWait):
			_ = cl.cmd.Process.Kill()
			<-cl.done
			bad = append(bad, fmt.Sprintf("client %d did not stop", id))
		}
		err := cl.cmd.Wait()
		if id != killed && err != nil {
			bad = append(bad, fmt.Sprintf("client %d: %v", id, err))
		}
	}
	<-faultsDone
	if faultErr != nil {
		t.Fatal(faultErr)
	}
	if killed >= 0 {
		hist.faults = append(hist.faults, fmt.Sprintf("client %d killed during a put", killed))
	}
	hist.unexpected = bad
	buildOps(&hist, events, killed)
	return hist
}

// runFaults runs the schedule's cluster faults, spaced linFaultGap apart from
// start, and says what it did.
func runFaults(sched linSchedule, rng *rand.Rand, start time.Time) ([]string, error) {
	c := sched.cluster
	if c == nil {
		return nil, nil
	}
	var did []string
	at := func(i int) { time.Sleep(time.Until(start.Add(time.Duration(i) * linFaultGap))) }
	at(1)
	lead := c.Leader()
	if lead < 0 {
		return did, errors.New("no leader")
	}
	victim, role := lead, "the leader"
	if !sched.leader {
		victim, role = (lead+1+rng.IntN(2))%3, "a follower"
	}
	c.Stop(victim)
	did = append(did, fmt.Sprintf("m%d (%s) stopped", victim, role))
	at(2 + rng.IntN(2))
	if err := c.Restart(victim); err != nil {
		return did, err
	}
	did = append(did, fmt.Sprintf("m%d restarted", victim))
	if sched.moveTo >= 0 {
		at(4)
		to := sched.moveTo
		if to == c.Leader() {
			to = (to + 1) % 3
		}
		var err error
		for range 20 { // the restarted member may still be catching up
			if err = c.MoveLeader(to); err == nil {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if err != nil {
			return did, err
		}
		did = append(did, fmt.Sprintf("leader moved to m%d", to))
	}
	return did, nil
}

// buildOps pairs the events into porcupine's operations.
func buildOps(hist *linHistory, events []linEvent, killed int) {
	type opID struct{ client, op int }
	calls := map[opID]linEvent{}
	rets := map[opID]linEvent{}
	for _, ev := range events {
		id := opID{ev.Client, ev.Op}
		if ev.Kind == "call" {
			calls[id] = ev
		} else {
			rets[id] = ev
		}
	}
	for id, call := range calls {
		in := linInput{put: call.Put, key: call.Key, value: call.Value}
		ret, returned := rets[id]
		op := porcupine.Operation{ClientId: call.Client, Input: in, Call: call.Time, Return: ret.Time}
		switch {
		case call.Put && returned && ret.Err == "":
			hist.puts++
		case call.Put:
			hist.puts++
			hist.unknownPuts++
			op.Return = math.MaxInt64
			if !returned && call.Client == killed {
				hist.killedAtWrite = true
			}
		case returned && ret.Err == "":
			hist.gets++
			op.Output = linOutput{value: ret.Value, found: ret.Found}
		default:
			hist.failedGets++ // a failed or unfinished read says nothing
			continue
		}
		if returned && ret.Err != "" && ret.Err != "unavailable" && ret.Err != "locked" {
			hist.unexpected = append(hist.unexpected, fmt.Sprintf("client %d op %d: %s", id.client, id.op, ret.Err))
		}
		hist.ops = append(hist.ops, op)
	}
}

// TestLinearizableClient is one client process of TestLinearizable: it runs
// puts and gets on the registers until its input ends, writing each
// operation's call and return to its output as a JSON line.
func TestLinearizableClient(t *testing.T) {
	eps := os.Getenv(linClientEnv)
	if eps == "" {
		t.Skip("run by TestLinearizable")
	}
	if d, err := time.ParseDuration(os.Getenv(linStaleEnv)); err == nil && d > 0 {
		etcd.BreakViews(d)
	}
	id, _ := strconv.Atoi(os.Getenv(linIDEnv))
	seed, _ := strconv.ParseUint(os.Getenv(linSeedEnv), 10, 64)
	db, err := etcd.Open(context.Background(), etcd.Config{
		Endpoints: strings.Split(eps, ","), Prefix: os.Getenv(linPrefixEnv), LockTTL: 2,
		RequestTimeout: linOpTimeout, MaxTxnOps: testMaxTxnOps, MaxRequestBytes: testMaxRequestBytes,
	}, store.Options{MustExist: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	stopped := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		close(stopped)
	}()
	// Times are wall-clock nanoseconds, shared by every process on the
	// machine, taken once and advanced by the monotonic clock so that they
	// never step back within the client.
	base := time.Now()
	now := func() int64 { return base.UnixNano() + int64(time.Since(base)) }
	emit := func(ev linEvent) {
		b, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stdout.Write(append(b, '\n')); err != nil { // one write: whole lines survive a kill
			t.Fatal(err)
		}
	}
	_, _ = os.Stdout.Write([]byte(linReadyLine + "\n"))
	rng := rand.New(rand.NewPCG(seed, 1))
	for i := 0; ; i++ {
		select {
		case <-stopped:
			return
		default:
		}
		key := string(linKeys[rng.IntN(len(linKeys))])
		call := linEvent{Client: id, Op: i, Kind: "call", Put: rng.IntN(2) == 0, Key: key}
		if call.Put {
			call.Value = fmt.Sprintf("%d.%d", id, i)
		}
		call.Time = now()
		emit(call)
		ret := linEvent{Client: id, Op: i, Kind: "ret"}
		if call.Put {
			_, err = txn.Update(db, func(tx *txn.Tx) error {
				_, err := tx.Upsert(linTable, store.Key{key}, store.Attrs{"v": call.Value}, 0)
				return err
			})
		} else {
			var v store.Version
			v, err = query.Get(db, linTable, store.Key{key}, query.AsOf{Valid: 0}, query.GetOptions{})
			if err == nil {
				ret.Value, ret.Found = v.Attrs["v"].(string), true
			} else if errors.Is(err, query.ErrUnknownKey) {
				err = nil
			}
		}
		ret.Time = now()
		switch {
		case err == nil:
		case errors.Is(err, store.ErrUnavailable):
			ret.Err = "unavailable"
		case errors.Is(err, store.ErrLocked):
			ret.Err = "locked"
		default:
			ret.Err = err.Error()
		}
		emit(ret)
	}
}
