package txn_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/bitempo/bitempo/internal/enginetest"
	"github.com/bitempo/bitempo/internal/testutil/randstore"
	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
)

// readsAt renders every read of table "r" at transaction time tx through
// reader: Get at several valid times per key, the keys' versions, GetBySK of
// every surrogate key handed out and the change feed since tx.
func readsAt(reader store.Reader, tx int64, maxSK uint64) []string {
	var out []string
	add := func(what string, v any, err error) {
		if err != nil {
			v = "error: " + err.Error()
		}
		out = append(out, fmt.Sprintf("%s: %v", what, v))
	}
	for _, k := range []string{"a", "b", "c"} {
		for valid := int64(0); valid <= 100; valid += 5 {
			v, err := query.Get(reader, "r", store.Key{k}, query.AsOf{Valid: valid, Tx: tx}, query.GetOptions{})
			add(fmt.Sprintf("get %s %d", k, valid), enginetest.FmtVersion(v), err)
		}
	}
	for sk := uint64(1); sk < maxSK; sk++ {
		v, err := query.GetBySK(reader, "r", sk, tx, query.GetOptions{})
		add(fmt.Sprintf("bysk %d", sk), enginetest.FmtVersion(v), err)
	}
	var feed []string
	for c, err := range query.Changes(reader, "r", tx, query.Latest, "", query.ChangesOptions{}) {
		if err != nil {
			feed = append(feed, err.Error())
			break
		}
		feed = append(feed, fmt.Sprintf("%d %s %s", c.Tx, c.Op, enginetest.FmtVersion(c.Version)))
	}
	add("changes since", strings.Join(feed, "; "), nil)
	return out
}

// TestVacuum: records retired before the horizon go; every read at or after
// it answers as before; reads before it fail with store.ErrBeforeHorizon;
// a snapshot taken before the vacuum keeps its whole view; Verify passes.
func TestVacuum(t *testing.T) {
	clock := int64(0)
	db, err := store.Open("", store.Options{InMemory: true, Clock: func() int64 { return clock }})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const retain = 5500
	if _, err := db.CreateTable(store.TableDef{Name: "r", Key: []store.KeyColumn{{Name: "id", Type: store.String}}, GroupBy: []string{"g"}, RetainTx: retain}); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(17, 1))
	txs := randstore.Write(t, db, rng, randstore.History{
		Table: "r", Commits: 14, MinOps: 3, MaxOps: 3,
		Ops: []randstore.Op{randstore.Put, randstore.DeleteAt, randstore.Upsert, randstore.Upsert},
		Key: func(int) store.Key { return store.Key{[]string{"a", "b", "c"}[rng.IntN(3)]} },
		Attrs: func() store.Attrs {
			return store.Attrs{"g": []string{"x", "y"}[rng.IntN(2)], "n": int64(rng.IntN(3))}
		},
		Valid: 20, Unit: 5, PutLen: 8,
		BeforeCommit: func(commit int) { clock = int64(commit+1) * 1000 },
	})
	maxSK := uint64(60)
	before := map[int64][]string{}
	for _, tx := range txs {
		before[tx] = readsAt(db, tx, maxSK)
	}
	old, err := db.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	clock = 14000
	horizon := clock - retain // 8500: between the 8th and 9th commits
	res, err := db.Vacuum(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || res[0].Horizon != horizon || res[0].Records == 0 || res[0].LogEntries == 0 {
		t.Fatalf("vacuum: %+v", res)
	}
	t.Logf("vacuum: %+v; commits %v", res, txs)
	if err := enginetest.VerifyStore(db); err != nil {
		t.Fatal(err)
	}
	for _, tx := range txs {
		got := readsAt(db, tx, maxSK)
		if tx < horizon {
			_, err := query.Get(db, "r", store.Key{"a"}, query.AsOf{Valid: 10, Tx: tx}, query.GetOptions{})
			var he *store.HorizonError
			if !errors.Is(err, store.ErrBeforeHorizon) || !errors.As(err, &he) || he.Horizon != horizon {
				t.Fatalf("get at tx %d before the horizon %d: %v", tx, horizon, err)
			}
			if _, err := query.GetBySK(db, "r", 1, tx, query.GetOptions{}); !errors.Is(err, store.ErrBeforeHorizon) {
				t.Fatalf("GetBySK at tx %d: %v", tx, err)
			}
			// The snapshot taken before the vacuum still reads there.
			if o := readsAt(old, tx, maxSK); strings.Join(o, "\n") != strings.Join(before[tx], "\n") {
				t.Fatalf("the snapshot taken before the vacuum changed at tx %d", tx)
			}
			continue
		}
		for i := range got {
			if got[i] == before[tx][i] {
				continue
			}
			// A surrogate key whose records all went is unknown (vacuum.go).
			if strings.HasPrefix(got[i], "bysk") && strings.Contains(got[i], "unknown surrogate key") && strings.Contains(before[tx][i], "retired by tx") {
				var by int64
				fmt.Sscanf(before[tx][i][strings.Index(before[tx][i], "retired by tx")+len("retired by tx "):], "%d", &by)
				if by <= horizon {
					continue
				}
			}
			t.Fatalf("at tx %d (horizon %d), after the vacuum:\n  %s\nbefore:\n  %s", tx, horizon, got[i], before[tx][i])
		}
	}
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}
	// A second vacuum at the same clock drops nothing more.
	res, err = db.Vacuum(context.Background())
	if err != nil || res[0].Records != 0 {
		t.Fatalf("second vacuum: %+v %v", res, err)
	}
	if err := enginetest.VerifyStore(db); err != nil {
		t.Fatal(err)
	}
}
