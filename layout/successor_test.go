package layout

import (
	"bytes"
	"testing"

	"github.com/bitempo/bitempo/encoding"
)

// TestImmediateSuccessorIsTheNextPrefix checks, for record key prefixes and
// other prefix keys, that ImmediateSuccessor appends to dst (keeping what dst
// held) a key greater than the prefix that splits as itself and that no key of
// the prefix reaches, and that it allocates nothing when dst has room.
func TestImmediateSuccessorIsTheNextPrefix(t *testing.T) {
	var prefixes [][]byte
	for _, tuple := range [][]byte{
		mustKey(t, "a"), mustKey(t, "a\x00"), mustKey(t, "\xff\xff"), mustKey(t, int64(-1)), mustKey(t, "g", int64(2)),
	} {
		key := CurrentKeys.Key(nil, 7, tuple, 5, 0)
		prefixes = append(prefixes, key[:Split(key)])
	}
	prefixes = append(prefixes, []byte{Meta}, []byte{Current, 0xff, 0xff})
	for _, p := range prefixes {
		dst := append(make([]byte, 0, 64), "held"...)
		got := ImmediateSuccessor(dst, p)
		if !bytes.HasPrefix(got, []byte("held")) {
			t.Fatalf("prefix %x: dst's bytes lost: %x", p, got)
		}
		succ := got[4:]
		if bytes.Compare(succ, p) <= 0 || Split(succ) != len(succ) {
			t.Fatalf("prefix %x: successor %x is not a greater prefix key", p, succ)
		}
		for _, k := range [][]byte{append(bytes.Clone(p), 0x00), append(bytes.Clone(p), 0xff, 0xff), encoding.AppendTimeDesc(bytes.Clone(p), 0)} {
			if Split(k) == len(p) && bytes.Compare(k, succ) >= 0 {
				t.Fatalf("prefix %x: key %x of the prefix sorts at or after the successor %x", p, k, succ)
			}
		}
		if n := testing.AllocsPerRun(10, func() { ImmediateSuccessor(dst[:4], p) }); n != 0 {
			t.Fatalf("prefix %x: %v allocations with room in dst", p, n)
		}
	}
}

func mustKey(t *testing.T, key ...any) []byte {
	b, err := encoding.AppendKey(nil, key)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
