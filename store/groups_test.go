package store_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/bitempo/bitempo/internal/sealed"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/layout"
	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

var contractsDef = store.TableDef{
	Name:    "contracts",
	Key:     []store.KeyColumn{{Name: "contract_id", Type: store.String}},
	GroupBy: []string{"user_id"},
	// The tests store group values of every type under one name.
	MixedTypes: true,
}

func openGrouped(t *testing.T) *store.DB {
	t.Helper()
	clock := int64(0)
	db, err := store.Open("db", store.Options{InMemory: true, Clock: func() int64 { clock++; return clock }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.CreateTable(contractsDef); err != nil {
		t.Fatal(err)
	}
	return db
}

func update(t *testing.T, db *store.DB, fn func(tx *txn.Tx) error) int64 {
	t.Helper()
	c, err := txn.Update(db, fn)
	if err != nil {
		t.Fatal(err)
	}
	mustVerify(t, db)
	return c.Tx
}

func mustVerify(t *testing.T, db *store.DB) {
	t.Helper()
	rep, err := store.Verify(db)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("verify: %s", rep)
	}
}

// groupDump renders the records of a group alive at tx, one per line:
// key [from, to) tx [from, to) amount.
func groupDump(t *testing.T, db *store.DB, user any, tx int64) string {
	t.Helper()
	s, err := db.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tb, err := s.Table("contracts")
	if err != nil {
		t.Fatal(err)
	}
	group, err := tb.AppendGroupKey(nil, store.Key{user})
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for r, err := range s.GroupRecords(tb, group, tx, tx) {
		if err != nil {
			t.Fatal(err)
		}
		key, err := tb.DecodeKey(r.Tuple)
		if err != nil {
			t.Fatal(err)
		}
		attrs, err := r.Attrs()
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, fmt.Sprintf("%s [%s, %s) tx [%s, %s) amount=%v", key, tick(r.ValidFrom), tick(r.ValidTo), tick(r.TxFrom), tick(r.TxTo), attrs["amount"]))
	}
	return strings.Join(lines, "\n")
}

func tick(t int64) string {
	if t == store.Infinity {
		return "inf"
	}
	return fmt.Sprint(t)
}

func TestGroupIndexFollowsWrites(t *testing.T) {
	db := openGrouped(t)
	tx1 := update(t, db, func(tx *txn.Tx) error {
		if _, err := tx.Upsert("contracts", store.Key{"c1"}, store.Attrs{"user_id": "u1", "amount": 100}, 10); err != nil {
			return err
		}
		_, err := tx.Upsert("contracts", store.Key{"c2"}, store.Attrs{"user_id": "u1", "amount": 50}, 12)
		return err
	})
	// c1 changes amount at 20 and moves to user u2 at 30.
	tx2 := update(t, db, func(tx *txn.Tx) error {
		if _, err := tx.Upsert("contracts", store.Key{"c1"}, store.Attrs{"user_id": "u1", "amount": 120}, 20); err != nil {
			return err
		}
		_, err := tx.Upsert("contracts", store.Key{"c1"}, store.Attrs{"user_id": "u2", "amount": 120}, 30)
		return err
	})
	// c2 expires at 25.
	update(t, db, func(tx *txn.Tx) error {
		_, err := tx.DeleteAt("contracts", store.Key{"c2"}, 25)
		return err
	})

	latest := store.Infinity
	for _, c := range []struct {
		user any
		tx   int64
		want string
	}{
		{"u1", latest, "c1 [10, 20) tx [2, inf) amount=100\nc1 [20, 30) tx [2, inf) amount=120\nc2 [12, 25) tx [3, inf) amount=50"},
		{"u2", latest, "c1 [30, inf) tx [2, inf) amount=120"},
		{"u1", tx1, "c1 [10, inf) tx [1, 2) amount=100\nc2 [12, inf) tx [1, 3) amount=50"},
		{"u2", tx1, ""},
		{"u1", tx2, "c1 [10, 20) tx [2, inf) amount=100\nc1 [20, 30) tx [2, inf) amount=120\nc2 [12, inf) tx [1, 3) amount=50"},
		{"u1", 0, ""},
		{"nobody", latest, ""},
	} {
		// Current records sort before retired ones; order by text for the comparison.
		got := strings.Split(groupDump(t, db, c.user, c.tx), "\n")
		slices.Sort(got)
		if g := strings.Join(got, "\n"); g != c.want {
			t.Errorf("group %v at tx %d:\n%s\nwant:\n%s", c.user, c.tx, g, c.want)
		}
	}
}

