package txn_test

import (
	"errors"
	"testing"

	"github.com/bitempo/bitempo/internal/testutil"
	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

func inferredStore(t *testing.T) *store.DB {
	t.Helper()
	clock := int64(100)
	db, err := store.Open("db", store.Options{InMemory: true, Clock: func() int64 { clock++; return clock }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	for _, def := range []store.TableDef{
		{Name: "customers", Key: []store.KeyColumn{{Name: "id", Type: store.String}}},
		{Name: "feed", Key: []store.KeyColumn{{Name: "id", Type: store.String}}, Kind: store.Changes},
	} {
		if _, err := db.CreateTable(def); err != nil {
			t.Fatal(err)
		}
	}
	return db
}

func TestInsertInferredUnknownKey(t *testing.T) {
	db := inferredStore(t)
	var placeholder store.Version
	c, err := txn.Update(db, func(tx *txn.Tx) error {
		var err error
		placeholder, err = tx.InsertInferred("customers", store.Key{"c9"}, 5)
		if err != nil {
			return err
		}
		// Read-your-writes sees the placeholder, uncommitted.
		v, reason, err := tx.Get("customers", store.Key{"c9"}, 7)
		if err != nil || reason != store.Found || !v.Inferred || v.TxFrom != store.Infinity {
			t.Errorf("in-transaction get: %v %v %v", v.String(), reason, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !placeholder.Inferred || placeholder.ValidFrom != 5 || placeholder.ValidTo != store.Infinity ||
		len(placeholder.Attrs) != 0 || placeholder.SK == 0 {
		t.Fatalf("placeholder %s", placeholder.String())
	}
	got, err := query.Get(db, "customers", store.Key{"c9"}, query.AsOf{Valid: 1 << 40}, query.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !got.Inferred || got.SK != placeholder.SK || got.TxFrom != c.Tx || got.ValidFrom != 5 || len(got.Attrs) != 0 {
		t.Fatalf("stored placeholder %s", got.String())
	}
	if _, err := query.Get(db, "customers", store.Key{"c9"}, query.AsOf{Valid: 4}, query.GetOptions{}); !errors.Is(err, query.ErrBeforeFirst) {
		t.Fatalf("before the placeholder: %v", err)
	}
	testutil.Verify(t, db)
}

func TestInsertInferredRefusesKnownKey(t *testing.T) {
	db := inferredStore(t)
	if _, err := txn.Update(db, func(tx *txn.Tx) error {
		return tx.Put("customers", store.Key{"c1"}, store.Attrs{"city": "Oslo"}, 10, 20)
	}); err != nil {
		t.Fatal(err)
	}
	last := db.LastTx()
	// Known at the newest commit, even where no version covers from (before the
	// first version, after the last): a placeholder there would hide a load bug.
	for _, from := range []int64{0, 15, 30} {
		_, err := txn.Update(db, func(tx *txn.Tx) error {
			_, err := tx.InsertInferred("customers", store.Key{"c1"}, from)
			return err
		})
		if !errors.Is(err, txn.ErrKnownKey) {
			t.Fatalf("from %d: %v, want ErrKnownKey", from, err)
		}
	}
	// Known through this transaction's own writes.
	_, err := txn.Update(db, func(tx *txn.Tx) error {
		if err := tx.Put("customers", store.Key{"c2"}, store.Attrs{"city": "Bergen"}, 1, 2); err != nil {
			return err
		}
		_, err := tx.InsertInferred("customers", store.Key{"c2"}, 0)
		return err
	})
	if !errors.Is(err, txn.ErrKnownKey) {
		t.Fatalf("key written earlier in the transaction: %v, want ErrKnownKey", err)
	}
	if db.LastTx() != last {
		t.Fatalf("a refused insert committed (last tx %d, was %d)", db.LastTx(), last)
	}
}

func TestInsertInferredAfterEveryVersionWasDeleted(t *testing.T) {
	db := inferredStore(t)
	if _, err := txn.Update(db, func(tx *txn.Tx) error {
		return tx.Put("customers", store.Key{"c1"}, store.Attrs{"city": "Oslo"}, 10, 20)
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Update(db, func(tx *txn.Tx) error {
		return tx.Delete("customers", store.Key{"c1"}, store.NegInfinity, store.Infinity)
	}); err != nil {
		t.Fatal(err)
	}
	// The key is unknown at the newest commit again; its old records stay in history.
	if _, err := txn.Update(db, func(tx *txn.Tx) error {
		_, err := tx.InsertInferred("customers", store.Key{"c1"}, 0)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	testutil.Verify(t, db)
}

func TestInsertInferredErrors(t *testing.T) {
	db := inferredStore(t)
	cases := []struct {
		name  string
		table string
		key   store.Key
		from  int64
		want  error
	}{
		{"empty period", "customers", store.Key{"c1"}, store.Infinity, store.ErrInvalidPeriod},
		{"changes table", "feed", store.Key{"c1"}, 0, txn.ErrWrongKind},
		{"unknown table", "nope", store.Key{"c1"}, 0, store.ErrUnknownTable},
		{"bad key", "customers", store.Key{int64(1)}, 0, store.ErrKeyShape},
	}
	for _, c := range cases {
		_, err := txn.Update(db, func(tx *txn.Tx) error {
			_, err := tx.InsertInferred(c.table, c.key, c.from)
			return err
		})
		if !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	if db.LastTx() != 0 {
		t.Fatalf("failed inserts committed (last tx %d)", db.LastTx())
	}
}

// TestInferredMemberTakenOver: real data replaces the placeholder and keeps its
// surrogate key, so facts resolved to the placeholder see the real attributes.
func TestInferredMemberTakenOver(t *testing.T) {
	db := inferredStore(t)
	var sk uint64
	if _, err := txn.Update(db, func(tx *txn.Tx) error {
		v, err := tx.InsertInferred("customers", store.Key{"c9"}, 5)
		sk = v.SK
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Update(db, func(tx *txn.Tx) error {
		_, err := tx.Upsert("customers", store.Key{"c9"}, store.Attrs{"city": "Oslo"}, 5)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	v, err := query.GetBySK(db, "customers", sk, query.Latest, query.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v.Inferred || v.Attrs["city"] != "Oslo" {
		t.Fatalf("after the upsert, sk %d names %s", sk, v.String())
	}
	testutil.Verify(t, db)
}

// TestResolveInferredPolicy: ResolveInferred takes only MissNull, the policy of
// the misses that get no member, and writes nothing when it refuses.
func TestResolveInferredPolicy(t *testing.T) {
	db := inferredStore(t)
	last := db.LastTx()
	facts := []query.Fact{{Key: store.Key{"c9"}, At: 5}}
	for _, miss := range []query.MissPolicy{query.MissError, query.MissSkip, query.MissDefault} {
		if _, err := txn.ResolveInferred(db, "customers", facts, query.ResolveOptions{Miss: miss}); err == nil {
			t.Fatalf("miss policy %d: no error", miss)
		}
	}
	if db.LastTx() != last {
		t.Fatalf("a refused ResolveInferred committed: last tx %d, was %d", db.LastTx(), last)
	}
	res, err := txn.ResolveInferred(db, "customers", facts, query.ResolveOptions{Miss: query.MissNull})
	if err != nil || len(res) != 1 || !res[0].Found() || !res[0].Inferred {
		t.Fatalf("MissNull: %+v %v", res, err)
	}
	testutil.Verify(t, db)
}
