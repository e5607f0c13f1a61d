package store_test

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/bitempo/bitempo/internal/sealed"
	"github.com/bitempo/bitempo/layout"
	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// newestEntries returns the valid_from of every newest-version entry of table
// name, by key.
func newestEntries(t *testing.T, db *store.DB, name string) map[string]int64 {
	t.Helper()
	tb, err := db.Table(name)
	if err != nil {
		t.Fatal(err)
	}
	s, err := db.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	pfx := layout.NewestKeys.TablePrefix(nil, tb.ID)
	out := map[string]int64{}
	for kv, err := range s.RawScan(pfx, layout.NewestKeys.TablePrefix(nil, tb.ID+1)) {
		if err != nil {
			t.Fatal(err)
		}
		key, err := tb.DecodeKey(kv.Key[len(pfx):])
		if err != nil {
			t.Fatal(err)
		}
		from, _, err := layout.NewestKeys.DecodeValue(kv.Value)
		if err != nil {
			t.Fatal(err)
		}
		out[fmt.Sprint(key[0])] = from
	}
	return out
}

// Every write path keeps each key's newest-version entry on the key's newest
// current record: after each step the entries are those expected, Verify
// (which compares them with the current index) is clean, and a snapshot at a
// valid time after every version reads the keys whose newest version is open.
func TestNewestEntriesFollowWrites(t *testing.T) {
	db, _ := newestTestStore(t)
	defer db.Close()
	a := func(n int) store.Attrs { return store.Attrs{"n": int64(n)} }
	steps := []struct {
		name  string
		write func(tx *txn.Tx) error
		want  map[string]int64 // valid_from of each key's entry
		open  string           // the keys a snapshot at valid time 1000 reads, sorted
	}{
		{"first versions", func(tx *txn.Tx) error {
			return errors.Join(tx.Put("p", store.Key{"a"}, a(1), 0, store.Infinity), tx.Put("p", store.Key{"b"}, a(1), 0, store.Infinity))
		}, map[string]int64{"a": 0, "b": 0}, "a b"},
		{"a newer version closes the open one", func(tx *txn.Tx) error {
			return tx.Put("p", store.Key{"a"}, a(2), 10, store.Infinity)
		}, map[string]int64{"a": 10, "b": 0}, "a b"},
		{"an older version leaves the entry", func(tx *txn.Tx) error {
			return tx.Put("p", store.Key{"b"}, a(0), -20, -10)
		}, map[string]int64{"a": 10, "b": 0}, "a b"},
		{"a correction of the newest version", func(tx *txn.Tx) error {
			return tx.Put("p", store.Key{"a"}, a(3), 10, store.Infinity)
		}, map[string]int64{"a": 10, "b": 0}, "a b"},
		{"the newest version deleted: the one before", func(tx *txn.Tx) error {
			return tx.Delete("p", store.Key{"a"}, 10, store.Infinity)
		}, map[string]int64{"a": 0, "b": 0}, "b"},
		{"a closed newest version", func(tx *txn.Tx) error {
			return tx.Delete("p", store.Key{"b"}, 500, store.Infinity)
		}, map[string]int64{"a": 0, "b": 0}, ""},
		{"a version in the same commit as the deletion of the newest", func(tx *txn.Tx) error {
			return errors.Join(tx.Delete("p", store.Key{"b"}, 0, store.Infinity), tx.Put("p", store.Key{"b"}, a(4), 700, 800), tx.Put("p", store.Key{"c"}, a(1), 5, store.Infinity))
		}, map[string]int64{"a": 0, "b": 700, "c": 5}, "c"},
		{"every version of a key deleted", func(tx *txn.Tx) error {
			return tx.Delete("p", store.Key{"a"}, store.NegInfinity, store.Infinity)
		}, map[string]int64{"b": 700, "c": 5}, "c"},
		{"an erased key", func(tx *txn.Tx) error {
			return tx.Erase("p", store.Key{"b"})
		}, map[string]int64{"c": 5}, "c"},
	}
	for _, st := range steps {
		if _, err := txn.Update(db, st.write); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		mustVerify(t, db)
		if got := newestEntries(t, db, "p"); !maps.Equal(got, st.want) {
			t.Fatalf("%s: entries %v, want %v", st.name, got, st.want)
		}
		tb, _ := db.Table("p")
		var keys []string
		s, err := db.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		for v, err := range s.ScanAt(tb, store.Span{}, 1000, store.Infinity) {
			if err != nil {
				t.Fatal(err)
			}
			keys = append(keys, fmt.Sprint(v.Key[0]))
		}
		s.Close()
		if got := strings.Join(keys, " "); got != st.open {
			t.Fatalf("%s: snapshot at valid time 1000 read %q, want %q", st.name, got, st.open)
		}
	}
}

