package encoding

import (
	"errors"
	"math"
	"slices"
	"testing"
)

// TestDecodeRecordProjected decodes every subset of a record's attributes (and
// names it has no ordinal for) and checks the projection against the whole
// decode restricted to the subset, by map and by walk; then every truncation
// and every one-byte corruption of the record: an error is ErrCorrupt, never a
// panic, and a projection that succeeds returns what the intact record holds
// whenever the whole decode of the same bytes succeeds too.
func TestDecodeRecordProjected(t *testing.T) {
	names := []string{"city", "tier", "note", "blob", "big", "ratio", "flag", "gone"}
	ordinal := func(name string) (uint32, bool) { i := slices.Index(names, name); return uint32(i), i >= 0 }
	name := func(ord uint32) (string, bool) {
		if int(ord) < len(names) {
			return names[ord], true
		}
		return "", false
	}
	r := RecordValue{ValidTo: 20, TxFrom: -5, TxTo: 9, SK: 1 << 40, Flags: FlagInferred,
		Attrs: Attrs{"city": "Oslo", "tier": int64(-3), "note": nil, "blob": []byte{1}, "big": uint64(math.MaxUint64), "ratio": 0.5, "gone": true}}
	enc, err := AppendRecordPositional(nil, &r, ordinal)
	if err != nil {
		t.Fatal(err)
	}
	pool := append(slices.Clone(names), "unknown")
	for mask := range 1 << len(pool) {
		var want []string
		for i, n := range pool {
			if mask&(1<<i) != 0 {
				want = append(want, n)
			}
		}
		// Ordinals known to the projection: all of them, or only the first four
		// (names numbered later are found by name).
		for _, known := range [][]string{names, names[:4]} {
			p := NewProjection(want, known)
			got, err := DecodeRecordProjected(enc, 0, name, p)
			exp := Attrs{}
			for _, n := range want {
				if v, ok := r.Attrs[n]; ok {
					exp[n] = v
				}
			}
			if err != nil || got.SK != r.SK || got.ValidTo != r.ValidTo || !got.Attrs.Equal(exp) || got.Attrs == nil {
				t.Fatalf("projection %q (known %d): %+v, %v; want attrs %v", want, len(known), got, err, exp)
			}
			walked := Attrs{}
			if err := WalkAttrsProjected(mustAttrs(t, enc), name, p, func(n string, v *Value) error {
				walked[n] = v.Any()
				return nil
			}); err != nil || !walked.Equal(exp) {
				t.Fatalf("walk of projection %q (known %d): %v, %v; want %v", want, len(known), walked, err, exp)
			}
		}
	}
	stop := errors.New("stop")
	if err := WalkAttrsProjected(mustAttrs(t, enc), name, NewProjection([]string{"tier"}, names), func(string, *Value) error { return stop }); err != stop {
		t.Fatalf("an error from fn: %v, want it returned as is", err)
	}
	projections := []*Projection{NewProjection([]string{"tier"}, names), NewProjection([]string{"gone", "unknown"}, names), NewProjection([]string{"city", "ratio"}, names[:2])}
	check := func(b []byte) {
		for _, p := range projections {
			got, err := DecodeRecordProjected(b, 0, name, p)
			if err != nil {
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("%x: %v, want ErrCorrupt", b, err)
				}
				continue
			}
			if full, ferr := DecodeRecordPositional(b, 0, name); ferr == nil {
				for n, v := range got.Attrs {
					if w, ok := full.Attrs[n]; !ok || !(Attrs{n: v}).Equal(Attrs{n: w}) {
						t.Fatalf("%x: projected %s = %v, whole decode %v", b, n, v, full.Attrs)
					}
				}
			}
		}
	}
	for n := range len(enc) {
		check(enc[:n])
		for _, x := range []byte{0x00, 0x7f, 0xc1, 0xff} {
			b := slices.Clone(enc)
			b[n] = x
			check(b)
		}
	}
}

func mustAttrs(t *testing.T, rec []byte) []byte {
	t.Helper()
	b, err := PositionalAttrs(rec)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
