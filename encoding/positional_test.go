package encoding

import (
	"errors"
	"math"
	"slices"
	"testing"
)

func TestRecordPositionalRoundTrip(t *testing.T) {
	names := []string{"city", "tier", "note", "blob", "big", "ratio", "flag", "gone"}
	ordinal := func(name string) (uint32, bool) { i := slices.Index(names, name); return uint32(i), i >= 0 }
	name := func(ord uint32) (string, bool) {
		if int(ord) < len(names) {
			return names[ord], true
		}
		return "", false
	}
	for _, r := range []RecordValue{
		{ValidTo: math.MaxInt64, TxCommit: 1 << 50, TxTo: math.MaxInt64, SK: 7},
		{ValidTo: 20, TxFrom: -5, TxTo: 9, SK: 1 << 40, Flags: FlagInferred,
			Attrs: Attrs{"city": "Oslo", "tier": int64(-3), "note": nil, "blob": []byte{}, "big": uint64(math.MaxUint64), "ratio": 0.5, "flag": true}},
		{ValidTo: 20, TxCommit: 1, TxTo: math.MaxInt64, SK: 2, Attrs: Attrs{"gone": "last ordinal only"}},
	} {
		enc, err := AppendRecordPositional([]byte("prefix"), &r, ordinal)
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodeRecordPositional(enc[len("prefix"):], 0, name)
		if err != nil || got.ValidTo != r.ValidTo || got.TxFrom != r.TxFrom || got.TxCommit != r.TxCommit || got.TxTo != r.TxTo || got.SK != r.SK || got.Flags != r.Flags || !got.Attrs.Equal(r.Attrs) || len(got.Attrs) != len(r.Attrs) {
			t.Fatalf("round trip of %+v: %+v, %v", r, got, err)
		}
		head, err := DecodeRecordHeadPositional(enc[len("prefix"):], 0)
		if err != nil || head.SK != r.SK || head.TxFrom != r.TxFrom || head.TxCommit != r.TxCommit {
			t.Fatalf("head of %+v: %+v, %v", r, head, err)
		}
		positional, err := AppendAttrsPositional(nil, r.Attrs, ordinal)
		if err != nil {
			t.Fatal(err)
		}
		named, err := AppendAttrs(nil, r.Attrs)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Attrs) > 0 && len(positional) >= len(named) {
			t.Errorf("positional attributes (%d bytes) are not smaller than the named ones (%d)", len(positional), len(named))
		}
	}
	// A retired record leaves tx_from to its key, which decoders are given.
	retired := RecordValue{ValidTo: 20, TxFrom: 1 << 50, TxTo: 1<<50 + 3, SK: 4, Attrs: Attrs{"city": "Bergen"}}
	enc, err := AppendRecordRetired(nil, &retired, ordinal)
	if err != nil {
		t.Fatal(err)
	}
	full, _ := AppendRecordPositional(nil, &retired, ordinal)
	got, err := DecodeRecordPositional(enc, retired.TxFrom, name)
	if err != nil || !KeyedTxFrom(enc) || KeyedTxFrom(full) || got.TxFrom != retired.TxFrom || got.TxTo != retired.TxTo || !got.Attrs.Equal(retired.Attrs) || len(enc) >= len(full) {
		t.Fatalf("retired record %x (full form %x): %+v, %v", enc, full, got, err)
	}
	if _, err := AppendRecordRetired(nil, &RecordValue{TxTo: math.MaxInt64}, ordinal); err == nil {
		t.Fatal("encoded a current record as retired")
	}
	if _, err := AppendRecordPositional(nil, &RecordValue{TxCommit: 1, Attrs: Attrs{"unknown": int64(1)}}, ordinal); err == nil {
		t.Fatal("encoded a name without an ordinal")
	}
}

