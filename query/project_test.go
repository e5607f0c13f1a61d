package query_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/internal/testutil"
	"github.com/bitempo/bitempo/internal/testutil/randstore"
	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// The projection tests write random versions whose attributes are random
// subsets of projectPool with values of every scalar type, then check that a
// projected Snapshot, History and Resolve return exactly the brute-force answer
// (from every key's records, Snapshot.KeyRecords) restricted to the projected
// names: no attribute outside the projection, every one inside it that the
// version holds, with its value.

var projectPool = []string{"a", "b", "c", "d", "e"}

// restrict returns the attributes of a named in names (a fresh map).
func restrict(a store.Attrs, names []string) store.Attrs {
	out := store.Attrs{}
	for _, n := range names {
		if v, ok := a[n]; ok {
			out[n] = v
		}
	}
	return out
}

func drawAttrs(t *rapid.T) store.Attrs {
	a := store.Attrs{}
	for _, n := range projectPool {
		switch rapid.IntRange(0, 6).Draw(t, "attr "+n) {
		case 1:
			a[n] = rapid.Int64().Draw(t, "int")
		case 2:
			a[n] = rapid.StringN(0, 12, -1).Draw(t, "string")
		case 3:
			a[n] = rapid.Float64().Draw(t, "float")
		case 4:
			a[n] = rapid.Bool().Draw(t, "bool")
		case 5:
			a[n] = time.UnixMicro(rapid.Int64Range(-1e15, 1e15).Draw(t, "time")).UTC()
		case 6:
			a[n] = rapid.Uint64Range(1<<63, 1<<64-1).Draw(t, "uint")
		}
	}
	return a
}

// drawProjection draws names from the pool, a name no version holds and
// repeats.
func drawProjection(t *rapid.T) []string {
	return rapid.SliceOfN(rapid.SampledFrom(append(slices.Clone(projectPool), "zz")), 1, 4).Draw(t, "project")
}

func (w *randomWorld) writeAttrs(t *rapid.T) {
	w.txs = append(w.txs, randstore.Write(t, w.db, randstore.Rapid(t), randstore.History{
		Table: "r", Commits: 1, MaxOps: 3,
		Ops:   []randstore.Op{randstore.Put, randstore.Upsert, randstore.Reupsert, randstore.Delete},
		Key:   func(int) store.Key { return drawKey(t, w.keys, "key") },
		Attrs: func() store.Attrs { return drawAttrs(t) },
		Valid: 26, PutLen: 10, DeleteLen: 10, Log: t.Logf,
	})...)
}

func TestProjectionMatchesBruteForce(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		w := newRandomWorld(t)
		defer w.db.Close()
		for range rapid.IntRange(1, 8).Draw(t, "commits") {
			w.writeAttrs(t)
			recs := w.records(t)
			w.checkProjectedSnapshot(t, recs)
			w.checkProjectedHistory(t, recs)
			w.checkProjectedResolve(t)
			w.checkProjectedPointReads(t)
		}
	})
}

func restrictAll(vs []store.Version, names []string) []store.Version {
	out := slices.Clone(vs)
	for i := range out {
		out[i].Attrs = restrict(out[i].Attrs, names)
	}
	return out
}

func (w *randomWorld) checkProjectedSnapshot(t *rapid.T, recs [][]store.Version) {
	at := query.AsOf{Valid: drawTime(t, "snapshot valid"), Tx: w.drawTx(t, "snapshot tx")}
	kr := w.drawRange(t)
	names := drawProjection(t)
	var want []store.Version
	for i, k := range w.keys {
		if !inRange(k, kr) {
			continue
		}
		for _, v := range testutil.AliveAt(recs[i], w.concreteTx(at.Tx)) {
			if v.Covers(at.Valid) {
				want = append(want, v)
			}
		}
	}
	got := seqRows(t, query.Snapshot(w.db, "r", at, kr, query.SnapshotOptions{Project: names}))
	if a, b := renderAll(got, fmtRecord), renderAll(restrictAll(want, names), fmtRecord); a != b {
		t.Fatalf("Snapshot(%+v, %+v, %q):\n%s\nwant\n%s", at, kr, names, a, b)
	}
}

