package store_test

import (
	"bytes"
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/store"
)

// TestWithRawAttrsMatchesMaps checks that reads through a WithRawAttrs table
// return the same versions as through the table itself, with their attributes
// still encoded: VersionAt, ScanAt, ScanHistory and LookupSorted.
func TestWithRawAttrsMatchesMaps(t *testing.T) {
	w := newScanWorld(t, 3, 40)
	raw := w.tb.WithRawAttrs()
	s, err := w.db.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	same := func(what string, got, want store.Version) {
		t.Helper()
		if !want.RawAttrs().IsZero() {
			t.Fatalf("%s: a map read has RawAttrs", what)
		}
		// A raw read leaves attributes encoded, except a retired record's that
		// are stored with its successor, which come back decoded.
		if raw := got.RawAttrs(); !raw.IsZero() {
			if got.Attrs != nil {
				t.Fatalf("%s: raw read has both Attrs %v and RawAttrs", what, got.Attrs)
			}
			a := store.Attrs{}
			if err := raw.Walk(func(name string, v *encoding.Value) error { a[name] = v.Any(); return nil }); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			got.Attrs = a
		}
		if got.String() != want.String() {
			t.Fatalf("%s: %s, want %s", what, got.String(), want.String())
		}
	}
	rng := rand.New(rand.NewPCG(3, 1))
	var probes []store.Probe
	for range 100 {
		k := w.keys[rng.IntN(len(w.keys))]
		valid, tx := int64(rng.IntN(60)-5), w.randomTx(rng)
		got, gr, err1 := s.VersionAt(raw, w.tuple(t, k), valid, tx)
		want, wr, err2 := s.VersionAt(w.tb, w.tuple(t, k), valid, tx)
		if err1 != nil || err2 != nil || gr != wr {
			t.Fatalf("VersionAt: %v %v %v %v", gr, wr, err1, err2)
		}
		same(fmt.Sprintf("VersionAt %v %d %d", k, valid, tx), got, want)
		probes = append(probes, store.Probe{Tuple: w.tuple(t, k), Valid: valid, Tx: tx})
	}
	for _, tx := range []int64{w.txs[len(w.txs)/2], w.txs[len(w.txs)-1]} {
		got := collect(t, s.ScanAt(raw, store.Span{}, 20, tx))
		want := collect(t, s.ScanAt(w.tb, store.Span{}, 20, tx))
		if len(got) != len(want) {
			t.Fatalf("ScanAt: %d versions, want %d", len(got), len(want))
		}
		for i := range got {
			same("ScanAt", got[i], want[i])
		}
		got = collect(t, s.ScanHistory(raw, store.Span{}, tx, store.NegInfinity, store.Infinity, nil))
		want = collect(t, s.ScanHistory(w.tb, store.Span{}, tx, store.NegInfinity, store.Infinity, nil))
		if len(got) != len(want) {
			t.Fatalf("ScanHistory: %d versions, want %d", len(got), len(want))
		}
		for i := range got {
			same("ScanHistory", got[i], want[i])
		}
	}
	slices.SortFunc(probes, func(a, b store.Probe) int {
		if c := bytes.Compare(a.Tuple, b.Tuple); c != 0 {
			return c
		}
		return cmp.Compare(b.Valid, a.Valid)
	})
	err = s.LookupSorted(raw, probes, true, func(i int, v *store.Version, r store.MissReason) {
		want, _, _ := s.VersionAt(w.tb, probes[i].Tuple, probes[i].Valid, probes[i].Tx)
		if r != store.Found {
			return
		}
		got := *v
		got.Key = want.Key
		same(fmt.Sprintf("LookupSorted probe %d", i), got, want)
	})
	if err != nil {
		t.Fatal(err)
	}
}
