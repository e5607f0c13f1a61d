package fuzz_test

import (
	"bufio"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bitempo/bitempo/internal/testlong"
	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// Environment of the crash test's child process.
const (
	crashDirEnv    = "BITEMPO_CRASH_DIR"    // the store the child writes; set only in the child
	crashStartEnv  = "BITEMPO_CRASH_START"  // the index of the child's first transaction
	crashCyclesEnv = "BITEMPO_CRASH_CYCLES" // how many times the parent kills a child (default 10; 2 without BITEMPO_LONG=1)
)

// crashShared are the keys every crash-test transaction upserts, so that each
// commit also retires and asserts records of existing keys.
var crashShared = []string{"shared-0", "shared-1", "shared-2"}

// crashKeys returns the keys transaction i creates: txn-<i>-<j>, 3 to 6 of them.
func crashKeys(i int) []string {
	keys := make([]string, 3+i%4)
	for j := range keys {
		keys[j] = fmt.Sprintf("txn-%06d-%d", i, j)
	}
	return keys
}

// crashBatch is the id of the CDC batch transaction i applies to the changes
// table "cdc".
func crashBatch(i int) string { return fmt.Sprintf("batch-%06d", i) }

// crashEvents are the events of batch i: an upsert at valid time i of every
// shared key and of the key the batch owns, cdc-<i>.
func crashEvents(i int) []txn.Event {
	events := []txn.Event{{Key: store.Key{fmt.Sprintf("cdc-%06d", i)}, At: int64(i), Op: txn.OpUpsert, Attrs: store.Attrs{"txn": i}}}
	for _, k := range crashShared {
		events = append(events, txn.Event{Key: store.Key{k}, At: int64(i), Op: txn.OpUpsert, Attrs: store.Attrs{"txn": i}})
	}
	return events
}

// crashTxn is transaction i: it creates crashKeys(i) over all valid time, and
// moves every shared key to a new version effective at valid time i, all with
// attribute txn = i and some padding so that commits take a while to write;
// and it applies CDC batch i (crashEvents) to the changes table "cdc".
func crashTxn(i int) func(tx *txn.Tx) error {
	pad := strings.Repeat("x", 2048)
	return func(tx *txn.Tx) error {
		for _, k := range crashKeys(i) {
			if err := tx.Put("crash", store.Key{k}, store.Attrs{"txn": i, "pad": pad}, store.NegInfinity, store.Infinity); err != nil {
				return err
			}
		}
		for _, k := range crashShared {
			if _, err := tx.Upsert("crash", store.Key{k}, store.Attrs{"txn": i}, int64(i)); err != nil {
				return err
			}
		}
		res, err := tx.Apply("cdc", crashBatch(i), crashEvents(i))
		if err == nil && res.Replayed {
			err = fmt.Errorf("batch %d was applied already", i)
		}
		return err
	}
}

// TestCrashChild is the child process of TestCrashRecovery: it writes synced
// transactions from BITEMPO_CRASH_START on, printing "ack <i> <tx>" after each
// commit returns, until it is killed.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(crashDirEnv)
	if dir == "" {
		t.Skip("the child process of TestCrashRecovery")
	}
	start, err := strconv.Atoi(os.Getenv(crashStartEnv))
	if err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(dir, store.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	for _, def := range []store.TableDef{
		{Name: "crash", Key: []store.KeyColumn{{Name: "id", Type: store.String}}},
		{Name: "cdc", Key: []store.KeyColumn{{Name: "id", Type: store.String}}, Kind: store.Changes},
	} {
		if _, err := db.Table(def.Name); err != nil {
			if _, err := db.CreateTable(def); err != nil {
				t.Fatal(err)
			}
		}
	}
	fmt.Println("ready")
	for i := start; ; i++ {
		c, err := txn.Update(db, crashTxn(i))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Printf("ack %d %d\n", i, c.Tx)
	}
}

// TestCrashRecovery starts a child process (this test binary running
// TestCrashChild) that commits synced transactions to an on-disk store and
// acknowledges each one, kills it with SIGKILL at a random moment, reopens the
// store and checks it: every acknowledged transaction is there with the
// transaction time it was acknowledged with; the transactions present are
// exactly 0..n for some n (a prefix: none lost in the middle), each of them
// whole (all its keys, and its version of every shared key) and nothing of the
// others; Verify is clean. Each transaction also applies a CDC batch with its
// own batch id to a changes table: the changes table holds exactly the batches
// of the transactions present, derived whole, and re-applying a batch is
// idempotent exactly for those (Replayed, at the transaction time it was
// acknowledged with). BITEMPO_CRASH_CYCLES sets the number of kills: by
// default 10 with BITEMPO_LONG=1, and 2 in the quick run.
func TestCrashRecovery(t *testing.T) {
	if os.Getenv(crashDirEnv) != "" {
		t.Skip("in the child process")
	}
	cycles := testlong.Size(10, 2)
	if s := os.Getenv(crashCyclesEnv); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("%s=%q: want a positive number", crashCyclesEnv, s)
		}
		cycles = n
	}
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 5))
	t.Logf("seed %d, %d cycles", seed, cycles)
	dir := t.TempDir()
	acked := map[int]int64{}
	next := 0
	for cycle := range cycles {
		delay := time.Duration(rng.IntN(60)) * time.Millisecond
		n := crashChild(t, dir, next, delay, acked)
		present := crashCheck(t, dir, acked)
		t.Logf("cycle %d: killed %v after the child was ready, %d acknowledged in this cycle, %d transactions in the store", cycle, delay, n, present)
		next = present
	}
}

