package txn_test

import (
	"testing"

	"github.com/bitempo/bitempo/internal/enginetest"
)

// TestApplyScenarios runs the CDC scenarios in testdata/apply with the driver
// every engine runs them with (internal/enginetest.NewApply). Each file is a
// commented specification of one rule of Apply; run with -rewrite to regenerate
// the expected output after a deliberate change.
//
// Commands:
//
//	table name=T [kind=periods] [key=(id:string,n:int64)] [track=(a,b)] [except=(a)]
//	      [compare=(a:round2,b:trim:fold)] [ignore-nulls] [granularity=day|N] [lateness=N] [axis=date]
//	apply [table=T] batch=B      one event per input line:
//	      KEY @AT[#SEQ|#null] upsert|delete [name=value ...]
//	      prints the result, then the records the commit retired (-) and asserted (+)
//	versions [table=T] [as-of=B] the current versions, or those as of batch B's commit
//	events [table=T] key=K       the key's event log and checkpoint
//	put table=T key=K from=F to=T [name=value ...]    a periods-table write
//
// Values: 5 (int), 1.5 (float), null, true/false, "quoted string", or a bare
// word (string). Times: integers, or dates 2024-03-11 / 2024-03-11T10:00 on a
// table with axis=date. Every apply is followed by store.Verify.
func TestApplyScenarios(t *testing.T) {
	enginetest.WalkScenarioFiles(t, "testdata/apply", enginetest.Memory, enginetest.NewApply)
}
