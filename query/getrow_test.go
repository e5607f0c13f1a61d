package query_test

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// TestGetRowMatchesGet writes random versions (attributes of every scalar
// type, SCD2 closes whose retired records share their successor's
// attributes, deletions that leave gaps, inferred members) and checks that
// GetRow agrees with Get at random points of the bitemporal plane, past
// transaction times and misses of every kind included, with and without a
// projection, on a snapshot and on the DB: the same miss error, or a row
// whose fields, copy (Row.Version), attribute walk and every accessor give
// Get's version.
func TestGetRowMatchesGet(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		w := newRandomWorld(t)
		defer w.db.Close()
		// One reference per name for the whole test, as a hot loop keeps
		// them: each resolves once per snapshot it meets.
		refs := map[string]*store.AttrRef{}
		for _, n := range append(slices.Clone(projectPool), "zz") {
			refs[n] = store.NewAttrRef(n)
		}
		for range rapid.IntRange(1, 6).Draw(t, "commits") {
			if rapid.IntRange(0, 3).Draw(t, "infer") == 0 {
				w.inferMember(t)
			} else {
				w.writeAttrs(t)
			}
			snap, err := w.db.Snapshot()
			if err != nil {
				t.Fatal(err)
			}
			for i := range rapid.IntRange(1, 12).Draw(t, "reads") {
				var r store.Reader = snap
				if rapid.IntRange(0, 3).Draw(t, "on the DB") == 0 {
					r = w.db
				}
				key := drawKey(t, w.keys, fmt.Sprintf("read %d key", i))
				at := query.AsOf{Valid: drawTime(t, "valid"), Tx: w.drawTx(t, "tx")}
				var opts query.GetOptions
				if rapid.Bool().Draw(t, "projected") {
					opts.Project = drawProjection(t)
				}
				checkGetRow(t, r, key, at, opts, refs)
			}
			if err := snap.Close(); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// inferMember creates an inferred member of a random key through
// txn.ResolveInferred, when the key has no version at the latest commit.
func (w *randomWorld) inferMember(t *rapid.T) {
	last := w.db.LastTx()
	fact := query.Fact{Key: drawKey(t, w.keys, "inferred key"), At: rapid.Int64Range(0, 30).Draw(t, "inferred at")}
	if _, err := txn.ResolveInferred(w.db, "r", []query.Fact{fact}, query.ResolveOptions{Miss: query.MissNull}); err != nil {
		t.Fatal(err)
	}
	if tx := w.db.LastTx(); tx != last {
		w.txs = append(w.txs, tx)
	}
}

// checkGetRow checks one read of GetRow against Get's.
func checkGetRow(t *rapid.T, r store.Reader, key store.Key, at query.AsOf, opts query.GetOptions, refs map[string]*store.AttrRef) {
	want, wantErr := query.Get(r, "r", key, at, opts)
	called := false
	err := query.GetRow(r, "r", key, at, opts, func(row *store.Row) error {
		called = true
		if wantErr != nil {
			return nil // reported below
		}
		if got := rowString(t, row, refs, opts.Project); got != versionString(&want, refs, opts.Project) {
			t.Fatalf("GetRow(%v, %+v, %q) row:\n%s\nGet:\n%s", key, at, opts.Project, got, versionString(&want, refs, opts.Project))
		}
		v, err := row.Version()
		if err != nil {
			t.Fatal(err)
		}
		if a, b := fmtRecord(v), fmtRecord(want); a != b || v.Inferred != want.Inferred {
			t.Fatalf("GetRow(%v, %+v, %q) Row.Version: %s (inferred %v), Get: %s (inferred %v)", key, at, opts.Project, a, v.Inferred, b, want.Inferred)
		}
		return nil
	})
	switch {
	case wantErr == nil && (err != nil || !called):
		t.Fatalf("GetRow(%v, %+v, %q): error %v, called %v; Get found %s", key, at, opts.Project, err, called, fmtRecord(want))
	case wantErr != nil && (called || err == nil || err.Error() != wantErr.Error()):
		t.Fatalf("GetRow(%v, %+v, %q): error %v, called %v; Get: %v", key, at, opts.Project, err, called, wantErr)
	case wantErr != nil:
		var a, b *query.Miss
		if errors.As(err, &a) != errors.As(wantErr, &b) || a != nil && a.Reason != b.Reason {
			t.Fatalf("GetRow(%v, %+v): %#v, Get: %#v", key, at, err, wantErr)
		}
	}
}

// readable returns the names of refs a row read with projection names holds:
// the projected ones, or all without a projection.
func readable(refs map[string]*store.AttrRef, names []string) []string {
	var out []string
	for _, n := range slices.Sorted(maps.Keys(refs)) {
		if len(names) == 0 || slices.Contains(names, n) {
			out = append(out, n)
		}
	}
	return out
}

// rowString renders a row read with projection names: its fields, its key,
// its attributes as Walk finds them, and the value of each reference to a
// name it holds through Attr and the typed accessors.
func rowString(t *rapid.T, row *store.Row, refs map[string]*store.AttrRef, names []string) string {
	key, err := row.Key()
	if err != nil {
		t.Fatal(err)
	}
	walked := store.Attrs{}
	if err := row.Walk(func(name string, v *encoding.Value) error {
		walked[name] = v.Any()
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%v valid [%d, %d) tx [%d, %d) sk %d inferred %v %v\n", key, row.ValidFrom, row.ValidTo, row.TxFrom, row.TxTo, row.SK, row.Inferred, walked)
	for _, n := range readable(refs, names) {
		c := refs[n]
		var v encoding.Value
		found, err := row.Attr(c, &v)
		if err != nil {
			t.Fatal(err)
		}
		var typed any = "-"
		if i, ok := row.Int64(c); ok {
			typed = i
		} else if f, ok := row.Float64(c); ok {
			typed = f
		} else if x, ok := row.Bool(c); ok {
			typed = x
		} else if s, ok := row.String(c); ok {
			typed = s
		}
		if found {
			fmt.Fprintf(&b, "%s=%v typed %v\n", n, v.Any(), typed)
		} else {
			fmt.Fprintf(&b, "%s absent typed %v\n", n, typed)
		}
	}
	return b.String()
}

// versionString renders a version as rowString renders the row of it.
func versionString(v *store.Version, refs map[string]*store.AttrRef, names []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%v valid [%d, %d) tx [%d, %d) sk %d inferred %v %v\n", v.Key, v.ValidFrom, v.ValidTo, v.TxFrom, v.TxTo, v.SK, v.Inferred, v.Attrs)
	for _, n := range readable(refs, names) {
		x, found := v.Attrs[n]
		if !found {
			fmt.Fprintf(&b, "%s absent typed -\n", n)
			continue
		}
		var typed any = "-"
		switch val := encoding.ValueOf(x); val.Kind {
		case encoding.KindInt:
			typed = val.Int
		case encoding.KindFloat:
			typed = val.Float
		case encoding.KindBool:
			typed = val.Bool
		case encoding.KindString:
			typed = string(val.Bytes)
		}
		fmt.Fprintf(&b, "%s=%v typed %v\n", n, x, typed)
	}
	return b.String()
}
