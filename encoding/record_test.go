package encoding

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

func mustAppendRecord(t testing.TB, r *RecordValue) []byte {
	t.Helper()
	b, err := AppendRecord(nil, r)
	if err != nil {
		t.Fatalf("AppendRecord(%+v): %v", r, err)
	}
	return b
}

func recordsEqual(a, b RecordValue) bool {
	return a.ValidTo == b.ValidTo && a.TxFrom == b.TxFrom && a.TxTo == b.TxTo &&
		a.SK == b.SK && a.Flags == b.Flags && attrsEqual(a.Attrs, b.Attrs)
}

func TestRecordRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		r    RecordValue
	}{
		{"zero", RecordValue{}},
		{"current open", RecordValue{ValidTo: math.MaxInt64, TxFrom: 1, TxTo: math.MaxInt64, SK: 1, Attrs: Attrs{"city": "Oslo"}}},
		{"min times", RecordValue{ValidTo: math.MinInt64, TxFrom: math.MinInt64, TxTo: math.MinInt64}},
		{"max times", RecordValue{ValidTo: math.MaxInt64, TxFrom: math.MaxInt64, TxTo: math.MaxInt64, SK: math.MaxUint64}},
		{"negative times", RecordValue{ValidTo: -1, TxFrom: -62135596800000000, TxTo: -33}},
		{"sk 2^63", RecordValue{SK: 1 << 63}},
		{"inferred", RecordValue{ValidTo: 5, TxFrom: 2, TxTo: 3, SK: 4, Flags: FlagInferred}},
		{"all flags", RecordValue{Flags: 0xff}},
		{"attrs of every type", RecordValue{
			ValidTo: 253402300800000000, TxFrom: 1700000000000000, TxTo: math.MaxInt64, SK: 42,
			Attrs: Attrs{
				"nil": nil, "bool": true, "int": int64(math.MinInt64), "uint": uint64(math.MaxUint64),
				"float": math.Inf(-1), "nan": math.NaN(), "str": "Bergen\x00", "bytes": []byte{0xff, 0},
			},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			enc, err := AppendRecord([]byte("head"), &tt.r)
			if err != nil {
				t.Fatalf("AppendRecord: %v", err)
			}
			if !bytes.HasPrefix(enc, []byte("head")) {
				t.Fatalf("AppendRecord dropped dst: %x", enc)
			}
			enc = enc[len("head"):]
			got, err := DecodeRecord(enc)
			if err != nil {
				t.Fatalf("DecodeRecord(%x): %v", enc, err)
			}
			want := tt.r
			if want.Attrs == nil {
				want.Attrs = Attrs{}
			}
			if !recordsEqual(got, want) || got.Attrs == nil {
				t.Fatalf("round trip = %+v, want %+v", got, want)
			}
			if again := mustAppendRecord(t, &got); !bytes.Equal(again, enc) {
				t.Fatalf("re-encoding the decoded record changed its bytes:\n%x\n%x", enc, again)
			}
		})
	}
}

// TestRecordLayout pins [format, valid_to, tx_from, tx_to, sk, flags, attrs] with
// integers in their smallest form.
func TestRecordLayout(t *testing.T) {
	got := mustAppendRecord(t, &RecordValue{ValidTo: -1, TxFrom: 1, TxTo: 200, SK: 7, Flags: FlagInferred, Attrs: Attrs{"a": true}})
	want := []byte{0x97, 0x01, 0xff, 0x01, 0xcc, 0xc8, 0x07, 0x01, 0x81, 0xa1, 'a', 0xc3}
	if !bytes.Equal(got, want) {
		t.Fatalf("AppendRecord = %x, want %x", got, want)
	}
}