// TestGroupRecordsTxRange reads the records alive at some time of a
// transaction-time range: every state the group passed through.
func TestGroupRecordsTxRange(t *testing.T) {
	db := openGrouped(t)
	tx1 := update(t, db, func(tx *txn.Tx) error {
		return tx.Put("contracts", store.Key{"c1"}, store.Attrs{"user_id": "u1", "amount": 1}, 0, 10)
	})
	tx2 := update(t, db, func(tx *txn.Tx) error {
		return tx.Put("contracts", store.Key{"c1"}, store.Attrs{"user_id": "u1", "amount": 2}, 0, 10)
	})
	tx3 := update(t, db, func(tx *txn.Tx) error {
		return tx.Put("contracts", store.Key{"c1"}, store.Attrs{"user_id": "u1", "amount": 3}, 0, 10)
	})
	s, err := db.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tb, _ := s.Table("contracts")
	group, _ := tb.AppendGroupKey(nil, store.Key{"u1"})
	for _, c := range []struct {
		lo, hi int64
		want   []int64
	}{
		{tx1, tx1, []int64{1}}, {tx1, tx2, []int64{1, 2}}, {tx2, tx3, []int64{2, 3}}, {tx1, tx3, []int64{1, 2, 3}},
		{tx3, store.Infinity, []int64{3}}, {0, tx1 - 1, nil},
	} {
		var got []int64
		for r, err := range s.GroupRecords(tb, group, c.lo, c.hi) {
			if err != nil {
				t.Fatal(err)
			}
			attrs, _ := r.Attrs()
			got = append(got, attrs["amount"].(int64))
		}
		slices.Sort(got)
		if !slices.Equal(got, c.want) {
			t.Errorf("tx [%d, %d]: amounts %v, want %v", c.lo, c.hi, got, c.want)
		}
	}
}

func TestGroupIndexNullAndBadValues(t *testing.T) {
	db := openGrouped(t)
	update(t, db, func(tx *txn.Tx) error {
		if err := tx.Put("contracts", store.Key{"nouser"}, store.Attrs{"amount": 1}, 0, 10); err != nil {
			return err
		}
		if err := tx.Put("contracts", store.Key{"nulluser"}, store.Attrs{"user_id": nil, "amount": 1}, 0, 10); err != nil {
			return err
		}
		if err := tx.Put("contracts", store.Key{"intuser"}, store.Attrs{"user_id": 7, "amount": 1}, 0, 10); err != nil {
			return err
		}
		return tx.Put("contracts", store.Key{"bytesuser"}, store.Attrs{"user_id": []byte{0, 1}, "amount": 1}, 0, 10)
	})
	if got := groupDump(t, db, int64(7), store.Infinity); got != "intuser [0, 10) tx [1, inf) amount=1" {
		t.Errorf("int group: %q", got)
	}
	if got := groupDump(t, db, []byte{0, 1}, store.Infinity); got != "bytesuser [0, 10) tx [1, inf) amount=1" {
		t.Errorf("bytes group: %q", got)
	}
	s, err := db.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for range s.RawScan([]byte{0x30}, []byte{0x31}) {
		n++
	}
	s.Close()
	if n != 2 {
		t.Errorf("group index has %d entries, want 2 (null and absent group values are in no group)", n)
	}

	last := db.LastTx()
	for _, v := range []any{1.5, true} {
		_, err := txn.Update(db, func(tx *txn.Tx) error {
			return tx.Put("contracts", store.Key{"bad"}, store.Attrs{"user_id": v, "amount": 1}, 0, 10)
		})
		var gerr *store.GroupValueError
		if !errors.Is(err, store.ErrGroupValue) || !errors.As(err, &gerr) || gerr.Attr != "user_id" {
			t.Errorf("user_id %v: got %v, want a *GroupValueError for user_id", v, err)
		}
	}
	if db.LastTx() != last {
		t.Errorf("a rejected write committed: last tx %d, was %d", db.LastTx(), last)
	}
	mustVerify(t, db)
}

