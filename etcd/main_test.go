package etcd_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/bitempo/bitempo/etcd/etcdtest"
)

// testCluster is the 3-member cluster every test of the package shares; each
// test's store lives under its own prefix. Tests that stop members start their
// own.
var testCluster *etcdtest.Cluster

// Limits of testCluster: large enough for the semantic suites' transactions.
const (
	testMaxTxnOps       = 4096
	testMaxRequestBytes = 4 << 20
)

func TestMain(m *testing.M) {
	if os.Getenv("BITEMPO_ETCD_WRITER") != "" || os.Getenv(linClientEnv) != "" {
		os.Exit(m.Run()) // TestKilledWriterChild or TestLinearizableClient, on the parent's cluster
	}
	dir, err := os.MkdirTemp("", "bitempo-etcd-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testCluster, err = etcdtest.Start(dir, 3, etcdtest.Options{MaxTxnOps: testMaxTxnOps, MaxRequestBytes: testMaxRequestBytes})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	testCluster.Close()
	os.Exit(code)
}
