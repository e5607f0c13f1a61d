package txn_test

import (
	"testing"

	"github.com/bitempo/bitempo/internal/enginetest"
)

// TestPeriods runs the scenario files in testdata/periods. Each file is a story
// told with these commands (valid times are plain integers, "-inf"/"+inf" allowed;
// transaction times come from a clock stuck at 0, so commits get tx 1, 2, 3, ...):
//
//	create table=T key=col:type[,col:type] [track=a,b] [except=a,b] [compare=a:round2|trim|fold] [mixed]
//	put table=T key=K from=F to=T         attributes on the following lines, name=value
//	delete table=T key=K from=F to=T
//	upsert table=T key=K at=A             attributes on the following lines
//	deleteat table=T key=K at=A
//	txn [fail]                            one operation per line (same syntax), one transaction
//	get table=T key=K valid=V [tx=N]      the version in effect, or the miss reason
//	versions table=T key=K [tx=N]         the versions alive at tx (default latest)
//	audit table=T key=K                   every record of the key, in transaction order
//
// After every write the store is verified; a violated invariant fails the test.
func TestPeriods(t *testing.T) {
	enginetest.WalkScenarios(t, "testdata/periods", enginetest.Memory, enginetest.Periods)
}
