package store_test

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// rowAttrNames are the attributes newRowWorld writes, each present in a record
// or not at random, and one name no record holds.
var rowAttrNames = []string{"s", "i", "f", "b", "t", "raw", "never"}

// newRowWorld is newScanWorld with attributes of every kind (strings and key
// components holding 0x00, which keys store escaped), so that reading rows in
// place has something to get wrong.
func newRowWorld(t *testing.T, seed uint64, commits int) *scanWorld {
	t.Helper()
	var keys []store.Key
	for _, g := range []string{"g0", "g1", "g1\x00z", "g2"} {
		for n := range 3 {
			keys = append(keys, store.Key{g, int64(n - 1)})
		}
	}
	return buildWorld(t, keys, commits, rand.New(rand.NewPCG(seed, 17)), randomRowWrite)
}

// randomRowWrite puts, upserts or deletes a random period of key.
func randomRowWrite(tx *txn.Tx, rng *rand.Rand, key store.Key) error {
	from := int64(rng.IntN(40))
	to := from + 1 + int64(rng.IntN(15))
	switch rng.IntN(4) {
	case 0:
		return tx.Put("pairs", key, randomRowAttrs(rng), from, to)
	case 1:
		return tx.Put("pairs", key, randomRowAttrs(rng), from, store.Infinity)
	case 2:
		_, err := tx.Upsert("pairs", key, randomRowAttrs(rng), from)
		return err
	}
	return tx.Delete("pairs", key, from, to)
}

// randomRowAttrs draws each of the attributes (but "never") or leaves it out,
// from few values so that upserts often repeat a version's attributes.
func randomRowAttrs(rng *rand.Rand) store.Attrs {
	a := store.Attrs{}
	values := map[string]func() any{
		"s":   func() any { return []string{"", "x", "a\x00b", "\x00"}[rng.IntN(4)] },
		"i":   func() any { return []int64{0, -1, 300, -1 << 40}[rng.IntN(4)] },
		"f":   func() any { return []float64{0, 1.5, -2.25}[rng.IntN(3)] },
		"b":   func() any { return rng.IntN(2) == 0 },
		"t":   func() any { return time.UnixMicro(int64(rng.IntN(3)) * 1_000_001).UTC() },
		"raw": func() any { return []byte{0, byte(rng.IntN(3))} },
	}
	for name, draw := range values {
		if rng.IntN(3) > 0 {
			a[name] = draw()
		}
	}
	return a
}

// scanRowsCopied runs ScanRowsAt, checks every row against itself read in
// every other way (typed accessors, Attr, Walk, KeyValue, Key) and returns
// the rows copied out with Version.
func scanRowsCopied(t *testing.T, s *store.Snapshot, tb *store.Table, sp store.Span, valid, tx int64) []store.Version {
	t.Helper()
	refs := make([]*store.AttrRef, len(rowAttrNames))
	for i, name := range rowAttrNames {
		refs[i] = store.NewAttrRef(name)
	}
	var out []store.Version
	var failure error
	err := s.ScanRowsAt(tb, sp, valid, tx, func(r *store.Row) bool {
		v, err := r.Version()
		if err == nil {
			err = checkRow(r, &v, refs)
		}
		if err != nil {
			failure = fmt.Errorf("row %d (%s): %w", len(out), v.String(), err)
			return false
		}
		out = append(out, v)
		return true
	})
	if err = cmpErr(err, failure); err != nil {
		t.Fatal(err)
	}
	return out
}

// describe renders versions with everything they hold: the fields, the
// attributes (a map or, read through a WithRawAttrs table, walked) and the
// encoded key.
func describe(t *testing.T, vs []store.Version) string {
	var b strings.Builder
	for _, v := range vs {
		raw := store.Attrs{}
		if err := v.RawAttrs().Walk(func(name string, val *encoding.Value) error { raw[name] = val.Any(); return nil }); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s inferred %v raw %v tuple %x\n", v.String(), v.Inferred, raw, v.Tuple())
	}
	return b.String()
}

func cmpErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// checkRow compares what r reads in place with v, the row copied out.
func checkRow(r *store.Row, v *store.Version, refs []*store.AttrRef) error {
	if r.ValidFrom != v.ValidFrom || r.ValidTo != v.ValidTo || r.TxFrom != v.TxFrom || r.TxTo != v.TxTo || r.SK != v.SK || r.Inferred != v.Inferred {
		return fmt.Errorf("row fields [%d, %d) tx [%d, %d) sk %d", r.ValidFrom, r.ValidTo, r.TxFrom, r.TxTo, r.SK)
	}
	key, err := r.Key()
	if err != nil || !reflect.DeepEqual(key, v.Key) {
		return fmt.Errorf("Key %v %v", key, err)
	}
	var kv encoding.Value
	if err := r.KeyValue(0, &kv); err != nil || kv.Kind != encoding.KindString || string(kv.Bytes) != v.Key[0] {
		return fmt.Errorf("KeyValue(0) %+v %v", kv, err)
	}
	if err := r.KeyValue(1, &kv); err != nil || kv.Kind != encoding.KindInt || kv.Int != v.Key[1] {
		return fmt.Errorf("KeyValue(1) %+v %v", kv, err)
	}
	walked := store.Attrs{}
	if err := r.Walk(func(name string, val *encoding.Value) error { walked[name] = val.Any(); return nil }); err != nil {
		return err
	}
	attrs := v.Attrs
	if !v.RawAttrs().IsZero() { // read through a WithRawAttrs table
		attrs = store.Attrs{}
		if err := v.RawAttrs().Walk(func(name string, val *encoding.Value) error { attrs[name] = val.Any(); return nil }); err != nil {
			return err
		}
	}
	if !reflect.DeepEqual(walked, attrs) {
		return fmt.Errorf("Walk gives %v", walked)
	}
	for _, ref := range refs {
		if err := checkAttr(r, ref, attrs); err != nil {
			return err
		}
	}
	return nil
}

// checkAttr compares r's value of ref, read by Attr and by the typed accessor
// of its kind, with attrs (the row's attributes, as a map); a projected row
// must still read attributes outside its projection, so those are only
// checked for agreement between Attr and the typed accessors.
func checkAttr(r *store.Row, ref *store.AttrRef, attrs store.Attrs) error {
	var val encoding.Value
	found, err := r.Attr(ref, &val)
	if err != nil {
		return err
	}
	if !found && val.Kind != encoding.KindNull {
		return fmt.Errorf("Attr(%s) holds %v for an attribute the row does not hold", ref.Name(), val.Any())
	}
	want, has := attrs[ref.Name()]
	if has && (!found || !reflect.DeepEqual(val.Any(), want)) {
		return fmt.Errorf("Attr(%s) = %v %v, want %v", ref.Name(), val.Any(), found, want)
	}
	var got any
	var typed bool
	switch val.Kind {
	case encoding.KindInt:
		got, typed = r.Int64(ref)
	case encoding.KindFloat:
		got, typed = r.Float64(ref)
	case encoding.KindBool:
		got, typed = r.Bool(ref)
	case encoding.KindString:
		got, typed = r.String(ref)
	default:
		got, typed = val.Any(), found
	}
	if typed != found || (found && !reflect.DeepEqual(got, val.Any())) {
		return fmt.Errorf("typed accessor of %s = %v %v, Attr gives %v %v", ref.Name(), got, typed, val.Any(), found)
	}
	if _, ok := r.Int64(ref); ok != (found && val.Kind == encoding.KindInt) {
		return fmt.Errorf("Int64(%s) reports %v for a %d", ref.Name(), ok, val.Kind)
	}
	return nil
}