// TestRecordOpenEnds checks that an open valid_to or tx_to (math.MaxInt64) is
// written as one nil byte, and that the nine-byte integer form of +∞, which
// stores written before that encoding hold, decodes to the same record.
func TestRecordOpenEnds(t *testing.T) {
	open := RecordValue{ValidTo: math.MaxInt64, TxFrom: 5, TxTo: math.MaxInt64, SK: 7, Attrs: Attrs{}}
	got := mustAppendRecord(t, &open)
	want := []byte{0x97, 0x01, 0xc0, 0x05, 0xc0, 0x07, 0x00, 0x80}
	if !bytes.Equal(got, want) {
		t.Fatalf("AppendRecord(open) = %x, want %x", got, want)
	}
	closed := open
	closed.ValidTo, closed.TxTo = math.MaxInt64-1, math.MaxInt64-1
	if n := len(mustAppendRecord(t, &closed)); n != len(want)+16 {
		t.Fatalf("a record with finite ends near +∞ takes %d bytes, want %d", n, len(want)+16)
	}
	intForm := rawRecord(t, 7, 1, binaryForm(0xcf, math.MaxInt64), 5, binaryForm(0xd3, math.MaxInt64), 7, 0, []byte{0x80})
	for _, b := range [][]byte{got, intForm} {
		dec, err := DecodeRecord(b)
		if err != nil || !recordsEqual(dec, open) {
			t.Errorf("DecodeRecord(%x) = %+v, %v; want %+v", b, dec, err, open)
		}
		head, err := DecodeRecordHead(b)
		if err != nil || head.ValidTo != math.MaxInt64 || head.TxTo != math.MaxInt64 {
			t.Errorf("DecodeRecordHead(%x) = %+v, %v; want open ends", b, head, err)
		}
	}
}

