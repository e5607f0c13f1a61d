package store

import (
	"fmt"
	"sync"
	"testing"
)

// TestProjectViewCache checks the cache of projected views: the same list of
// names gives the same view, without allocating; another order, another list
// or a raw-attributes table gives another; a snapshot that knows a name the
// view was made without rebuilds it, and reads it; ever-new lists never hold
// more than maxViews; and views read the same as fresh ones.
func TestProjectViewCache(t *testing.T) {
	db, tbl := openTableP(t, Options{InMemory: true})
	a, _ := tbl.AppendKey(nil, Key{"a"})
	commitEvents(t, db, func(w *Writer) error {
		return w.Assert(tbl, tbl.NewVersion(Key{"a"}, a, 1, Infinity, w.AllocSK(tbl), Attrs{"x": int64(1), "y": "why", "z": true}))
	})
	s, err := db.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"x", "later"}
	v := s.Project(tbl, names)
	if s.Project(tbl, nil) != tbl || v == tbl || !v.Projected() || tbl.Projected() {
		t.Fatalf("views: nil list %p, view %p of %p", s.Project(tbl, nil), v, tbl)
	}
	if got := s.Project(tbl, []string{"x", "later"}); got != v {
		t.Fatalf("the same list (another slice) made another view")
	}
	if n := testing.AllocsPerRun(50, func() { s.Project(tbl, names) }); n != 0 {
		t.Fatalf("a cached view costs %v allocations", n)
	}
	raw := s.Project(tbl.WithRawAttrs(), names)
	for _, other := range []*Table{s.Project(tbl, []string{"later", "x"}), s.Project(tbl, []string{"x"}), s.Project(tbl, []string{}), raw} {
		if other == v {
			t.Fatalf("another list or table shares the view")
		}
	}
	if !raw.rawAttrs || v.rawAttrs || s.Project(v, names) != v {
		t.Fatalf("raw view %v, view %v", raw.rawAttrs, v.rawAttrs)
	}
	got, _, err := s.VersionAt(v, a, 5, Infinity)
	if err != nil || !got.Attrs.Equal(Attrs{"x": int64(1)}) {
		t.Fatalf("read through the view: %v, %v", got.String(), err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// "later" gets an ordinal: a newer snapshot rebuilds the view, the old
	// one stays right for an older snapshot.
	commitEvents(t, db, func(w *Writer) error {
		b, _ := tbl.AppendKey(nil, Key{"b"})
		return w.Assert(tbl, tbl.NewVersion(Key{"b"}, b, 1, Infinity, w.AllocSK(tbl), Attrs{"later": "yes", "z": false}))
	})
	s2, err := db.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	v2 := s2.Project(tbl, names)
	if v2 == v || v2.proj.Last == v.proj.Last {
		t.Fatalf("view not rebuilt for a new ordinal: last %d, before %d", v2.proj.Last, v.proj.Last)
	}
	for _, key := range []Key{{"a"}, {"b"}} {
		tuple, _ := tbl.AppendKey(nil, key)
		fresh := s2.newView(tbl, names)
		want, _, err1 := s2.VersionAt(fresh, tuple, 5, Infinity)
		got, _, err2 := s2.VersionAt(v2, tuple, 5, Infinity)
		if err1 != nil || err2 != nil || !got.Attrs.Equal(want.Attrs) {
			t.Fatalf("%v through the cached view: %v, fresh %v (%v, %v)", key, got.Attrs, want.Attrs, err1, err2)
		}
	}

	// Ever-new lists: the cache stays bounded.
	for i := range 10 * maxViews {
		s2.Project(tbl, []string{fmt.Sprint("n", i)})
	}
	tbl.views.mu.RLock()
	n := len(tbl.views.views)
	tbl.views.mu.RUnlock()
	if n > maxViews {
		t.Fatalf("the cache holds %d views, more than %d", n, maxViews)
	}

	// Concurrent readers, each on its own snapshot (a snapshot is for one
	// goroutine), share the cache (go test -race checks the locking).
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			s, err := db.Snapshot()
			if err != nil {
				t.Error(err)
				return
			}
			defer s.Close()
			for i := range 200 {
				p := s.Project(tbl, []string{"x", fmt.Sprint("g", g, "-", i%(maxViews/2))})
				if got, _, err := s.VersionAt(p, a, 5, Infinity); err != nil || !got.Attrs.Equal(Attrs{"x": int64(1)}) {
					t.Errorf("concurrent read: %v, %v", got.Attrs, err)
					return
				}
			}
		})
	}
	wg.Wait()
}
