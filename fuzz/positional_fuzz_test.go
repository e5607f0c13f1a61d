package fuzz

import (
	"bytes"
	"errors"
	"slices"
	"testing"

	"github.com/bitempo/bitempo/encoding"
)

// positionalNames is the name table FuzzRecordPositional decodes with: ordinals
// 0-3 have names, every other ordinal is unknown (corruption).
var positionalNames = []string{"city", "tier", "note", "x"}

// positionalKeyTx is the tx_from the fuzzed values' keys hold.
const positionalKeyTx = 1 << 50

func positionalName(ord uint32) (string, bool) {
	if int(ord) < len(positionalNames) {
		return positionalNames[ord], true
	}
	return "", false
}

func positionalOrdinal(name string) (uint32, bool) {
	i := slices.Index(positionalNames, name)
	return uint32(i), i >= 0
}

// FuzzRecordPositional decodes arbitrary bytes as a stored record value of
// format 3 (encoding.DecodeRecordPositional): it must fail with ErrCorrupt or
// decode to canonical attributes whose encoding is no longer than the input
// (the canonical form is the smallest) and decodes to the same record again.
func FuzzRecordPositional(f *testing.F) {
	for _, r := range []encoding.RecordValue{
		{ValidTo: 1 << 62, TxFrom: 1 << 50, TxTo: 1<<50 + 7, SK: 9, Flags: encoding.FlagInferred,
			Attrs: encoding.Attrs{"city": "Oslo", "tier": int64(-2), "note": nil, "x": []byte{1}}},
		{ValidTo: 5, TxCommit: 3, TxTo: 1<<63 - 1, SK: 1 << 40, Attrs: encoding.Attrs{"x": 0.25}},
		{ValidTo: 9, TxFrom: 2, TxTo: 4, Attrs: encoding.Attrs{"tier": mustDecimal(-999_999_999_999_999_999, 18), "x": mustDecimal(23210, 2)}},
	} {
		enc, err := encoding.AppendRecordPositional(nil, &r, positionalOrdinal)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(enc)
		if r.TxTo != 1<<63-1 {
			retired, err := encoding.AppendRecordRetired(nil, &r, positionalOrdinal)
			if err != nil {
				f.Fatal(err)
			}
			shared, err := encoding.AppendRecordShared(nil, &r)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(retired)
			f.Add(shared)
		}
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := encoding.DecodeRecordPositional(data, positionalKeyTx, positionalName)
		head, herr := encoding.DecodeRecordHeadPositional(data, positionalKeyTx)
		checkProjections(t, data, r, err)
		if err != nil {
			if !errors.Is(err, encoding.ErrCorrupt) {
				t.Fatalf("DecodeRecordPositional(%x): error %v does not wrap ErrCorrupt", data, err)
			}
			if herr != nil && !errors.Is(herr, encoding.ErrCorrupt) {
				t.Fatalf("DecodeRecordHeadPositional(%x): error %v does not wrap ErrCorrupt", data, herr)
			}
			return
		}
		if herr != nil || head.ValidTo != r.ValidTo || head.TxFrom != r.TxFrom || head.TxCommit != r.TxCommit || head.TxTo != r.TxTo || head.SK != r.SK || head.Flags != r.Flags {
			t.Fatalf("%x: the head decodes as %+v, %v; the record as %+v", data, head, herr, r)
		}
		var enc []byte
		if encoding.SharesAttrs(data) {
			if r.Attrs != nil {
				t.Fatalf("%x: a record that shares its attributes decoded some: %v", data, r.Attrs)
			}
			enc, err = encoding.AppendRecordShared(nil, &r)
		} else if checkCanonicalAttrs(t, r.Attrs); encoding.KeyedTxFrom(data) {
			if r.TxFrom != positionalKeyTx {
				t.Fatalf("%x: tx_from %d, not the key's %d", data, r.TxFrom, positionalKeyTx)
			}
			enc, err = encoding.AppendRecordRetired(nil, &r, positionalOrdinal)
		} else {
			enc, err = encoding.AppendRecordPositional(nil, &r, positionalOrdinal)
		}
		if err != nil {
			t.Fatalf("re-encoding %+v decoded from %x: %v", r, data, err)
		}
		if len(enc) > len(data) {
			t.Fatalf("%x re-encodes to the longer %x; the canonical form is the smallest", data, enc)
		}
		r2, err := encoding.DecodeRecordPositional(enc, positionalKeyTx, positionalName)
		if err != nil || !recordsEqual(r, r2) {
			t.Fatalf("%x: round trip of %+v gives %+v, %v", enc, r, r2, err)
		}
		if !encoding.SharesAttrs(enc) && !encoding.KeyedTxFrom(enc) {
			if again, _ := encoding.AppendRecordPositional(nil, &r2, positionalOrdinal); !bytes.Equal(again, enc) {
				t.Fatalf("record encoding changed on a second round trip: %x, then %x", enc, again)
			}
		}
	})
}

// positionalProjections are the projections FuzzRecordPositional decodes every
// input with: one name, the last, names some of which have no ordinal yet, and
// names the projection learns only by name (ordinals beyond its Keep).
var positionalProjections = []*encoding.Projection{
	encoding.NewProjection([]string{"tier"}, positionalNames),
	encoding.NewProjection([]string{"x"}, positionalNames),
	encoding.NewProjection([]string{"city", "absent"}, positionalNames),
	encoding.NewProjection([]string{"note", "x"}, positionalNames[:1]),
}

// checkProjections decodes data with every projection: an error wraps
// ErrCorrupt, and when the whole decode succeeded (r, err) the projection does
// too, holding exactly r's attributes restricted to its names.
func checkProjections(t *testing.T, data []byte, r encoding.RecordValue, err error) {
	for _, p := range positionalProjections {
		pr, perr := encoding.DecodeRecordProjected(data, positionalKeyTx, positionalName, p)
		if perr != nil && !errors.Is(perr, encoding.ErrCorrupt) {
			t.Fatalf("DecodeRecordProjected(%x, %q): error %v does not wrap ErrCorrupt", data, p.Names, perr)
		}
		if err != nil {
			continue
		}
		if perr != nil {
			t.Fatalf("%x: the record decodes, the projection %q fails: %v", data, p.Names, perr)
		}
		if r.Attrs == nil {
			if pr.Attrs != nil {
				t.Fatalf("%x: a record that shares its attributes projected some: %v", data, pr.Attrs)
			}
			continue
		}
		want := encoding.Attrs{}
		for _, n := range p.Names {
			if v, ok := r.Attrs[n]; ok {
				want[n] = v
			}
		}
		if !pr.Attrs.Equal(want) || pr.SK != r.SK || pr.ValidTo != r.ValidTo || pr.TxTo != r.TxTo {
			t.Fatalf("%x: projection %q decodes %+v, want attributes %v of %+v", data, p.Names, pr, want, r)
		}
	}
}

func mustDecimal(coef int64, scale int) encoding.Decimal {
	d, err := encoding.NewDecimal(coef, scale)
	if err != nil {
		panic(err)
	}
	return d
}
