package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/bitempo/bitempo/internal/sealed"

	"github.com/bitempo/bitempo/engine"
	"github.com/bitempo/bitempo/internal/testlong"
)

// TestVerifyMatchesLegacy damages a store at random (deleted keys, flipped value
// bytes, records copied under another key, sk-index entries and log entries
// moved) and checks that the streaming Verify reports exactly the problems the
// map-based Verify of verify_legacy_test.go reports: the same invariants, tables
// and details, as many times, and the same counts. Which record of a pair is
// named may differ: the legacy check met keys in map order. It damages 300
// stores with BITEMPO_LONG=1, 100 in the quick run.
func TestVerifyMatchesLegacy(t *testing.T) {
	damaged, stores := 0, testlong.Size(300, 100)
	for seed := range uint64(stores) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			db := verifyTestStore(t)
			defer db.Close()
			rng := rand.New(rand.NewPCG(seed, 7))
			s, release, err := db.AcquireSnapshot()
			if err != nil {
				t.Fatal(err)
			}
			var raw []engine.Write
			it, err := s.newIter([]byte{0x02}, []byte{0xff})
			if err != nil {
				t.Fatal(err)
			}
			for ok := it.First(); ok; ok = it.Next() {
				raw = append(raw, engine.Write{Key: slices.Clone(it.Key()), Value: slices.Clone(it.Value())})
			}
			if err := it.Close(); err != nil {
				t.Fatal(err)
			}
			release()
			var damage []engine.Write
			for range 1 + rng.IntN(4) {
				kv := raw[rng.IntN(len(raw))]
				other := raw[rng.IntN(len(raw))]
				switch rng.IntN(4) {
				case 0:
					damage = append(damage, engine.Write{Key: kv.Key, Delete: true})
				case 1:
					v := slices.Clone(kv.Value)
					if len(v) > 0 {
						v[rng.IntN(len(v))] ^= byte(1 << rng.IntN(8))
					}
					damage = append(damage, engine.Write{Key: kv.Key, Value: v})
				case 2: // the value of one key under another of the same keyspace
					if other.Key[0] == kv.Key[0] {
						damage = append(damage, engine.Write{Key: kv.Key, Value: other.Value})
					}
				case 3: // a key with its last byte changed
					k := slices.Clone(kv.Key)
					k[len(k)-1] ^= byte(1 << rng.IntN(8))
					damage = append(damage, engine.Write{Key: k, Value: kv.Value})
				}
			}
			if err := db.engine.Commit(damage, true); err != nil {
				t.Fatal(err)
			}
			got, err := Verify(db)
			if err != nil {
				t.Fatal(err)
			}
			want, err := legacyVerify(db)
			if err != nil {
				t.Fatal(err)
			}
			if a, b := problemSet(got), problemSet(want); !slices.Equal(a, b) || got.Keys != want.Keys || got.Records != want.Records || got.Tables != want.Tables || got.Truncated != want.Truncated {
				t.Fatalf("streaming Verify:\n%s\nlegacy Verify:\n%s", got, want)
			}
			if !got.OK() {
				damaged++
			}
			for _, p := range got.Problems {
				if p.Invariant == 3 && (strings.Contains(p.Detail, "another key") || strings.Contains(p.Detail, "alive")) && (len(p.Records) == 0 || p.Key == nil) {
					t.Fatalf("an invariant 3 problem names no record: %s", p)
				}
			}
		})
	}
	if damaged < stores/2 {
		t.Fatalf("only %d of %d damaged stores have problems: the damage is too weak to compare the two", damaged, stores)
	}
	t.Logf("%d of %d damaged stores have problems", damaged, stores)
}

// problemSet renders what must agree between the two Verifys, sorted.
func problemSet(rep *Report) []string {
	var out []string
	for _, p := range rep.Problems {
		out = append(out, fmt.Sprintf("%d %s %s (%d records)", p.Invariant, p.Table, p.Detail, len(p.Records)))
	}
	slices.Sort(out)
	return out
}

// verifyTestStore builds a small store with history, a retention horizon and an
// erasure, clean under Verify.
func verifyTestStore(t *testing.T) *DB {
	t.Helper()
	clock := int64(0)
	db, err := Open("db", Options{InMemory: true, Clock: func() int64 { clock++; return clock }})
	if err != nil {
		t.Fatal(err)
	}
	tb, err := db.CreateTable(TableDef{Name: "dim", Key: []KeyColumn{{Name: "id", Type: String}}, RetainTx: 3})
	if err != nil {
		t.Fatal(err)
	}
	other, err := db.CreateTable(TableDef{Name: "other", Key: []KeyColumn{{Name: "id", Type: String}}})
	if err != nil {
		t.Fatal(err)
	}
	for round := range 5 {
		for _, tab := range []*Table{tb, other} {
			if err := benchRound(db, tab, round, 0, 6); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := db.Vacuum(context.Background()); err != nil {
		t.Fatal(err)
	}
	w, err := db.BeginWrite(sealed.Key{})
	if err != nil {
		t.Fatal(err)
	}
	tuple, _ := tb.AppendKey(nil, benchKey(2))
	if _, err := w.Erase(tb, tuple, "test"); err != nil {
		t.Fatal(err)
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	for _, v := range []func(Reader) (*Report, error){Verify, legacyVerify} {
		if rep, err := v(db); err != nil || !rep.OK() {
			t.Fatalf("clean store: %v %v", rep, err)
		}
	}
	return db
}