// rawRecord writes a record array from its parts without AppendRecord's checks.
func rawRecord(t testing.TB, n int, fields ...any) []byte {
	t.Helper()
	return msgp(t, func(enc *msgpack.Encoder) error {
		if err := enc.EncodeArrayLen(n); err != nil {
			return err
		}
		for _, f := range fields {
			var err error
			switch v := f.(type) {
			case int:
				err = enc.EncodeInt(int64(v))
			case uint64:
				err = enc.EncodeUint(v)
			case []byte: // already encoded
				err = enc.Encode(msgpack.RawMessage(v))
			default:
				err = enc.Encode(v)
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
}

func TestRecordMalformed(t *testing.T) {
	emptyAttrs := []byte{0x80}
	valid := rawRecord(t, 7, 1, 10, 1, 2, 3, 0, emptyAttrs)
	if _, err := DecodeRecord(valid); err != nil {
		t.Fatalf("the valid base case does not decode: %v", err)
	}
	tests := []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"nil", []byte{0xc0}},
		{"map", []byte{0x80}},
		{"format 0", rawRecord(t, 7, 0, 10, 1, 2, 3, 0, emptyAttrs)},
		{"format 2", rawRecord(t, 7, 2, 10, 1, 2, 3, 0, emptyAttrs)},
		{"format -1", rawRecord(t, 7, -1, 10, 1, 2, 3, 0, emptyAttrs)},
		{"format string", rawRecord(t, 7, "1", 10, 1, 2, 3, 0, emptyAttrs)},
		{"array of 6", rawRecord(t, 6, 1, 10, 1, 2, 3, 0, emptyAttrs)},
		{"array of 6, no attrs", rawRecord(t, 6, 1, 10, 1, 2, 3, 0)},
		{"array of 8", rawRecord(t, 8, 1, 10, 1, 2, 3, 0, emptyAttrs, emptyAttrs)},
		{"array of 8 holding 7", rawRecord(t, 8, 1, 10, 1, 2, 3, 0, emptyAttrs)},
		{"array of 0", []byte{0x90}},
		{"valid_to string", rawRecord(t, 7, 1, "x", 1, 2, 3, 0, emptyAttrs)},
		{"valid_to float", rawRecord(t, 7, 1, 1.5, 1, 2, 3, 0, emptyAttrs)},
		{"sk bytes", rawRecord(t, 7, 1, 10, 1, 2, []byte{0xc4, 0x00}, 0, emptyAttrs)},
		{"sk -1", rawRecord(t, 7, 1, 10, 1, 2, -1, 0, emptyAttrs)},
		{"sk MinInt64", rawRecord(t, 7, 1, 10, 1, 2, int64(math.MinInt64), 0, emptyAttrs)},
		{"sk nil", rawRecord(t, 7, 1, 10, 1, 2, []byte{0xc0}, 0, emptyAttrs)},
		{"tx_from nil", rawRecord(t, 7, 1, 10, []byte{0xc0}, 2, 3, 0, emptyAttrs)},
		{"format nil", rawRecord(t, 7, []byte{0xc0}, 10, 1, 2, 3, 0, emptyAttrs)},
		{"tx_from bool", rawRecord(t, 7, 1, 10, true, 2, 3, 0, emptyAttrs)},
		{"tx_to above MaxInt64", rawRecord(t, 7, 1, 10, 1, uint64(1<<63), 3, 0, emptyAttrs)},
		{"flags -1", rawRecord(t, 7, 1, 10, 1, 2, 3, -1, emptyAttrs)},
		{"flags nil", rawRecord(t, 7, 1, 10, 1, 2, 3, []byte{0xc0}, emptyAttrs)},
		{"flags 256", rawRecord(t, 7, 1, 10, 1, 2, 3, 256, emptyAttrs)},
		{"flags 2^64-1", rawRecord(t, 7, 1, 10, 1, 2, 3, uint64(math.MaxUint64), emptyAttrs)},
		{"attrs nil", rawRecord(t, 7, 1, 10, 1, 2, 3, 0, []byte{0xc0})},
		{"attrs array", rawRecord(t, 7, 1, 10, 1, 2, 3, 0, []byte{0x90})},
		{"attrs nested", rawRecord(t, 7, 1, 10, 1, 2, 3, 0, []byte{0x81, 0xa1, 'a', 0x80})},
		{"attrs duplicate", rawRecord(t, 7, 1, 10, 1, 2, 3, 0, []byte{0x82, 0xa1, 'a', 0x01, 0xa1, 'a', 0x01})},
		{"attrs map32 2^31", rawRecord(t, 7, 1, 10, 1, 2, 3, 0, []byte{0xdf, 0x80, 0x00, 0x00, 0x00})},
		{"trailing byte", append(bytes.Clone(valid), 0x00)},
		{"two records", append(bytes.Clone(valid), valid...)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeRecord(tt.b)
			checkCorrupt(t, fmt.Sprintf("DecodeRecord(%x)", tt.b), err)
		})
	}
}

// TestRecordWideIntegers checks that integers in wider msgpack forms than the
// encoder writes still decode when their value fits the field.
func TestRecordWideIntegers(t *testing.T) {
	int64Form := func(v int64) []byte { return binaryForm(0xd3, uint64(v)) }
	b := rawRecord(t, 7, 1, int64Form(-5), binaryForm(0xcf, math.MaxInt64), int64Form(math.MinInt64), int64Form(9), binaryForm(0xcd, 0x00ff), []byte{0x80})
	got, err := DecodeRecord(b)
	want := RecordValue{ValidTo: -5, TxFrom: math.MaxInt64, TxTo: math.MinInt64, SK: 9, Flags: 0xff, Attrs: Attrs{}}
	if err != nil || !recordsEqual(got, want) {
		t.Fatalf("DecodeRecord(%x) = %+v, %v; want %+v", b, got, err, want)
	}
}

// binaryForm returns msgpack code c followed by v big-endian in the code's width.
func binaryForm(c byte, v uint64) []byte {
	width := map[byte]int{0xcc: 1, 0xcd: 2, 0xce: 4, 0xcf: 8, 0xd0: 1, 0xd1: 2, 0xd2: 4, 0xd3: 8}[c]
	out := []byte{c}
	for i := width - 1; i >= 0; i-- {
		out = append(out, byte(v>>(8*i)))
	}
	return out
}

// TestRecordTruncated cuts a valid record at every byte offset; every cut must be
// an error wrapping ErrCorrupt (a panic fails the test too).
func TestRecordTruncated(t *testing.T) {
	enc := mustAppendRecord(t, &RecordValue{
		ValidTo: math.MaxInt64, TxFrom: math.MinInt64, TxTo: -200, SK: math.MaxUint64, Flags: 0x81,
		Attrs: Attrs{"s": "Oslo", "b": []byte{0}, "f": 0.5, "n": nil, "i": int64(1 << 40)},
	})
	for cut := range len(enc) {
		r, err := DecodeRecord(enc[:cut])
		if !errors.Is(err, ErrCorrupt) {
			t.Errorf("DecodeRecord(enc[:%d]) = %+v, %v; want ErrCorrupt", cut, r, err)
		}
	}
}
