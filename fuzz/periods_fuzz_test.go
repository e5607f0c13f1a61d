package fuzz_test

import (
	"math/rand/v2"
	"testing"

	"github.com/bitempo/bitempo/fuzz/model/oplog"
)

// periodsMaxOps bounds the operations one fuzz input decodes to, so that every
// execution stays in the milliseconds.
const periodsMaxOps = 24

// FuzzPeriodsOps decodes its input to a log of Put, Delete, Upsert and DeleteAt
// transactions over a few keys of three periods tables (oplog.Decode), runs it on
// a fresh in-memory store and on the reference model, and after every
// transaction compares the keys it touched and one other: the audit trail, the
// versions alive at sampled transaction times, Get at every boundary instant
// (latest and past); and a table snapshot and a history window at a sampled
// point. Verify must be clean after every commit. Inputs are kept short (at most
// periodsMaxOps operations) so that an execution takes milliseconds and the
// fuzzer's minimisation fits in a CI budget of seconds.
func FuzzPeriodsOps(f *testing.F) {
	for i := range 4 {
		rng := rand.New(rand.NewPCG(uint64(i), 7))
		data := make([]byte, 24+rng.IntN(48))
		for j := range data {
			data[j] = byte(rng.UintN(256))
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		l := oplog.Decode(data, periodsMaxOps)
		if err := oplog.RunFresh(l, 1, false); err != nil {
			t.Fatalf("%v\nlog:\n%s", err, l)
		}
	})
}
