package model

import (
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/bitempo/bitempo/internal/testutil"
)

// These tests check the model against the reference scenarios of docs/semantics.md and rules
// directly, so that the oracle is not merely "whatever the store does".

type step func(tx *Txn) error

// commit runs steps in one transaction committed at transaction time at.
func commit(t *testing.T, m *Model, at int64, steps ...step) Commit {
	t.Helper()
	tx := m.Begin()
	for _, s := range steps {
		if err := s(tx); err != nil {
			t.Fatal(err)
		}
	}
	c, err := tx.Commit(at)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func upsert(key string, attrs Attrs, at int64, want Outcome) step {
	return func(tx *Txn) error {
		got, err := tx.Upsert("t", key, attrs, at)
		if err == nil && got != want {
			return errors.New("upsert outcome " + got.String() + ", want " + want.String())
		}
		return err
	}
}

func put(key string, attrs Attrs, from, to int64) step {
	return func(tx *Txn) error { return tx.Put("t", key, attrs, from, to) }
}

func del(key string, from, to int64) step {
	return func(tx *Txn) error { return tx.Delete("t", key, from, to) }
}

func newModel(t *testing.T, def Table) *Model {
	t.Helper()
	m := New()
	def.Name, def.Key = "t", []string{"id"}
	if err := m.CreateTable(def); err != nil {
		t.Fatal(err)
	}
	return m
}

// span is a version's valid period, sk and one attribute, for compact expectations.
type span struct {
	from, to int64
	sk       uint64
	city     any
}

func spans(t *testing.T, m *Model, key string, tx int64) []span {
	t.Helper()
	vs, err := m.VersionsAt("t", key, tx)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]span, len(vs))
	for i, v := range vs {
		out[i] = span{v.ValidFrom, v.ValidTo, v.SK, v.Attrs["city"]}
	}
	return out
}

func wantSpans(t *testing.T, m *Model, key string, tx int64, want ...span) {
	t.Helper()
	if got := spans(t, m, key, tx); !slices.Equal(got, want) {
		t.Fatalf("versions of %s at tx %d:\n got %v\nwant %v", key, tx, got, want)
	}
}

func TestOsloBergenOslo(t *testing.T) {
	m := newModel(t, Table{})
	commit(t, m, 1, upsert("c", Attrs{"city": "Oslo"}, 1, Inserted))
	commit(t, m, 2, upsert("c", Attrs{"city": "Bergen"}, 11, Changed))
	commit(t, m, 3, upsert("c", Attrs{"city": "Oslo"}, 20, Changed))
	wantSpans(t, m, "c", 3, span{1, 11, 1, "Oslo"}, span{11, 20, 2, "Bergen"}, span{20, Infinity, 3, "Oslo"})
	if r, miss, _ := m.Get("t", "c", 8, 3); miss != Found || r.Attrs["city"] != "Oslo" {
		t.Fatalf("8 March: %v %v", r, miss)
	}
	if r, miss, _ := m.Get("t", "c", 12, 3); miss != Found || r.Attrs["city"] != "Bergen" {
		t.Fatalf("12 March: %v %v", r, miss)
	}
	// As known at tx 1, the 12th was still Oslo.
	if r, miss, _ := m.Get("t", "c", 12, 1); miss != Found || r.Attrs["city"] != "Oslo" {
		t.Fatalf("12 March at tx 1: %v %v", r, miss)
	}
}

func TestLateChangeLandsBetween(t *testing.T) {
	m := newModel(t, Table{})
	commit(t, m, 1, upsert("c", Attrs{"city": "Oslo"}, 1, Inserted))
	commit(t, m, 2, upsert("c", Attrs{"city": "Tromsø"}, 20, Changed))
	commit(t, m, 3, upsert("c", Attrs{"city": "Bergen"}, 11, Changed))
	wantSpans(t, m, "c", 3, span{1, 11, 1, "Oslo"}, span{11, 20, 3, "Bergen"}, span{20, Infinity, 2, "Tromsø"})
	for v := int64(12); v < 20; v++ {
		if r, _, _ := m.Get("t", "c", v, 3); r.Attrs["city"] != "Bergen" {
			t.Fatalf("valid %d: %v", v, r)
		}
	}
}

func TestMisses(t *testing.T) {
	m := newModel(t, Table{})
	commit(t, m, 1, put("c", Attrs{"city": "Oslo"}, 10, 20), put("c", Attrs{"city": "Bergen"}, 30, 40))
	for _, c := range []struct {
		key   string
		valid int64
		want  Miss
	}{{"c", 5, BeforeFirst}, {"c", 25, InGap}, {"c", 40, AfterLast}, {"x", 15, UnknownKey}, {"c", 10, Found}, {"c", 19, Found}, {"c", 20, InGap}} {
		if _, got, _ := m.Get("t", c.key, c.valid, 1); got != c.want {
			t.Errorf("%s at %d: %v, want %v", c.key, c.valid, got, c.want)
		}
	}
	if _, got, _ := m.Get("t", "c", 15, 0); got != UnknownKey {
		t.Errorf("before the first commit: %v", got)
	}
}