func (w *randomWorld) checkProjectedHistory(t *rapid.T, recs [][]store.Version) {
	opts := query.HistoryOptions{Tx: w.drawTx(t, "history tx"), Project: drawProjection(t)}
	kr := w.drawRange(t)
	var want []store.Version
	for i, k := range w.keys {
		if inRange(k, kr) {
			want = append(want, testutil.AliveAt(recs[i], w.concreteTx(opts.Tx))...)
		}
	}
	got := seqRows(t, query.HistoryRange(w.db, "r", kr, store.NegInfinity, store.Infinity, opts))
	if a, b := renderAll(got, fmtRecord), renderAll(restrictAll(want, opts.Project), fmtRecord); a != b {
		t.Fatalf("HistoryRange(%+v, %+v):\n%s\nwant\n%s", opts, kr, a, b)
	}
	// The encoded form walks the same attributes.
	opts.RawAttrs = true
	raw := walkAll(t, seqRows(t, query.HistoryRange(w.db, "r", kr, store.NegInfinity, store.Infinity, opts)))
	if a, b := renderAll(raw, fmtRecord), renderAll(restrictAll(want, opts.Project), fmtRecord); a != b {
		t.Fatalf("HistoryRange(%+v, %+v) with RawAttrs:\n%s\nwant\n%s", opts, kr, a, b)
	}
}

