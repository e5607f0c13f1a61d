package txn_test

import (
	"flag"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/bitempo/bitempo/fuzz/model/oplog"
	"github.com/bitempo/bitempo/internal/testlong"
)

var (
	modelSeed = flag.Uint64("model.seed", 0, "seed of TestModel's operation logs (0: time-based)")
	modelTxns = flag.Int("model.txns", 0, "transactions per TestModel log (0: the default)")
	modelEdge = flag.Bool("model.edge", false, "mix change-detection edge values (decimal ties, 2^53+1, İ) into TestModel's logs")
)

// TestModel applies thousands of random operations, grouped in random
// transactions (some of which fail by returning an error or panicking), to the
// store and to the reference model, and compares them after every transaction:
// the operations' results and read-your-writes views, the commits, each touched
// key's audit trail, versions alive at sampled transaction times, Get at every
// boundary instant at the latest and at sampled past transaction times, a table
// snapshot and a history window; Verify must be clean after each. On failure it
// prints the seed and the shortest failing log it can find. It runs 8 logs of
// 200 transactions with BITEMPO_LONG=1, 3 of 100 otherwise.
//
// -model.edge adds values on which change detection commonly goes wrong
// (oplog's edge pools); see the model's package doc, rule 5.
func TestModel(t *testing.T) {
	seed := *modelSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	logs, txns := testlong.Size(8, 3), testlong.Size(200, 100)
	if testing.Short() {
		logs, txns = 3, 100
	}
	if *modelTxns > 0 {
		txns = *modelTxns
	}
	t.Logf("seed %d (rerun with -model.seed=%d)", seed, seed)
	for i := range logs {
		logSeed := seed + uint64(i)
		l := oplog.Random(rand.New(rand.NewPCG(logSeed, 1)), txns, *modelEdge)
		err := oplog.RunFresh(l, logSeed, false)
		if err == nil {
			continue
		}
		t.Logf("log %d (seed %d, %d transactions, %d operations) failed: %v", i, logSeed, len(l.Txns), l.Ops(), err)
		// A shorter log draws other samples, so a candidate counts as failing
		// if either the sampled checks (as above) or the full ones fail.
		fails := func(c oplog.Log) error {
			if err := oplog.RunFresh(c, logSeed, false); err != nil {
				return err
			}
			return oplog.RunFresh(c, logSeed, true)
		}
		short := oplog.Shrink(l, fails, 30*time.Second)
		t.Fatalf("shortest failing log found (%d transactions, %d operations):\n%s\nfails with: %v",
			len(short.Txns), short.Ops(), short, fails(short))
	}
}
