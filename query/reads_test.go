package query_test

import (
	"testing"

	"github.com/bitempo/bitempo/internal/enginetest"
)

// The other tests of this package render records and verify stores the way
// the read scenarios do.
var (
	fmtRecord = enginetest.FmtRecord
	verify    = enginetest.VerifyStore
)

// TestReads runs the scenario files in testdata/reads, one store per file, with
// the driver every engine runs them with (internal/enginetest.Reads). Valid
// times are integers ("-inf", "+inf" allowed); the clock is stuck at 0, so the
// commits get transaction times 1, 2, 3, ... Keys are comma-separated components
// typed by the table's schema. Commands:
//
//	create table=T key=col:type[,col:type]
//	put table=T key=K from=F to=T           attributes on the following lines, name=value
//	delete table=T key=K from=F to=T
//	upsert table=T key=K at=A               attributes on the following lines
//	deleteat table=T key=K at=A
//	txn                                     one operation per line: put table=T key=K from=F to=T a=1
//	snapshot table=T valid=V [tx=N] [prefix=K] [start=K] [end=K] [project=A,B]
//	history table=T (key=K | [prefix=K] [start=K] [end=K]) [from=F] [to=T] [tx=N] [clip] [limit=N] [project=A,B]
//	pages table=T ... limit=N [commit-between]   HistoryPage until done, one block per page
//	get table=T key=K valid=V [tx=N] [project=A,B]
//	audit table=T key=K [project=A,B]
//	changes table=T [since=N] [until=N] [limit=N] [project=A,B]  ChangesPage until done
//	bysk table=T sk=N [tx=N] [project=A,B]
//	gaps table=T [tx=N] [starts-after=N] [prefix=K] [start=K] [end=K]
//	resolve table=T [miss=error|skip|null|default|inferred] [default=SK] [attrs] [project=A,B]
//	                                        facts on the following lines: key at [tx]
//
// project=A,B reads only those attributes (the reads' Project options).
//
// After every write the store is verified.
func TestReads(t *testing.T) {
	enginetest.WalkScenarios(t, "testdata/reads", enginetest.Memory, enginetest.Reads)
}