func TestPutSplitsAndSurrogateKeys(t *testing.T) {
	m := newModel(t, Table{})
	commit(t, m, 1, put("c", Attrs{"city": "Oslo"}, 0, 100))
	// Split in the middle: left keeps sk 1, the Put's version gets sk 2, the right remnant sk 3.
	commit(t, m, 2, put("c", Attrs{"city": "Bergen"}, 40, 60))
	wantSpans(t, m, "c", 2, span{0, 40, 1, "Oslo"}, span{40, 60, 2, "Bergen"}, span{60, 100, 3, "Oslo"})
	// Trimming on the left only keeps the sk of the survivor.
	commit(t, m, 3, put("c", Attrs{"city": "Molde"}, 50, 70))
	wantSpans(t, m, "c", 3, span{0, 40, 1, "Oslo"}, span{40, 50, 2, "Bergen"}, span{50, 70, 4, "Molde"}, span{70, 100, 3, "Oslo"})
	// Delete leaves a gap; the old state stays readable at its transaction time.
	commit(t, m, 4, del("c", 30, 80))
	wantSpans(t, m, "c", 4, span{0, 30, 1, "Oslo"}, span{80, 100, 3, "Oslo"})
	wantSpans(t, m, "c", 1, span{0, 100, 1, "Oslo"})
	// Re-putting exactly a stored version changes nothing.
	if c := commit(t, m, 5, put("c", Attrs{"city": "Oslo"}, 80, 100)); c.Tx != 0 {
		t.Fatalf("identical Put committed %+v", c)
	}
	// Put never coalesces: equal attributes over an adjacent period make a new version.
	commit(t, m, 6, put("c", Attrs{"city": "Oslo"}, 30, 80))
	wantSpans(t, m, "c", 6, span{0, 30, 1, "Oslo"}, span{30, 80, 5, "Oslo"}, span{80, 100, 3, "Oslo"})
}

func TestUpsertRules(t *testing.T) {
	m := newModel(t, Table{Track: []string{"city"}})
	commit(t, m, 1, upsert("c", Attrs{"city": "Oslo", "note": "a"}, 10, Inserted))
	// Equal tracked attributes: no new version, untracked overwritten in place.
	commit(t, m, 2, upsert("c", Attrs{"city": "Oslo", "note": "b"}, 15, Overwritten))
	if c := commit(t, m, 3, upsert("c", Attrs{"city": "Oslo", "note": "b"}, 12, Unchanged)); c.Tx != 0 {
		t.Fatalf("unchanged upsert committed %+v", c)
	}
	wantSpans(t, m, "c", 3, span{10, Infinity, 1, "Oslo"})
	// Before the first version: the new version ends where the next starts.
	commit(t, m, 4, upsert("c", Attrs{"city": "Bergen"}, 5, Inserted))
	wantSpans(t, m, "c", 4, span{5, 10, 2, "Bergen"}, span{10, Infinity, 1, "Oslo"})
	// A change replaces the rest of the version it lands in.
	commit(t, m, 5, upsert("c", Attrs{"city": "Molde"}, 20, Changed))
	commit(t, m, 6, upsert("c", Attrs{"city": "Bergen"}, 20, Changed))
	wantSpans(t, m, "c", 6, span{5, 10, 2, "Bergen"}, span{10, 20, 1, "Oslo"}, span{20, Infinity, 4, "Bergen"})
	wantSpans(t, m, "c", 5, span{5, 10, 2, "Bergen"}, span{10, 20, 1, "Oslo"}, span{20, Infinity, 3, "Molde"})
	// A change landing exactly at a version's start replaces it whole; the equal
	// earlier neighbour is extended over it and absorbs the equal later one.
	commit(t, m, 7, upsert("c", Attrs{"city": "Bergen"}, 10, Merged))
	wantSpans(t, m, "c", 7, span{5, Infinity, 2, "Bergen"})
	// DeleteAt closes the version in effect; an Upsert after the gap inserts.
	tx := m.Begin()
	if ok, _ := tx.DeleteAt("t", "c", 30); !ok {
		t.Fatal("DeleteAt found nothing")
	}
	if ok, _ := tx.DeleteAt("t", "c", 40); ok {
		t.Fatal("DeleteAt in the gap found something")
	}
	if _, err := tx.Commit(8); err != nil {
		t.Fatal(err)
	}
	commit(t, m, 9, upsert("c", Attrs{"city": "Oslo"}, 40, Inserted))
	wantSpans(t, m, "c", 9, span{5, 30, 2, "Bergen"}, span{40, Infinity, 5, "Oslo"})
	// In the gap, the new version runs to the next version, but an equal
	// neighbour ending where it starts is extended instead.
	commit(t, m, 10, upsert("c", Attrs{"city": "Bergen"}, 30, Merged))
	wantSpans(t, m, "c", 10, span{5, 40, 2, "Bergen"}, span{40, Infinity, 5, "Oslo"})
	// A revert is a new version: compare with the version in effect only.
	commit(t, m, 11, upsert("c", Attrs{"city": "Bergen"}, 50, Changed))
	wantSpans(t, m, "c", 11, span{5, 40, 2, "Bergen"}, span{40, 50, 5, "Oslo"}, span{50, Infinity, 6, "Bergen"})
}