// Verify reports a newest-version entry that is missing, stale or left over.
func TestVerifyFindsNewestDrift(t *testing.T) {
	for _, c := range []struct {
		name   string
		damage func(db *store.DB, tb *store.Table) error
		want   string
	}{
		{"missing", func(db *store.DB, tb *store.Table) error {
			return db.RawSet(sealed.Key{}, layout.NewestKeys.Key(nil, tb.ID, mustTuple(tb, "k1")), nil)
		}, "has no newest-version entry"},
		{"stale", func(db *store.DB, tb *store.Table) error {
			s, err := db.Snapshot()
			if err != nil {
				return err
			}
			defer s.Close()
			v, _, err := s.VersionAt(tb, mustTuple(tb, "k1"), 0, store.Infinity) // an older version
			if err != nil {
				return err
			}
			return db.RawSet(sealed.Key{}, layout.NewestKeys.Key(nil, tb.ID, mustTuple(tb, "k1")), layout.NewestKeys.Value(nil, v.ValidFrom, []byte{0}))
		}, "is not the key's first current record"},
		{"left over", func(db *store.DB, tb *store.Table) error {
			return db.RawSet(sealed.Key{}, layout.NewestKeys.Key(nil, tb.ID, mustTuple(tb, "k9")), layout.NewestKeys.Value(nil, 0, []byte{0}))
		}, "of a key without current records"},
	} {
		db, tb := newestTestStore(t)
		if _, err := txn.Update(db, func(tx *txn.Tx) error {
			return errors.Join(tx.Put("p", store.Key{"k1"}, store.Attrs{"n": 1}, 0, store.Infinity), tx.Put("p", store.Key{"k1"}, store.Attrs{"n": 2}, 10, store.Infinity))
		}); err != nil {
			t.Fatal(err)
		}
		mustVerify(t, db)
		if err := c.damage(db, tb); err != nil {
			t.Fatal(err)
		}
		rep, err := store.Verify(db)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(rep.Problems, func(p store.Problem) bool { return strings.Contains(p.Detail, c.want) }) {
			t.Fatalf("%s: report %s, want a problem %q", c.name, rep, c.want)
		}
		db.Close()
	}
}

// newestTestStore opens an empty store with one table, p, keyed by a string.
func newestTestStore(t *testing.T) (*store.DB, *store.Table) {
	t.Helper()
	db, err := store.Open(t.TempDir(), store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	tb, err := db.CreateTable(store.TableDef{Name: "p", Key: []store.KeyColumn{{Name: "id", Type: store.String}}})
	if err != nil {
		db.Close()
		t.Fatal(err)
	}
	return db, tb
}

func mustTuple(tb *store.Table, id string) []byte {
	tuple, err := tb.AppendKey(nil, store.Key{id})
	if err != nil {
		panic(err)
	}
	return tuple
}

// A snapshot reads the version in effect whether a key's newest version starts
// before the valid time (read from the newest-version keyspace) or after it
// (read from the current index): with one key in ten, one in three and every
// key starting its newest version after the valid time, so that the scan
// serves the misses with seeks, or turns to walking the current index after
// its first window, or at once.
func TestSnapshotReadsKeysWhoseNewestStartsLater(t *testing.T) {
	for _, every := range []int{10, 3, 1} {
		db, tb := newestTestStore(t)
		const keys = 300
		if _, err := txn.Update(db, func(tx *txn.Tx) error {
			for i := range keys {
				k := store.Key{fmt.Sprintf("k%03d", i)}
				if err := tx.Put("p", k, store.Attrs{"n": int64(i)}, 0, store.Infinity); err != nil {
					return err
				}
				if i%every == 0 {
					if err := tx.Put("p", k, store.Attrs{"n": int64(-i)}, 100, store.Infinity); err != nil {
						return err
					}
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		mustVerify(t, db)
		s, err := db.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		for _, valid := range []int64{50, 100, -1} {
			var got []string
			for v, err := range s.ScanAt(tb, store.Span{}, valid, store.Infinity) {
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, fmt.Sprintf("%v@%d=%v", v.Key[0], v.ValidFrom, v.Attrs["n"]))
			}
			var want []string
			for i := range keys {
				switch {
				case valid < 0:
				case valid >= 100 && i%every == 0:
					want = append(want, fmt.Sprintf("k%03d@100=%d", i, -i))
				default:
					want = append(want, fmt.Sprintf("k%03d@0=%d", i, i))
				}
			}
			if g, w := strings.Join(got, " "), strings.Join(want, " "); g != w {
				t.Fatalf("one key in %d newer, valid %d:\n got %s\nwant %s", every, valid, g, w)
			}
		}
		s.Close()
		db.Close()
	}
}