// crashChild runs one child from transaction start, kills it delay after it is
// ready, and records its acknowledgements. It returns how many it acknowledged.
func crashChild(t *testing.T, dir string, start int, delay time.Duration, acked map[int]int64) int {
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashDirEnv+"="+dir, crashStartEnv+"="+strconv.Itoa(start))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(out)
	n := 0
	var killer *time.Timer
	for lines.Scan() {
		line := lines.Text()
		if line == "ready" {
			killer = time.AfterFunc(delay, func() { _ = cmd.Process.Kill() })
			continue
		}
		var i int
		var tx int64
		if _, err := fmt.Sscanf(line, "ack %d %d", &i, &tx); err == nil {
			acked[i] = tx
			n++
		}
	}
	err = cmd.Wait()
	if killer == nil {
		t.Fatalf("the child exited before it was ready: %v\n%s", err, stderr.String())
	}
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != -1 { // -1: ended by a signal
		t.Fatalf("the child was not killed: %v\n%s", err, stderr.String())
	}
	return n
}

// crashCheck reopens the store after a kill, checks it against the
// acknowledgements and returns how many transactions it holds.
func crashCheck(t *testing.T, dir string, acked map[int]int64) int {
	db, err := store.Open(dir, store.Options{MustExist: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("reopen after the kill: %v", err)
	}
	defer db.Close()
	rep, err := store.Verify(db)
	if err != nil || !rep.OK() {
		t.Fatalf("verify after the kill: %v %v", rep, err)
	}
	if _, err := db.Table("cdc"); err != nil {
		if len(acked) > 0 {
			t.Fatalf("the tables are gone: %v", err)
		}
		return 0
	}
	// Which transactions left keys, and with which transaction time.
	keys := map[int][]string{}
	txOf := map[int]int64{}
	for v, err := range query.Snapshot(db, "crash", query.AsOf{Valid: 0}, query.KeyRange{}, query.SnapshotOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		name := v.Key[0].(string)
		parts := strings.Split(name, "-")
		if len(parts) != 3 || parts[0] != "txn" {
			continue
		}
		i, err := strconv.Atoi(parts[1])
		if err != nil {
			t.Fatalf("key %q", name)
		}
		if got, ok := v.Attrs["txn"].(int64); !ok || got != int64(i) {
			t.Fatalf("%s holds txn %v", name, v.Attrs["txn"])
		}
		keys[i] = append(keys[i], name)
		txOf[i] = v.TxFrom
	}
	n := len(keys)
	for i := range n {
		if got, want := strings.Join(keys[i], " "), strings.Join(crashKeys(i), " "); got != want {
			t.Fatalf("transaction %d of %d is not whole: keys %q, want %q", i, n, got, want)
		}
	}
	for i, tx := range acked {
		if i >= n {
			t.Fatalf("acknowledged transaction %d (tx %d) is missing; the store holds %d", i, tx, n)
		}
		if txOf[i] != tx {
			t.Fatalf("transaction %d was acknowledged at tx %d, its records say %d", i, tx, txOf[i])
		}
	}
	for _, table := range []string{"crash", "cdc"} {
		for _, k := range crashShared {
			var got []string
			for v, err := range query.History(db, table, store.Key{k}, store.NegInfinity, store.Infinity, query.HistoryOptions{}) {
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, fmt.Sprintf("[%d,%s) txn %v tx %d", v.ValidFrom, tick(v.ValidTo), v.Attrs["txn"], v.TxFrom))
			}
			// Transaction i asserted [i, +inf); transaction i+1 closed it at i+1,
			// asserting [i, i+1) anew.
			var want []string
			for i := range n {
				to, tx := strconv.Itoa(i+1), txOf[min(i+1, n-1)]
				if i == n-1 {
					to = "+inf"
				}
				want = append(want, fmt.Sprintf("[%d,%s) txn %d tx %d", i, to, i, tx))
			}
			if strings.Join(got, "; ") != strings.Join(want, "; ") {
				t.Fatalf("%s: shared key %s after %d transactions:\n got %v\nwant %v", table, k, n, got, want)
			}
		}
	}
	crashCheckBatches(t, db, n, txOf)
	return n
}

// crashCheckBatches checks the changes table after a kill: batch i's own key
// exists exactly for the transactions present, and re-applying batches (the
// last one present, the first one missing) is idempotent exactly for those
// applied: Replayed with the transaction time the batch was committed in.
func crashCheckBatches(t *testing.T, db *store.DB, n int, txOf map[int]int64) {
	t.Helper()
	for i := range n + 1 {
		_, err := query.Get(db, "cdc", store.Key{fmt.Sprintf("cdc-%06d", i)}, query.AsOf{Valid: int64(i)}, query.GetOptions{})
		if present := err == nil; present != (i < n) {
			t.Fatalf("batch %d's key: %v, want present %v", i, err, i < n)
		}
	}
	if n == 0 {
		return
	}
	errProbe := fmt.Errorf("crash test: roll back the probe")
	for _, i := range []int{0, n - 1, n} {
		var res txn.ApplyResult
		_, err := txn.Update(db, func(tx *txn.Tx) error {
			var err error
			if res, err = tx.Apply("cdc", crashBatch(i), crashEvents(i)); err != nil {
				return err
			}
			return errProbe
		})
		if err != errProbe {
			t.Fatalf("re-apply of batch %d: %v", i, err)
		}
		if res.Replayed != (i < n) || (i < n && res.Tx != txOf[i]) {
			t.Fatalf("re-apply of batch %d of %d: replayed %v at tx %d, want replayed %v at tx %d", i, n, res.Replayed, res.Tx, i < n, txOf[i])
		}
	}
}

func tick(t int64) string {
	if t == store.Infinity {
		return "+inf"
	}
	return strconv.FormatInt(t, 10)
}
