package encoding

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// headEqual compares everything DecodeRecordHead decodes.
func headEqual(a, b RecordValue) bool {
	return a.ValidTo == b.ValidTo && a.TxFrom == b.TxFrom && a.TxTo == b.TxTo && a.SK == b.SK && a.Flags == b.Flags
}

func TestRecordHeadRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	ints := []int64{0, 1, -1, 127, 128, -32, -33, 255, 256, -128, -129, 65535, 65536, -32768, -32769,
		math.MaxInt32, math.MaxInt32 + 1, math.MinInt32, math.MinInt32 - 1, math.MaxInt64, math.MinInt64}
	pick := func() int64 {
		if rng.IntN(2) == 0 {
			return ints[rng.IntN(len(ints))]
		}
		return int64(rng.Uint64())
	}
	for i := 0; i < 2000; i++ {
		r := RecordValue{ValidTo: pick(), TxFrom: pick(), TxTo: pick(), SK: uint64(pick()), Flags: uint8(rng.IntN(256)),
			Attrs: Attrs{"city": "Oslo", "n": pick()}}
		enc := mustAppendRecord(t, &r)
		got, err := DecodeRecordHead(enc)
		if err != nil {
			t.Fatalf("DecodeRecordHead(%x): %v", enc, err)
		}
		if !headEqual(got, r) || got.Attrs != nil {
			t.Fatalf("DecodeRecordHead = %+v, want %+v without attrs", got, r)
		}
	}
}

// TestRecordHeadAgreesWithDecodeRecord feeds both decoders headers in every
// integer width msgpack has (not only the smallest, which AppendRecord writes):
// whenever DecodeRecord accepts a value, DecodeRecordHead reads the same fields.
func TestRecordHeadAgreesWithDecodeRecord(t *testing.T) {
	widths := []func(*msgpack.Encoder, int64) error{
		func(e *msgpack.Encoder, v int64) error { return e.EncodeInt(v) },
		func(e *msgpack.Encoder, v int64) error { return e.EncodeInt8(int8(v)) },
		func(e *msgpack.Encoder, v int64) error { return e.EncodeInt16(int16(v)) },
		func(e *msgpack.Encoder, v int64) error { return e.EncodeInt32(int32(v)) },
		func(e *msgpack.Encoder, v int64) error { return e.EncodeInt64(v) },
		func(e *msgpack.Encoder, v int64) error { return e.EncodeUint8(uint8(v)) },
		func(e *msgpack.Encoder, v int64) error { return e.EncodeUint16(uint16(v)) },
		func(e *msgpack.Encoder, v int64) error { return e.EncodeUint32(uint32(v)) },
		func(e *msgpack.Encoder, v int64) error { return e.EncodeUint64(uint64(v)) },
		func(e *msgpack.Encoder, v int64) error { return e.EncodeNil() },
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 5000; i++ {
		vals := []int64{1, int64(rng.Uint64()) >> rng.IntN(64), -int64(rng.IntN(1000)), int64(rng.IntN(300)), int64(rng.Uint64()), int64(rng.IntN(300))}
		if rng.IntN(10) == 0 {
			vals[0] = int64(rng.IntN(3)) // sometimes a wrong format
		}
		enc := msgp(t, func(e *msgpack.Encoder) error {
			if err := e.EncodeArrayLen(7); err != nil {
				return err
			}
			for _, v := range vals {
				if err := widths[rng.IntN(len(widths))](e, v); err != nil {
					return err
				}
			}
			return e.EncodeMapLen(0)
		})
		full, ferr := DecodeRecord(enc)
		head, herr := DecodeRecordHead(enc)
		if (ferr == nil) != (herr == nil) {
			t.Fatalf("%x: DecodeRecord err %v, DecodeRecordHead err %v", enc, ferr, herr)
		}
		if ferr == nil && !headEqual(full, head) {
			t.Fatalf("%x: DecodeRecord %+v, DecodeRecordHead %+v", enc, full, head)
		}
		if herr != nil && !errors.Is(herr, ErrCorrupt) {
			t.Fatalf("%x: error %v is not ErrCorrupt", enc, herr)
		}
	}
}

func TestRecordHeadMalformed(t *testing.T) {
	good := mustAppendRecord(t, &RecordValue{ValidTo: math.MaxInt64, TxFrom: 1 << 40, TxTo: math.MaxInt64, SK: 1 << 33})
	for n := 0; n < len(good)-1; n++ { // every truncation of the header (the attrs map is the last byte)
		if _, err := DecodeRecordHead(good[:n]); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("truncated to %d bytes: err %v, want ErrCorrupt", n, err)
		}
	}
	for _, b := range [][]byte{
		{0x96, 1, 1, 1, 1, 1, 1},          // six elements
		{0x97, 2, 1, 1, 1, 1, 1},          // format 2
		{0x97, 1, 0xa1, 'x'},              // a string where an integer belongs
		{0x97, 1, 1, 1, 1, 1, 0xcd, 1, 0}, // flags 256
		{0x81, 0xa1, 'a', 0xc3},           // a map, not an array
	} {
		if _, err := DecodeRecordHead(b); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("%x: err %v, want ErrCorrupt", b, err)
		}
	}
}

func BenchmarkDecodeRecordHead(b *testing.B) {
	enc := mustAppendRecord(b, &RecordValue{ValidTo: math.MaxInt64, TxFrom: 1 << 50, TxTo: math.MaxInt64, SK: 123456,
		Attrs: Attrs{"city": "Oslo", "name": "Alice Smith", "segment": int64(3)}})
	b.Run("head", func(b *testing.B) {
		for b.Loop() {
			if _, err := DecodeRecordHead(enc); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("full", func(b *testing.B) {
		for b.Loop() {
			if _, err := DecodeRecord(enc); err != nil {
				b.Fatal(err)
			}
		}
	})
}