// snapshotModel is the reference snapshot: from every key's records (audit
// order, by key), the version of each key of sp covering valid among those
// alive at tx.
func (w *scanWorld) snapshotModel(t *testing.T, recs [][]store.Version, sp store.Span, valid, tx int64) []store.Version {
	var out []store.Version
	for i, k := range w.keys {
		if !w.inSpan(t, k, sp) {
			continue
		}
		for _, v := range alive(recs[i], tx) {
			if v.Covers(valid) {
				out = append(out, v)
			}
		}
	}
	return out
}

// TestScanRowsMatchScanAtAndBruteForce compares, on random stores and reads
// (spans, valid and transaction times, projected and WithRawAttrs tables),
// the rows of ScanRowsAt copied out with the versions of ScanAt, every
// row's accessors with its copy, and both with the reference model.
func TestScanRowsMatchScanAtAndBruteForce(t *testing.T) {
	for seed := range uint64(8) {
		w := newRowWorld(t, seed, 60)
		s, err := w.db.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		recs := w.records(t, s)
		rng := rand.New(rand.NewPCG(seed, 19))
		for range 150 {
			valid, tx, sp := int64(rng.IntN(60)-5), w.randomTx(rng), w.randomSpan(t, rng)
			tb := w.tb
			switch rng.IntN(3) {
			case 1:
				tb = s.Project(w.tb, []string{"i", "s", "never"}[:1+rng.IntN(3)])
			case 2:
				tb = w.tb.WithRawAttrs()
			}
			mapped := collect(t, s.ScanAt(tb, sp, valid, tx))
			rows := scanRowsCopied(t, s, tb, sp, valid, tx)
			at := fmt.Sprintf("seed %d ScanRowsAt(span %x..%x, valid %d, tx %d)", seed, sp.Start, sp.End, valid, tx)
			if describe(t, rows) != describe(t, mapped) {
				t.Fatalf("%s:\n%s\nScanAt:\n%s", at, describe(t, rows), describe(t, mapped))
			}
			if want := w.snapshotModel(t, recs, sp, valid, tx); tb == w.tb && render(rows) != render(want) {
				t.Fatalf("%s:\n%s\nwant\n%s", at, render(rows), render(want))
			}
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestScanRowsStopsWhenTheCallbackDoes(t *testing.T) {
	w := newRowWorld(t, 3, 60)
	s, err := w.db.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, tx := range []int64{store.Infinity, w.txs[len(w.txs)/2]} {
		all := len(scanRowsCopied(t, s, w.tb, store.Span{}, 20, tx))
		if all < 2 {
			t.Fatalf("tx %d: %d rows, want at least 2", tx, all)
		}
		n := 0
		err := s.ScanRowsAt(w.tb, store.Span{}, 20, tx, func(*store.Row) bool { n++; return n < all-1 })
		if err != nil || n != all-1 {
			t.Fatalf("tx %d: stopped after %d rows (%v), want %d", tx, n, err, all-1)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.ScanRowsAt(w.tb, store.Span{}, 20, store.Infinity, func(*store.Row) bool { return true }); err != store.ErrClosed {
		t.Fatalf("on a closed snapshot: %v, want ErrClosed", err)
	}
}

// TestRowVersionOwnsItsBytes checks that a Row's reads alias the scan and
// Version's copy does not: the copies of every row stay as they were read
// after the scan has moved on.
func TestRowVersionOwnsItsBytes(t *testing.T) {
	w := newRowWorld(t, 5, 60)
	s, err := w.db.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	raw := w.tb.WithRawAttrs()
	var kept []store.Version
	err = s.ScanRowsAt(raw, store.Span{}, 20, store.Infinity, func(r *store.Row) bool {
		v, err := r.Version()
		if err != nil {
			t.Fatal(err)
		}
		kept = append(kept, v)
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	again := collect(t, s.ScanAt(raw, store.Span{}, 20, store.Infinity))
	if describe(t, kept) != describe(t, again) {
		t.Fatalf("copied rows changed after the scan:\n%s\nwant\n%s", describe(t, kept), describe(t, again))
	}
}
