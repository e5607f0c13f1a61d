package store

import (
	"errors"
	"slices"
	"testing"

	"github.com/bitempo/bitempo/internal/sealed"

	"github.com/bitempo/bitempo/layout"
)

// Records store attribute ordinals. An ordinal is persisted by the commit that
// first uses it; a snapshot that meets one the DB has not learned yet reads its
// name from its own view; and a name table with a gap is refused at Open.
func TestAttrOrdinals(t *testing.T) {
	db, tbl := openTableP(t, Options{InMemory: true})
	if err := db.DeclareAttrNames(tbl, []string{"z", "a"}); err != nil {
		t.Fatal(err)
	}
	a, _ := tbl.AppendKey(nil, Key{"a"})
	commitEvents(t, db, func(w *Writer) error {
		return w.Assert(tbl, tbl.NewVersion(Key{"a"}, a, 1, Infinity, w.AllocSK(tbl), Attrs{"a": int64(1), "m": "new", "z": true}))
	})
	if got := db.AttrNames(tbl); !slices.Equal(got, []string{"z", "a", "m"}) {
		t.Fatalf("names %v, want [z a m]", got)
	}
	// A snapshot of a DB that has not learned "m" yet (as between a commit's
	// publication and its bookkeeping) reads it from its view.
	db.mu.Lock()
	db.attrList[tbl.ID] = db.attrList[tbl.ID][:2]
	db.mu.Unlock()
	s, err := db.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	v, reason, err := s.VersionAt(tbl, a, 5, Infinity)
	if err != nil || reason != Found || v.Attrs["m"] != "new" || v.Attrs["z"] != true || v.Attrs["a"] != int64(1) {
		t.Fatalf("read with an unlearned ordinal: %v %v %v", v.String(), reason, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// A gap in the name table would misname every later attribute.
	if err := db.RawSet(sealed.Key{}, layout.AttrNameKey(tbl.ID, 1), nil); err != nil {
		t.Fatal(err)
	}
	view, err := db.engine.View()
	if err != nil {
		t.Fatal(err)
	}
	defer view.Close()
	if _, err := readAttrNames(view, tbl.ID); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("name table with a gap: %v, want ErrCorrupt", err)
	}
}