// A current record holds the number of the commit that asserted it, never a
// time: encoders refuse one without a number and ignore TxFrom, decoders
// return the number with TxFrom 0 (the store maps it), and a number takes a
// few bytes where a time takes eight or nine.
func TestRecordPositionalCommitNumber(t *testing.T) {
	ordinal := func(name string) (uint32, bool) { return 0, name == "a" }
	name := func(ord uint32) (string, bool) { return "a", ord == 0 }
	if _, err := AppendRecordPositional(nil, &RecordValue{ValidTo: 5, TxFrom: 1_700_000_000_000_000, TxTo: math.MaxInt64}, ordinal); err == nil {
		t.Fatal("encoded a current record without a commit number")
	}
	withTime := RecordValue{ValidTo: 5, TxFrom: 1_700_000_000_000_000, TxTo: math.MaxInt64, TxCommit: 300, SK: 9, Attrs: Attrs{"a": int64(1)}}
	numbered := withTime
	numbered.TxFrom = 0
	a, errA := AppendRecordPositional(nil, &withTime, ordinal)
	b, errB := AppendRecordPositional(nil, &numbered, ordinal)
	if errA != nil || errB != nil || !slices.Equal(a, b) {
		t.Fatalf("TxFrom changed a current record's bytes: %x, %x (%v, %v)", a, b, errA, errB)
	}
	got, err := DecodeRecordPositional(a, 42, name)
	if err != nil || got.TxCommit != 300 || got.TxFrom != 0 || got.TxTo != math.MaxInt64 || got.SK != 9 {
		t.Fatalf("decoded %+v, %v", got, err)
	}
	retired := RecordValue{ValidTo: 5, TxFrom: 1_700_000_000_000_000, TxTo: 1_700_000_000_000_001, SK: 9, Attrs: Attrs{"a": int64(1)}}
	r, err := AppendRecordRetired(nil, &retired, ordinal)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := DecodeRecordPositional(r, retired.TxFrom, name); err != nil || got.TxCommit != 0 || got.TxFrom != retired.TxFrom {
		t.Fatalf("retired record decoded %+v, %v", got, err)
	}
	full, _ := AppendRecordPositional(nil, &retired, ordinal) // a retired record holding its tx_from
	if len(a)+6 > len(full) {
		t.Fatalf("a current record with commit number 300 (%x) is not 6 bytes shorter than a record holding its time (%x)", a, full)
	}
	zero := []byte{0x80 | 0x40, 0, 9, 1, 0, 1} // open valid and tx periods, commit number 0
	if _, err := DecodeRecordPositional(zero, 0, name); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("commit number 0: %v, want ErrCorrupt", err)
	}
}

func TestRecordPositionalMalformed(t *testing.T) {
	name := func(ord uint32) (string, bool) { return []string{"a", "b"}[min(ord, 1)], ord < 2 }
	good, err := AppendRecordPositional(nil, &RecordValue{ValidTo: 5, TxCommit: 1, TxTo: math.MaxInt64, SK: 1, Attrs: Attrs{"a": int64(1), "b": "x"}},
		func(n string) (uint32, bool) { return map[string]uint32{"a": 0, "b": 1}[n], true })
	if err != nil {
		t.Fatal(err)
	}
	for n := range len(good) { // every truncation
		if _, err := DecodeRecordPositional(good[:n], 0, name); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("truncated to %d bytes: %v, want ErrCorrupt", n, err)
		}
	}
	head := good[:len(good)-6] // the header, then: count 2, gap 0, 0x01, gap 0, 0xa1 'x'
	for _, attrs := range [][]byte{
		{2, 0, 1, 5, 0xa1, 'x'},        // ordinal 6 has no name
		{2, 0, 1, 0xff, 0xa1, 'x'},     // a truncated ordinal varint
		{0xff, 0xff, 0xff, 0xff, 0x0f}, // a huge count
		{1, 0, 0xc1},                   // a value that is no scalar
		{2, 0, 1, 0, 0xa1, 'x', 0},     // a trailing byte
	} {
		if _, err := DecodeRecordPositional(append(slices.Clone(head), attrs...), 0, name); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("attrs %x: %v, want ErrCorrupt", attrs, err)
		}
	}
	for _, rec := range [][]byte{
		{0x80, 2, 0, 1, 0}, // tx_to equal to tx_from
		{0x80 | 0x40, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 1, 0}, // an overlong commit number
		{0x40, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 2, 1, 0},           // valid_to +inf written out
	} {
		if _, err := DecodeRecordPositional(rec, 0, name); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("record %x: %v, want ErrCorrupt", rec, err)
		}
	}
	if _, err := AppendRecordPositional(nil, &RecordValue{TxFrom: 5, TxTo: 5}, nil); err == nil {
		t.Fatal("encoded an empty transaction period")
	}
	if _, err := AppendRecordPositional(nil, &RecordValue{TxTo: math.MaxInt64, TxCommit: 1, Flags: 0x40}, nil); err == nil {
		t.Fatal("encoded flags that collide with the head bits")
	}
	dup := func(ord uint32) (string, bool) { return "a", true } // two ordinals, one name
	if _, err := DecodeRecordPositional(good, 0, dup); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("duplicate name: %v, want ErrCorrupt", err)
	}
}

