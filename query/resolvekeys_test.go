package query_test

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/bitempo/bitempo/internal/testutil"
	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// TestResolveKeysAroundPrefixLength resolves facts on string keys whose
// encodings are 14 to 22 bytes long and share long prefixes: keys that are
// prefixes of one another, keys that agree on their first 16 bytes and differ
// after, keys whose last byte alone differs. A batch tells keys apart by the
// first 16 bytes of their encoding where it can and by their bytes where it
// must; every answer must be that of a Get on the fact's own key, whose
// version carries the key in an attribute.
func TestResolveKeysAroundPrefixLength(t *testing.T) {
	var keys []string
	for n := 11; n <= 19; n++ { // an encoded string key is the tag, the bytes and two terminator bytes
		stem := strings.Repeat("k", n-1)
		for _, last := range "abc" {
			keys = append(keys, stem+string(last))
		}
	}
	db, err := store.Open("db", store.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.CreateTable(store.TableDef{Name: "dim", Key: []store.KeyColumn{{Name: "id", Type: store.String}}}); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	if _, err := txn.Update(db, func(tx *txn.Tx) error {
		for _, k := range keys {
			at := int64(rng.IntN(20))
			for v := range 1 + rng.IntN(4) {
				if _, err := tx.Upsert("dim", store.Key{k}, store.Attrs{"key": k, "v": int64(v)}, at); err != nil {
					return err
				}
				at += 1 + int64(rng.IntN(30))
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	testutil.Verify(t, db)
	s, err := db.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	for _, n := range []int{50, 40_000} { // one goroutine; key ranges on every core
		facts := make([]query.Fact, n)
		for i := range facts {
			facts[i] = query.Fact{Key: store.Key{keys[rng.IntN(len(keys))]}, At: int64(rng.IntN(120) - 10)}
		}
		got, err := query.Resolve(s, "dim", facts, query.ResolveOptions{Miss: query.MissNull, Attrs: true})
		if err != nil {
			t.Fatal(err)
		}
		found := 0
		for i, f := range facts {
			want := resolvedByGet(t, s, i, f)
			if want.Reason == store.Found {
				found++
			}
			if a, b := fmtResolution(got[i]), fmtResolution(want); a != b {
				t.Fatalf("%d facts: fact %d on %q at %d: %s, want %s", n, i, f.Key[0], f.At, a, b)
			}
		}
		if found < n/2 {
			t.Fatalf("%d facts: only %d found a version", n, found)
		}
	}
}
