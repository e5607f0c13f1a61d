package query_test

import (
	"errors"
	"fmt"
	"iter"
	"strings"
	"testing"

	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// scans returns one instance of every scan of the package, rendered to text so
// that rows of different types compare alike.
func scans(r store.Reader) map[string]iter.Seq2[string, error] {
	return map[string]iter.Seq2[string, error]{
		"snapshot":       text(query.Snapshot(r, "customers", query.AsOf{Valid: 3}, query.KeyRange{}, query.SnapshotOptions{}), fmtRecord),
		"snapshot-past":  text(query.Snapshot(r, "customers", query.AsOf{Valid: 3, Tx: 101}, query.KeyRange{}, query.SnapshotOptions{}), fmtRecord),
		"history":        text(query.History(r, "customers", store.Key{"c1"}, store.NegInfinity, store.Infinity, query.HistoryOptions{}), fmtRecord),
		"history-range":  text(query.HistoryRange(r, "customers", query.KeyRange{}, store.NegInfinity, store.Infinity, query.HistoryOptions{}), fmtRecord),
		"history-past":   text(query.HistoryRange(r, "customers", query.KeyRange{}, store.NegInfinity, store.Infinity, query.HistoryOptions{Tx: 101}), fmtRecord),
		"audit":          text(query.Audit(r, "customers", store.Key{"c1"}, query.AuditOptions{}), fmtRecord),
		"changes":        text(query.Changes(r, "customers", 0, query.Latest, "", query.ChangesOptions{}), func(c query.Change) string { return fmt.Sprint(c.Tx, c.Op, fmtRecord(c.Version)) }),
		"gaps":           text(query.Gaps(r, "customers", query.GapOptions{}), func(g query.KeyGaps) string { return fmt.Sprint(g) }),
		"gaps-past":      text(query.Gaps(r, "customers", query.GapOptions{Tx: 101}), func(g query.KeyGaps) string { return fmt.Sprint(g) }),
		"history-clip-2": text(query.HistoryRange(r, "customers", query.KeyRange{}, 2, 9, query.HistoryOptions{Clip: true, Limit: 2}), fmtRecord),
	}
}

func text[T any](seq iter.Seq2[T, error], render func(T) string) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		for v, err := range seq {
			s := ""
			if err == nil {
				s = render(v)
			}
			if !yield(s, err) {
				return
			}
		}
	}
}

func drain(t *testing.T, seq iter.Seq2[string, error]) string {
	t.Helper()
	var b strings.Builder
	for s, err := range seq {
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString(s + "\n")
	}
	return b.String()
}

// moreCustomers adds corrections to newCustomers' store so that every scan has
// several rows and history at tx 101 differs from now.
func moreCustomers(t *testing.T) *store.DB {
	db := newCustomers(t)
	if _, err := txn.Update(db, func(tx *txn.Tx) error {
		if _, err := tx.Upsert("customers", store.Key{"c1"}, store.Attrs{"city": "Molde"}, 5); err != nil {
			return err
		}
		return tx.Delete("customers", store.Key{"c3"}, 2, 4)
	}); err != nil {
		t.Fatal(err)
	}
	return db
}

// TestScansIgnoreConcurrentCommits commits after every row a scan yields: the
// scan, reading from a *store.DB, keeps returning its snapshot's rows.
func TestScansIgnoreConcurrentCommits(t *testing.T) {
	for name := range scans(nil) {
		db := moreCustomers(t)
		want := drain(t, scans(db)[name])
		var got strings.Builder
		n := 0
		for s, err := range scans(db)[name] {
			if err != nil {
				t.Fatal(err)
			}
			got.WriteString(s + "\n")
			n++
			if _, err := txn.Update(db, func(tx *txn.Tx) error {
				key := store.Key{fmt.Sprintf("c%d", n%4+1)}
				if err := tx.Put("customers", key, store.Attrs{"city": fmt.Sprint("x", n)}, 1, 7); err != nil {
					return err
				}
				return tx.Delete("customers", store.Key{"c2"}, 0, 100)
			}); err != nil {
				t.Fatal(err)
			}
		}
		if got.String() != want {
			t.Fatalf("%s during commits:\n%s\nwant\n%s", name, got.String(), want)
		}
		if n == 0 {
			t.Fatalf("%s: no rows; the test needs some", name)
		}
	}
}