func TestGroupKeyLookup(t *testing.T) {
	db := openGrouped(t)
	tb, err := db.Table("contracts")
	if err != nil {
		t.Fatal(err)
	}
	a, err := tb.AppendGroupKey(nil, store.Key{7})
	if err != nil {
		t.Fatal(err)
	}
	b, err := tb.AppendGroupKey(nil, store.Key{uint32(7)})
	if err != nil || string(a) != string(b) {
		t.Errorf("int and uint32 7 encode differently: %x %x %v", a, b, err)
	}
	for _, bad := range []store.Key{{}, {"a", "b"}, {nil}, {1.5}, {false}, {struct{}{}}} {
		if _, err := tb.AppendGroupKey(nil, bad); !errors.Is(err, store.ErrGroupValue) {
			t.Errorf("%v: got %v, want ErrGroupValue", bad, err)
		}
	}
	if err := tb.CheckGroupAttrs(store.Attrs{"user_id": 2.5}); !errors.Is(err, store.ErrGroupValue) {
		t.Errorf("CheckGroupAttrs float: %v", err)
	}
	if err := tb.CheckGroupAttrs(store.Attrs{"user_id": "u", "x": 2.5}); err != nil {
		t.Errorf("CheckGroupAttrs string: %v", err)
	}
	plain, err := db.CreateTable(store.TableDef{Name: "plain", Key: []store.KeyColumn{{Name: "id", Type: store.Int64}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := plain.AppendGroupKey(nil, store.Key{"x"}); !errors.Is(err, store.ErrNotGrouped) {
		t.Errorf("ungrouped table: %v", err)
	}
	if err := plain.CheckGroupAttrs(store.Attrs{"user_id": 2.5}); err != nil {
		t.Errorf("ungrouped table CheckGroupAttrs: %v", err)
	}
	s, err := db.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, err := range s.GroupRecords(plain, nil, store.Infinity, store.Infinity) {
		if !errors.Is(err, store.ErrNotGrouped) {
			t.Errorf("GroupRecords on an ungrouped table: %v", err)
		}
	}
}

func TestGroupRecordsEarlyExit(t *testing.T) {
	db, err := store.Open("db", store.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateTable(contractsDef); err != nil {
		t.Fatal(err)
	}
	update(t, db, func(tx *txn.Tx) error {
		for i := range 5 {
			if err := tx.Put("contracts", store.Key{fmt.Sprint("c", i)}, store.Attrs{"user_id": "u"}, 0, 10); err != nil {
				return err
			}
		}
		return nil
	})
	s, err := db.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	tb, _ := s.Table("contracts")
	group, _ := tb.AppendGroupKey(nil, store.Key{"u"})
	n := 0
	for _, err := range s.GroupRecords(tb, group, store.Infinity, store.Infinity) {
		if err != nil {
			t.Fatal(err)
		}
		if n++; n == 2 {
			break
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Pebble refuses to close a store with a leaked iterator.
	if err := db.Close(); err != nil {
		t.Fatalf("close after an early break: %v", err)
	}
}

// TestVerifyGroupIndex damages the group index in every way Verify must notice.
func TestVerifyGroupIndex(t *testing.T) {
	setup := func(t *testing.T) (*store.DB, []store.RawKV) {
		db := openGrouped(t)
		update(t, db, func(tx *txn.Tx) error {
			_, err := tx.Upsert("contracts", store.Key{"c1"}, store.Attrs{"user_id": "u1", "amount": 1}, 0)
			return err
		})
		update(t, db, func(tx *txn.Tx) error {
			_, err := tx.Upsert("contracts", store.Key{"c1"}, store.Attrs{"user_id": "u1", "amount": 2}, 5)
			return err
		})
		s, err := db.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		var entries []store.RawKV
		for kv, err := range s.RawScan([]byte{0x30}, []byte{0x31}) {
			if err != nil {
				t.Fatal(err)
			}
			entries = append(entries, kv)
		}
		if len(entries) != 3 { // two current, one retired
			t.Fatalf("%d group entries, want 3", len(entries))
		}
		return db, entries
	}
	for _, c := range []struct {
		name   string
		damage func(db *store.DB, entries []store.RawKV) error
		want   string
	}{
		{"entry deleted", func(db *store.DB, e []store.RawKV) error { return db.RawSet(sealed.Key{}, e[0].Key, nil) },
			"missing from the group index"},
		{"entry value changed", func(db *store.DB, e []store.RawKV) error {
			return db.RawSet(sealed.Key{}, e[0].Key, e[1].Value)
		}, "differs from its record"},
		{"stray entry", func(db *store.DB, e []store.RawKV) error {
			return db.RawSet(sealed.Key{}, append(e[0].Key[:len(e[0].Key)-1:len(e[0].Key)-1], 0x42), e[0].Value)
		}, "has no matching record"},
		{"entry of an unknown table", func(db *store.DB, e []store.RawKV) error {
			return db.RawSet(sealed.Key{}, append(layout.TablePrefix(0x30, 99), 1), []byte{1})
		}, "not a grouped table"},
		{"record with a float group value", func(db *store.DB, e []store.RawKV) error {
			tb, _ := db.Table("contracts")
			tuple, _ := tb.AppendKey(nil, store.Key{"c9"})
			key := append(layout.TablePrefix(0x10, tb.ID), tuple...)
			key = encoding.AppendTimeDesc(key, 0)
			names := db.AttrNames(tb) // records name attributes by ordinal
			value, err := encoding.AppendRecordPositional(nil, &encoding.RecordValue{ValidTo: 5, TxCommit: 1, TxTo: store.Infinity, SK: 1 << 40, Attrs: encoding.Attrs{"user_id": 1.5}},
				func(name string) (uint32, bool) { i := slices.Index(names, name); return uint32(i), i >= 0 })
			if err != nil {
				return err
			}
			return db.RawSet(sealed.Key{}, key, value)
		}, "cannot be in the group index"},
	} {
		t.Run(c.name, func(t *testing.T) {
			db, entries := setup(t)
			if err := c.damage(db, entries); err != nil {
				t.Fatal(err)
			}
			rep, err := store.Verify(db)
			if err != nil {
				t.Fatal(err)
			}
			if rep.OK() || !strings.Contains(rep.String(), c.want) {
				t.Fatalf("verify did not report %q:\n%s", c.want, rep)
			}
		})
	}
}