func TestTransactionsHideIntermediateStates(t *testing.T) {
	m := newModel(t, Table{})
	commit(t, m, 1, put("c", Attrs{"city": "Oslo"}, 0, 10))
	// Created and removed within one transaction: nothing written, no tx used,
	// the allocated sk handed out again.
	if c := commit(t, m, 2, put("c", Attrs{"city": "Bergen"}, 20, 30), del("c", 20, 30)); c.Tx != 0 {
		t.Fatalf("net-empty transaction committed %+v", c)
	}
	c := commit(t, m, 3, put("c", Attrs{"city": "Bergen"}, 20, 30), put("c", Attrs{"city": "Molde"}, 25, 30))
	if c.Asserted != 2 || c.Retired != 0 {
		t.Fatalf("commit %+v, want 2 asserted", c)
	}
	wantSpans(t, m, "c", 3, span{0, 10, 1, "Oslo"}, span{20, 25, 2, "Bergen"}, span{25, 30, 3, "Molde"})
	recs, _ := m.Records("t", "c")
	if len(recs) != 3 {
		t.Fatalf("records %v", recs)
	}
	// An aborted transaction leaves nothing, and a commit must move time forward.
	tx := m.Begin()
	_ = tx.Put("t", "c", Attrs{"city": "X"}, 0, 100)
	tx = m.Begin()
	_ = tx.Put("t", "c", Attrs{"city": "X"}, 0, 100)
	if _, err := tx.Commit(3); !errors.Is(err, ErrTxOrder) {
		t.Fatalf("commit at an old tx: %v", err)
	}
	wantSpans(t, m, "c", 3, span{0, 10, 1, "Oslo"}, span{20, 25, 2, "Bergen"}, span{25, 30, 3, "Molde"})
}

func TestInvalidInput(t *testing.T) {
	m := newModel(t, Table{})
	tx := m.Begin()
	if err := tx.Put("t", "c", Attrs{}, 5, 5); !errors.Is(err, ErrInvalidPeriod) {
		t.Errorf("empty period: %v", err)
	}
	if err := tx.Put("t", "c", Attrs{"id": "x"}, 0, 5); !errors.Is(err, ErrInvalidAttr) {
		t.Errorf("key column as attribute: %v", err)
	}
	if err := tx.Put("t", "c", Attrs{"n": 3}, 0, 5); !errors.Is(err, ErrInvalidAttr) {
		t.Errorf("non-canonical int: %v", err)
	}
	if _, err := tx.Upsert("t", "c", Attrs{}, Infinity); !errors.Is(err, ErrInvalidPeriod) {
		t.Errorf("upsert at +inf: %v", err)
	}
	if err := tx.Put("nope", "c", Attrs{}, 0, 5); !errors.Is(err, ErrUnknownTable) {
		t.Errorf("unknown table: %v", err)
	}
}