// TestEarlyExitReleasesResources leaves every scan after its first row, on a
// *store.DB (each scan's own snapshot must be released) and on a
// *store.Snapshot (its iterators must be closed): then Snapshot.Close and
// DB.Close succeed, and Pebble reports no leaked iterator or snapshot.
func TestEarlyExitReleasesResources(t *testing.T) {
	db := moreCustomers(t)
	s, err := db.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []store.Reader{db, s} {
		for name, seq := range scans(r) {
			rows := 0
			for _, err := range seq {
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				rows++
				break
			}
			if rows != 1 {
				t.Fatalf("%s: no row", name)
			}
		}
		page, err := query.HistoryPage(r, "customers", query.KeyRange{}, store.NegInfinity, store.Infinity, query.HistoryOptions{Limit: 1})
		if err != nil || page.Next == "" {
			t.Fatalf("page: %v %v", page, err)
		}
		if _, err := query.ChangesPage(r, "customers", 0, query.Latest, 1, "", query.ChangesOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatalf("DB.Close after early exits: %v", err)
	}
}

func TestReadsOnClosedReaders(t *testing.T) {
	db := moreCustomers(t)
	s, err := db.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for name, seq := range scans(s) {
		for _, err := range seq {
			if !errors.Is(err, store.ErrClosed) {
				t.Fatalf("%s on a closed snapshot: %v", name, err)
			}
		}
	}
	if _, err := query.GetBySK(s, "customers", 1, query.Latest, query.GetOptions{}); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("GetBySK on a closed snapshot: %v", err)
	}
	if _, err := query.Resolve(s, "customers", []query.Fact{{Key: store.Key{"c1"}}}, query.ResolveOptions{}); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("Resolve on a closed snapshot: %v", err)
	}
}

func TestCursorErrors(t *testing.T) {
	db := moreCustomers(t)
	if _, err := db.CreateTable(store.TableDef{Name: "other", Key: []store.KeyColumn{{Name: "id", Type: store.String}}}); err != nil {
		t.Fatal(err)
	}
	page, err := query.HistoryPage(db, "customers", query.KeyRange{}, store.NegInfinity, store.Infinity, query.HistoryOptions{Limit: 1})
	if err != nil || page.Next == "" {
		t.Fatal(page, err)
	}
	changes, err := query.ChangesPage(db, "customers", 0, query.Latest, 1, "", query.ChangesOptions{})
	if err != nil || changes.Next == "" {
		t.Fatal(changes, err)
	}
	history := func(table, cur string, tx int64) error {
		_, err := query.HistoryPage(db, table, query.KeyRange{}, store.NegInfinity, store.Infinity, query.HistoryOptions{Limit: 1, Cursor: cur, Tx: tx})
		return err
	}
	feed := func(table, cur string) error {
		_, err := query.ChangesPage(db, table, 0, query.Latest, 1, cur, query.ChangesOptions{})
		return err
	}
	for name, err := range map[string]error{
		"garbage":                history("customers", "not a cursor!", 0),
		"truncated":              history("customers", page.Next[:6], 0),
		"another table":          history("other", page.Next, 0),
		"another transaction":    history("customers", page.Next, 1),
		"a change-feed cursor":   history("customers", changes.Next, 0),
		"a history cursor":       feed("customers", page.Next),
		"changes, another table": feed("other", changes.Next),
		"changes, truncated":     feed("customers", changes.Next[:len(changes.Next)-2]),
	} {
		if !errors.Is(err, query.ErrBadCursor) {
			t.Errorf("%s: %v, want ErrBadCursor", name, err)
		}
	}
}