// walkAll returns vs with each version's encoded attributes (RawAttrs) walked
// into its Attrs. A retired record that shares its successor's attributes
// comes back decoded, in Attrs, even when a read asks for them encoded.
func walkAll(t *rapid.T, vs []store.Version) []store.Version {
	for i := range vs {
		raw := vs[i].RawAttrs()
		if raw.IsZero() {
			continue
		}
		if vs[i].Attrs != nil {
			t.Fatalf("version %v read with RawAttrs has both forms of its attributes", &vs[i])
		}
		a := store.Attrs{}
		if err := raw.Walk(func(name string, v *encoding.Value) error {
			a[name] = v.Any()
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		vs[i].Attrs = a
	}
	return vs
}

func (w *randomWorld) checkProjectedResolve(t *rapid.T) {
	facts := w.drawFacts(t)
	want := w.getAll(t, facts)
	names := drawProjection(t)
	for i := range want {
		if want[i].Found() {
			want[i].Attrs = restrict(want[i].Attrs, names)
		}
	}
	got, err := query.Resolve(w.db, "r", facts, query.ResolveOptions{Miss: query.MissNull, Attrs: true, Project: names})
	if err != nil {
		t.Fatal(err)
	}
	if a, b := renderAll(got, fmtResolution), renderAll(want, fmtResolution); a != b {
		t.Fatalf("Resolve(%v, %q):\n%s\nwant\n%s", facts, names, a, b)
	}
	// The encoded form walks the same attributes.
	raw, err := query.Resolve(w.db, "r", facts, query.ResolveOptions{Miss: query.MissNull, Attrs: true, RawAttrs: true, Project: names})
	if err != nil {
		t.Fatal(err)
	}
	for i := range raw {
		if !raw[i].Found() {
			continue
		}
		// A retired record that shares its successor's attributes comes back
		// decoded, in Attrs, as without a projection.
		a := raw[i].Attrs
		if a == nil {
			a = store.Attrs{}
		}
		if err := raw[i].RawAttrs().Walk(func(name string, v *encoding.Value) error {
			a[name] = v.Any()
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if !a.Equal(want[i].Attrs) {
			t.Fatalf("Resolve RawAttrs of fact %d (%q): %v, want %v", i, names, a, want[i].Attrs)
		}
	}
}

// checkProjectedPointReads checks Get, GetBySK, Audit and
// Changes with a projection against the same reads without one (which
// TestReadsMatchBruteForce checks) restricted to the projected names.
func (w *randomWorld) checkProjectedPointReads(t *rapid.T) {
	names := drawProjection(t)
	key := drawKey(t, w.keys, "point key")
	at := query.AsOf{Valid: drawTime(t, "point valid"), Tx: w.drawTx(t, "point tx")}
	render := func(v store.Version, err error) string {
		if err != nil {
			return err.Error()
		}
		return fmtRecord(v)
	}
	whole, err := query.Get(w.db, "r", key, at, query.GetOptions{})
	if a, b := render(query.Get(w.db, "r", key, at, query.GetOptions{Project: names})), render(restrictAll([]store.Version{whole}, names)[0], err); a != b {
		t.Fatalf("Get(%v, %+v, %q): %s, want %s", key, at, names, a, b)
	}
	for sk := uint64(1); sk <= 3; sk++ {
		whole, err := query.GetBySK(w.db, "r", sk, at.Tx, query.GetOptions{})
		if a, b := render(query.GetBySK(w.db, "r", sk, at.Tx, query.GetOptions{Project: names})), render(restrictAll([]store.Version{whole}, names)[0], err); a != b {
			t.Fatalf("GetBySK(%d, %d, %q): %s, want %s", sk, at.Tx, names, a, b)
		}
	}
	audit := seqRows(t, query.Audit(w.db, "r", key, query.AuditOptions{}))
	if a, b := renderAll(seqRows(t, query.Audit(w.db, "r", key, query.AuditOptions{Project: names})), fmtRecord), renderAll(restrictAll(audit, names), fmtRecord); a != b {
		t.Fatalf("Audit(%v, %q):\n%s\nwant\n%s", key, names, a, b)
	}
	rawAudit := walkAll(t, seqRows(t, query.Audit(w.db, "r", key, query.AuditOptions{Project: names, RawAttrs: true})))
	if a, b := renderAll(rawAudit, fmtRecord), renderAll(restrictAll(audit, names), fmtRecord); a != b {
		t.Fatalf("Audit(%v, %q) with RawAttrs:\n%s\nwant\n%s", key, names, a, b)
	}
	fmtChange := func(c query.Change) string { return fmt.Sprintf("%d %s %s", c.Tx, c.Op, fmtRecord(c.Version)) }
	changes := seqRows(t, query.Changes(w.db, "r", 0, query.Latest, "", query.ChangesOptions{}))
	for i := range changes {
		changes[i].Version.Attrs = restrict(changes[i].Version.Attrs, names)
	}
	if a, b := renderAll(seqRows(t, query.Changes(w.db, "r", 0, query.Latest, "", query.ChangesOptions{Project: names})), fmtChange), renderAll(changes, fmtChange); a != b {
		t.Fatalf("Changes(%q):\n%s\nwant\n%s", names, a, b)
	}
}

// A projection made before an attribute name existed finds it once a later
// commit writes it, on a later snapshot.
func TestProjectionOfALaterName(t *testing.T) {
	db := newCustomers(t)
	s1, err := db.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	tb, err := s1.Table("customers")
	if err != nil {
		t.Fatal(err)
	}
	p := s1.Project(tb, []string{"loyalty", "city"})
	s1.Close()
	if !p.Projected() || tb.Projected() {
		t.Fatalf("Projected: copy %v, original %v", p.Projected(), tb.Projected())
	}
	if _, err := txn.Update(db, func(tx *txn.Tx) error {
		return tx.Put("customers", store.Key{"later"}, store.Attrs{"loyalty": int64(3), "city": "Oslo", "tier": "gold"}, 0, store.Infinity)
	}); err != nil {
		t.Fatal(err)
	}
	s2, err := db.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	tuple, err := p.AppendKey(nil, store.Key{"later"})
	if err != nil {
		t.Fatal(err)
	}
	v, reason, err := s2.VersionAt(p, tuple, 5, s2.LastTx())
	if err != nil || reason != store.Found {
		t.Fatalf("VersionAt: %v %v", reason, err)
	}
	if want := (store.Attrs{"loyalty": int64(3), "city": "Oslo"}); !v.Attrs.Equal(want) {
		t.Fatalf("attrs %v, want %v", v.Attrs, want)
	}
}