// The *At encoders store valid_to as its distance from the valid_from their
// caller passes: decoders given the same valid_from get every field back (any
// two times, open ends included), a base of 0 writes the bytes of the plain
// encoders, and a short distance costs fewer bytes than the time itself.
func TestRecordPositionalAt(t *testing.T) {
	ordinal := func(name string) (uint32, bool) { return 0, name == "a" }
	name := func(ord uint32) (string, bool) { return "a", ord == 0 }
	times := []int64{math.MinInt64, math.MinInt64 + 1, -1 << 40, -1, 0, 1, 1_700_000_000_000_000, math.MaxInt64 - 1}
	for _, from := range times {
		for _, to := range append(slices.Clone(times), math.MaxInt64) {
			for _, retired := range []bool{false, true} {
				r := RecordValue{ValidTo: to, TxCommit: 3, TxTo: math.MaxInt64, SK: 9, Attrs: Attrs{"a": int64(1)}}
				enc := AppendRecordPositionalAt
				if retired {
					r.TxFrom, r.TxTo, r.TxCommit, enc = 3, 8, 0, AppendRecordRetiredAt
				}
				b, err := enc(nil, &r, from, ordinal)
				if err != nil {
					t.Fatal(err)
				}
				got, err := DecodeRecordAt(b, from, 3, name)
				if err != nil || got.ValidTo != to || got.TxFrom != r.TxFrom || got.TxCommit != r.TxCommit || got.TxTo != r.TxTo || got.SK != 9 || got.Attrs["a"] != int64(1) {
					t.Fatalf("from %d to %d: %+v, %v", from, to, got, err)
				}
				if head, err := DecodeRecordHeadAt(b, from, 3); err != nil || head.ValidTo != to {
					t.Fatalf("head from %d to %d: %+v, %v", from, to, head, err)
				}
				if p, err := DecodeRecordProjectedAt(b, from, 3, name, &Projection{Names: []string{"a"}}); err != nil || p.ValidTo != to {
					t.Fatalf("projected from %d to %d: %+v, %v", from, to, p, err)
				}
				if retired {
					s, err := AppendRecordSharedAt(nil, &r, from)
					if err != nil {
						t.Fatal(err)
					}
					if got, err := DecodeRecordAt(s, from, 3, name); err != nil || got.ValidTo != to || got.Attrs != nil {
						t.Fatalf("shared from %d to %d: %+v, %v", from, to, got, err)
					}
				}
			}
		}
	}
	r := RecordValue{ValidTo: 1_700_000_000_000_100, TxCommit: 3, TxTo: math.MaxInt64, SK: 9}
	plain, _ := AppendRecordPositional(nil, &r, ordinal)
	zero, _ := AppendRecordPositionalAt(nil, &r, 0, ordinal)
	near, _ := AppendRecordPositionalAt(nil, &r, 1_700_000_000_000_000, ordinal)
	if !slices.Equal(plain, zero) || len(near)+6 > len(plain) {
		t.Fatalf("plain %x, base 0 %x, base near %x", plain, zero, near)
	}
}
