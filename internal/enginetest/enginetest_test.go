package enginetest_test

import (
	"testing"

	"github.com/bitempo/bitempo/internal/enginetest"
)

// TestPebble runs the suite on in-memory Pebble stores (the etcd module runs
// it on a 3-member etcd cluster).
func TestPebble(t *testing.T) {
	enginetest.Run(t, enginetest.Memory, enginetest.Config{ModelLogs: 4, ModelTxns: 40, CDCRuns: 6})
}
