package txn

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/bitempo/bitempo/internal/sealed"

	"github.com/bitempo/bitempo/internal/testutil"
	"github.com/bitempo/bitempo/store"
)

// TestApplyErrorsAreTyped checks the error types a caller matches on.
func TestApplyErrorsAreTyped(t *testing.T) {
	db := openApplyDB(t)
	mustCreate(t, db, store.TableDef{Name: "c", Kind: store.Changes, Key: []store.KeyColumn{{Name: "id", Type: store.String}}, Lateness: 10})
	mustCreate(t, db, store.TableDef{Name: "p", Key: []store.KeyColumn{{Name: "id", Type: store.String}}})
	up := func(key any, at int64) Event {
		return Event{Key: store.Key{key}, At: at, Op: OpUpsert, Attrs: store.Attrs{"a": int64(1)}}
	}
	cases := []struct {
		name   string
		events []Event
		index  int
		is     []error
	}{
		{"null key", []Event{up("k", 1), up(nil, 2)}, 1, []error{ErrInvalidEvent}},
		{"short key", []Event{{Key: store.Key{}, At: 1, Op: OpUpsert}}, 0, []error{ErrInvalidEvent, store.ErrKeyShape}},
		{"wrong type", []Event{up("k", 1), up("k", 2), up(int64(3), 3)}, 2, []error{ErrInvalidEvent, store.ErrKeyShape}},
		{"null seq", []Event{{Key: store.Key{"k"}, At: 1, SeqNull: true, Op: OpDelete}}, 0, []error{ErrInvalidEvent}},
		{"no op", []Event{{Key: store.Key{"k"}, At: 1}}, 0, []error{ErrInvalidEvent}},
		{"bad attr", []Event{{Key: store.Key{"k"}, At: 1, Op: OpUpsert, Attrs: store.Attrs{"a": struct{}{}}}}, 0, []error{ErrInvalidEvent, ErrInvalidAttr}},
		{"key column attr", []Event{{Key: store.Key{"k"}, At: 1, Op: OpUpsert, Attrs: store.Attrs{"id": "x"}}}, 0, []error{ErrInvalidEvent, ErrInvalidAttr}},
		{"at +inf", []Event{{Key: store.Key{"k"}, At: store.Infinity, Op: OpDelete}}, 0, []error{ErrInvalidEvent}},
	}
	for _, c := range cases {
		_, err := Apply(db, "c", "b", c.events)
		var ee *EventError
		if !errors.As(err, &ee) || ee.Index != c.index {
			t.Errorf("%s: got %v, want an EventError for event %d", c.name, err, c.index)
			continue
		}
		for _, target := range c.is {
			if !errors.Is(err, target) {
				t.Errorf("%s: %v does not match %v", c.name, err, target)
			}
		}
	}
	if db.LastTx() != 0 {
		t.Fatalf("rejected batches committed something: last tx %d", db.LastTx())
	}

	if _, err := Apply(db, "c", "b1", []Event{up("k", 100)}); err != nil {
		t.Fatal(err)
	}
	_, err := Apply(db, "c", "b2", []Event{up("j", 1), up("k", 95), up("k", 89), up("k", 80)})
	var ee *EventError
	if !errors.As(err, &ee) || ee.Index != 2 || !errors.Is(err, ErrTooLate) {
		t.Fatalf("too late: got %v, want ErrTooLate naming event 2", err)
	}
	if _, err := Apply(db, "c", "", []Event{up("k", 1)}); !errors.Is(err, ErrInvalidBatch) {
		t.Fatalf("empty batch id: got %v", err)
	}
	if _, err := Apply(db, "p", "b", []Event{up("k", 1)}); !errors.Is(err, ErrWrongKind) {
		t.Fatalf("Apply on a periods table: got %v", err)
	}
	if _, err := Apply(db, "nope", "b", nil); !errors.Is(err, store.ErrUnknownTable) {
		t.Fatalf("Apply on an unknown table: got %v", err)
	}
	_, err = Update(db, func(tx *Tx) error {
		for _, err := range []error{
			tx.Put("c", store.Key{"k"}, nil, 1, 2),
			tx.Delete("c", store.Key{"k"}, 1, 2),
			func() error { _, err := tx.Upsert("c", store.Key{"k"}, nil, 1); return err }(),
			func() error { _, err := tx.DeleteAt("c", store.Key{"k"}, 1); return err }(),
		} {
			if !errors.Is(err, ErrWrongKind) {
				return fmt.Errorf("periods write on a changes table: got %v, want ErrWrongKind", err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestApplyInOneTransaction applies several batches in one transaction: each
// sees the events, batch ids and versions the earlier ones wrote.
func TestApplyInOneTransaction(t *testing.T) {
	db := openApplyDB(t)
	mustCreate(t, db, store.TableDef{Name: "c", Kind: store.Changes, Key: []store.KeyColumn{{Name: "id", Type: store.String}}, Lateness: 5})
	ev := func(at int64, op Op, v int64) Event {
		return Event{Key: store.Key{"k"}, At: at, Op: op, Attrs: store.Attrs{"v": v}}
	}
	var results []ApplyResult
	c, err := Update(db, func(tx *Tx) error {
		for i, batch := range [][]Event{
			{ev(10, OpUpsert, 1), ev(20, OpUpsert, 2)},
			{ev(15, OpUpsert, 3), ev(20, OpUpsert, 2)},
			{ev(30, OpDelete, 0), ev(26, OpUpsert, 4)},
			{ev(10, OpUpsert, 1)}, // a replay of batch 0 within the transaction
		} {
			id := fmt.Sprintf("b%d", i%3)
			res, err := tx.Apply("c", id, batch)
			if err != nil {
				return err
			}
			results = append(results, res)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !results[3].Replayed || results[1].Duplicates != 1 || results[2].Compacted == 0 {
		t.Fatalf("results %+v", results)
	}
	got := keyVersionsOf(t, db, "c", store.Key{"k"}, store.Infinity)
	want := []applyVersion{{10, 15, `{v=1}`}, {15, 20, `{v=3}`}, {20, 26, `{v=2}`}, {26, 30, `{v=4}`}}
	if !slices.Equal(got, want) {
		t.Fatalf("versions %v, want %v", got, want)
	}
	if c.Tx != results[0].Tx {
		t.Fatalf("commit tx %d, results say %d", c.Tx, results[0].Tx)
	}
	testutil.Verify(t, db)
}

type applyVersion struct {
	from, to int64
	attrs    string
}

func keyVersionsOf(t testing.TB, db *store.DB, table string, key store.Key, tx int64) []applyVersion {
	t.Helper()
	tbl, err := db.Table(table)
	if err != nil {
		t.Fatal(err)
	}
	tuple, err := tbl.AppendKey(nil, key)
	if err != nil {
		t.Fatal(err)
	}
	s, err := db.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	vs, err := s.KeyVersions(tbl, tuple, tx)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]applyVersion, len(vs))
	for i, v := range vs {
		out[i] = applyVersion{v.ValidFrom, v.ValidTo, attrsText(v.Attrs)}
	}
	return out
}

// attrsText renders attributes as {a=1 b=2}, names sorted.
func attrsText(a store.Attrs) string {
	parts := make([]string, 0, len(a))
	for _, name := range a.Names() {
		parts = append(parts, fmt.Sprintf("%s=%v", name, a[name]))
	}
	return "{" + strings.Join(parts, " ") + "}"
}

func openApplyDB(t testing.TB) *store.DB {
	t.Helper()
	db, err := store.Open("", store.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func mustCreate(t testing.TB, db *store.DB, def store.TableDef) {
	t.Helper()
	if _, err := db.CreateTable(def); err != nil {
		t.Fatal(err)
	}
}

// TestVerifyChangesDetects damages changes tables behind Apply's back and checks
// that Verify reports invariant 6.
func TestVerifyChangesDetects(t *testing.T) {
	db := openApplyDB(t)
	mustCreate(t, db, store.TableDef{Name: "c", Kind: store.Changes, Key: []store.KeyColumn{{Name: "id", Type: store.String}}})
	tbl, _ := db.Table("c")
	ev := func(id string, at int64, v int64) Event {
		return Event{Key: store.Key{id}, At: at, Op: OpUpsert, Attrs: store.Attrs{"v": v}}
	}
	if _, err := Apply(db, "c", "b1", []Event{ev("a", 10, 1), ev("a", 20, 2), ev("b", 5, 1)}); err != nil {
		t.Fatal(err)
	}
	testutil.Verify(t, db)
	damage := func(fn func(w *store.Writer) error) {
		t.Helper()
		w, err := db.BeginWrite(sealed.Key{})
		if err != nil {
			t.Fatal(err)
		}
		if err := fn(w); err != nil {
			w.Abort()
			t.Fatal(err)
		}
		if err := w.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	tuple := func(id string) []byte {
		b, _ := tbl.AppendKey(nil, store.Key{id})
		return b
	}
	// An event the versions do not reflect.
	damage(func(w *store.Writer) error {
		return w.PutEvent(tbl, tuple("a"), store.LogEvent{At: 15, Op: store.EventUpsert, Attrs: store.Attrs{"v": int64(3)}})
	})
	// A checkpoint that claims events of b were compacted although they are
	// still in the log.
	damage(func(w *store.Writer) error {
		return w.PutCheckpoint(tbl, tuple("b"), store.Checkpoint{Through: 100})
	})
	rep, err := store.Verify(db)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, p := range rep.Problems {
		if p.Invariant == 6 {
			keys = append(keys, p.Key.String())
		}
	}
	if !slices.Equal(keys, []string{"a", "b"}) {
		t.Fatalf("invariant 6 problems for keys %v, want [a b]; report:\n%s", keys, rep)
	}
}
