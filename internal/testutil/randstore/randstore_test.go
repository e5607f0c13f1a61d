package randstore_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"testing"

	"github.com/bitempo/bitempo/internal/testutil/randstore"
	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
)

const keys = 6

// history draws every operation on keys 0 to 5, placeholders on keys 100 and
// 101, in units of 10, and appends every write it logs to *log.
func history(rng *rand.Rand, log *[]string) randstore.History {
	return randstore.History{
		Table: "t", Commits: 30, MinOps: 2, MaxOps: 6,
		Ops: []randstore.Op{randstore.Upsert, randstore.Reupsert, randstore.Put, randstore.Correct,
			randstore.Delete, randstore.DeleteAt, randstore.Inferred},
		Key:   func(int) store.Key { return store.Key{rng.Int64N(keys)} },
		Attrs: func() store.Attrs { return store.Attrs{"v": rng.Int64N(3)} },
		Valid: 8, Unit: 10, PutLen: 3, DeleteLen: 2, Open: 4, Correction: [2]int64{5, 25},
		InferredKey: func(n int) store.Key {
			if n == 2 {
				return nil
			}
			return store.Key{int64(100 + n)}
		},
		Log: func(format string, args ...any) { *log = append(*log, fmt.Sprintf(format, args...)) },
	}
}

// write opens a store on a clock of its own, writes the history of seed into
// it and returns the store, the writes logged and the transaction times.
func write(t *testing.T, seed uint64) (*store.DB, []string, []int64) {
	clock := int64(0)
	db, err := store.Open("db", store.Options{InMemory: true, Clock: func() int64 { clock += 10; return clock }})
	if err == nil {
		t.Cleanup(func() { db.Close() })
		_, err = db.CreateTable(store.TableDef{Name: "t", Key: []store.KeyColumn{{Name: "id", Type: store.Int64}}})
	}
	if err != nil {
		t.Fatal(err)
	}
	var log []string
	rng := rand.New(rand.NewPCG(seed, 2))
	txs := randstore.Write(t, db, rng, history(rng, &log))
	return db, log, txs
}

// records renders every record, current and retired, of the keys a history
// writes.
func records(t *testing.T, db *store.DB) []string {
	var out []string
	for _, k := range []int64{0, 1, 2, 3, 4, 5, 100, 101, 102} {
		for v, err := range query.Audit(db, "t", store.Key{k}, query.AuditOptions{}) {
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, fmt.Sprintf("%+v", v))
		}
	}
	return out
}

// units reports whether length is 1 to n units of 10.
func units(length, n int64) bool { return length%10 == 0 && length >= 10 && length <= 10*n }

var logged = regexp.MustCompile(`^commit (\d+): ([a-z-]+) (\S+) (?:\[(\d+), (\d+)\)|from (\d+)) map\[.*\]$`)

// TestWriteDrawsWhatTheHistorySays writes a history of every operation and
// checks what Write did against what it was told: every operation is drawn,
// valid times and lengths keep to their bounds in units, some Puts and
// Deletes are open-ended, Correct writes its period, exactly the placeholders
// InferredKey allows are stored, the returned transaction times are those of
// the commits, in order, and the same seed writes the same store.
func TestWriteDrawsWhatTheHistorySays(t *testing.T) {
	db, log, txs := write(t, 1)
	ops := map[string]int{}
	unbounded := 0
	for _, line := range log {
		m := logged.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("logged %q", line)
		}
		ops[m[2]]++
		if m[6] != "" {
			if from, _ := strconv.ParseInt(m[6], 10, 64); from%10 != 0 || from >= 80 {
				t.Fatalf("%s: valid_from not a unit in [0, 80)", line)
			}
			continue
		}
		from, _ := strconv.ParseInt(m[4], 10, 64)
		to, _ := strconv.ParseInt(m[5], 10, 64)
		switch {
		case m[2] == "correct" && (from != 5 || to != 25):
			t.Fatalf("%s: not the correction's period", line)
		case to == store.Infinity:
			unbounded++
		case m[2] == "put" && !units(to-from, 3), m[2] == "delete" && !units(to-from, 2):
			t.Fatalf("%s: too long or not whole units", line)
		}
	}
	for _, op := range []string{"upsert", "reupsert", "put", "correct", "delete", "delete-at"} {
		if ops[op] < 3 {
			t.Fatalf("%d writes of %s in %v", ops[op], op, ops)
		}
	}
	if ops["inferred"] != 2 || unbounded == 0 {
		t.Fatalf("%d placeholders logged, want 2; %d open-ended writes", ops["inferred"], unbounded)
	}
	for _, k := range []int64{100, 101, 102} {
		v, err := query.Get(db, "t", store.Key{k}, query.AsOf{Valid: 1000, Tx: query.Latest}, query.GetOptions{})
		if (k < 102) != (err == nil && v.Inferred) || (k == 102) != errors.Is(err, query.ErrNotFound) {
			t.Fatalf("key %d at valid 1000: %+v, %v; want a placeholder at keys 100 and 101 only", k, v, err)
		}
	}
	if len(txs) < 15 || len(txs) > 30 || db.LastTx() != txs[len(txs)-1] { // a commit may change nothing
		t.Fatalf("transaction times %v, last %d", txs, db.LastTx())
	}
	for i := 1; i < len(txs); i++ {
		if txs[i] <= txs[i-1] {
			t.Fatalf("transaction times out of order: %v", txs)
		}
	}

	twin, again, _ := write(t, 1)
	if !slices.Equal(again, log) || !slices.Equal(records(t, twin), records(t, db)) {
		t.Fatal("the same seed wrote another history")
	}
	if _, other, _ := write(t, 2); slices.Equal(other, log) {
		t.Fatal("another seed wrote the same history")
	}
}