func TestValuesEqual(t *testing.T) {
	round2 := Options{Round: true, Scale: 2}
	round4 := Options{Round: true, Scale: 4}
	for _, c := range []struct {
		x, y any
		opt  Options
		want bool
	}{
		{nil, nil, Options{}, true},
		{nil, "", Options{}, false},
		{int64(0), nil, Options{}, false},
		{int64(1), 1.0, Options{}, true},
		{1.23450, 1.2345, round4, true},
		{1.2345, 1.2346, round4, false},
		{1.234, 1.2345, Options{}, false},
		{1.234, 1.2349, round2, true},
		{0.125, 0.13, round2, true}, // a tie rounds away from zero
		{1.005, 1.01, round2, true}, // as written, not as the binary 1.00499...
		{1.0049, 1.01, round2, false},
		{int64(1), 1.004, round2, true},
		{-0.125, -0.13, round2, true},
		{2.5, 3.0, Options{Round: true}, true},
		{math.Copysign(0, -1), 0.0, Options{}, true},
		{math.NaN(), math.NaN(), Options{}, true},
		{math.NaN(), math.NaN(), round2, true},
		{math.Inf(1), math.Inf(1), round2, true},
		{math.Inf(1), math.Inf(-1), round2, false},
		{int64(1 << 53), float64(1 << 53), Options{}, true},
		{int64(1<<53 + 1), float64(1 << 53), Options{}, false},
		{uint64(1 << 63), int64(math.MaxInt64), Options{}, false},
		{" Oslo ", "oslo", Options{Trim: true, FoldCase: true}, true},
		{" Oslo ", "Oslo", Options{FoldCase: true}, false},
		{"Oslo", "oslo", Options{Trim: true}, false},
		{"K", "\u212a", Options{FoldCase: true}, true},  // Kelvin sign folds to K
		{"i", "\u0130", Options{FoldCase: true}, false}, // İ has no simple folding
		{"x", []byte("x"), Options{}, false},
		{int64(1), "1", Options{}, false},
		{true, true, Options{}, true},
		{true, int64(1), Options{}, false},
		// Decimals compare by exact value, whatever their scales, as the store does.
		{dec(t, "1.5"), dec(t, "1.50"), Options{}, true},
		{dec(t, "1.5"), 1.5, Options{}, true},
		{dec(t, "0.1"), 0.1, Options{}, true}, // the float as written
		{dec(t, "7"), int64(7), Options{}, true},
		{dec(t, "-0.000000000000000001"), dec(t, "0"), Options{}, false},
		{dec(t, "-0.000000000000000001"), dec(t, "0"), round2, true},
		{dec(t, "0.125"), dec(t, "0.13"), round2, true},
		{dec(t, "999999999999999999"), int64(999_999_999_999_999_999), Options{}, true},
		{dec(t, "1"), "1", Options{}, false},
	} {
		if got := ValuesEqual(c.x, c.y, c.opt); got != c.want {
			t.Errorf("ValuesEqual(%#v, %#v, %+v) = %v, want %v", c.x, c.y, c.opt, got, c.want)
		}
	}
	// Identical is the stored bytes' equality: the scale is part of a decimal.
	if Identical(Attrs{"p": dec(t, "1.5")}, Attrs{"p": dec(t, "1.50")}) || !Identical(Attrs{"p": dec(t, "1.50")}, Attrs{"p": dec(t, "1.50")}) {
		t.Error("Identical of decimals must compare coefficient and scale")
	}
}

// dec parses a decimal of a test (testutil.Decimal).
var dec = testutil.Decimal

// TestReadsBeforeTheHorizonAreRefused checks that once Vacuum moves a table's
// horizon, every read at an earlier transaction time is refused, the snapshot
// of a table that holds no key included.
func TestReadsBeforeTheHorizonAreRefused(t *testing.T) {
	m := newModel(t, Table{RetainTx: 40})
	if err := m.CreateTable(Table{Name: "other", Key: []string{"id"}}); err != nil {
		t.Fatal(err)
	}
	commit(t, m, 100, put("c", Attrs{"city": "Oslo"}, 0, 10))
	m.Vacuum(1000) // horizon min(1000-40, 100) = 100
	if h := m.Horizon("t"); h != 100 {
		t.Fatalf("horizon %d, want 100", h)
	}
	if _, err := m.Snapshot("t", 5, 99); !errors.Is(err, ErrBeforeHorizon) {
		t.Errorf("snapshot before the horizon: %v", err)
	}
	if _, _, err := m.Get("t", "c", 5, 99); !errors.Is(err, ErrBeforeHorizon) {
		t.Errorf("get before the horizon: %v", err)
	}
	if got, err := m.Snapshot("t", 5, 100); err != nil || len(got) != 1 {
		t.Errorf("snapshot at the horizon: %v, %v", got, err)
	}
	// A table with no key and no retention has no horizon.
	if _, err := m.Snapshot("other", 5, 1); err != nil {
		t.Errorf("snapshot of an empty table without retention: %v", err)
	}
	// An empty table whose horizon moved refuses earlier snapshots too.
	m2 := newModel(t, Table{RetainTx: 40})
	commit(t, m2, 100, put("c", Attrs{"city": "Oslo"}, 0, 10))
	commit(t, m2, 101, del("c", NegInfinity, Infinity))
	m2.Vacuum(1000)
	if got, err := m2.Snapshot("t", 5, 101); err != nil || len(got) != 0 {
		t.Errorf("snapshot of the emptied table at its horizon: %v, %v", got, err)
	}
	if _, err := m2.Snapshot("t", 5, 1); !errors.Is(err, ErrBeforeHorizon) {
		t.Errorf("snapshot of the emptied table before its horizon: %v", err)
	}
}
