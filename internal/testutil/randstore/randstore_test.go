package randstore_test

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"regexp"
	"strconv"
	"testing"

	"github.com/bitempo/bitempo/internal/testutil/randstore"
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

func open(t *testing.T) *store.DB {
	t.Helper()
	db, err := store.Open("db", store.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.CreateTable(store.TableDef{Name: "t", Key: []store.KeyColumn{{Name: "id", Type: store.Int64}}}); err != nil {
		t.Fatal(err)
	}
	return db
}

// records returns every record of the keys a history writes, current and
// retired, by key.
func records(t *testing.T, db *store.DB) map[int64][]store.Version {
	t.Helper()
	s, err := db.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tb, err := s.Table("t")
	if err != nil {
		t.Fatal(err)
	}
	out := map[int64][]store.Version{}
	for _, k := range []int64{0, 1, 2, 3, 4, 5, 100, 101, 102} {
		tuple, err := tb.AppendKey(nil, store.Key{k})
		if err != nil {
			t.Fatal(err)
		}
		if out[k], err = s.KeyRecords(tb, tuple); err != nil {
			t.Fatal(err)
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
	var log []string
	db := open(t)
	rng := rand.New(rand.NewPCG(1, 2))
	txs := randstore.Write(t, db, rng, history(rng, &log))
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
	recs := records(t, db)
	if len(recs[100]) != 1 || !recs[100][0].Inferred || len(recs[101]) != 1 || !recs[101][0].Inferred || len(recs[102]) != 0 {
		t.Fatalf("placeholders: %v", [][]store.Version{recs[100], recs[101], recs[102]})
	}
	if len(txs) < 15 || len(txs) > 30 || db.LastTx() != txs[len(txs)-1] { // a commit may change nothing
		t.Fatalf("transaction times %v, last %d", txs, db.LastTx())
	}
	for i := 1; i < len(txs); i++ {
		if txs[i] <= txs[i-1] {
			t.Fatalf("transaction times out of order: %v", txs)
		}
	}

	var again []string
	twin := open(t)
	rng = rand.New(rand.NewPCG(1, 2))
	randstore.Write(t, twin, rng, history(rng, &again))
	if !reflect.DeepEqual(again, log) {
		t.Fatal("the same seeds drew other writes")
	}
	for k, rs := range records(t, twin) {
		for i := range rs {
			rs[i].TxFrom, rs[i].TxTo = 0, 0 // the clock differs
		}
		for i := range recs[k] {
			recs[k][i].TxFrom, recs[k][i].TxTo = 0, 0
		}
		if !reflect.DeepEqual(rs, recs[k]) {
			t.Fatalf("key %d: the same seeds wrote\n%v\nand\n%v", k, recs[k], rs)
		}
	}
}
