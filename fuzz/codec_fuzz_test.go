package fuzz

import (
	"bytes"
	"cmp"
	"errors"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bitempo/bitempo/encoding"
)

// byteReader turns fuzz input into values deterministically. Past the end of its
// input it reads zeros, so every input, however short, means something.
type byteReader struct{ b []byte }

func (r *byteReader) byte() byte {
	if len(r.b) == 0 {
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

// bytes returns a fresh, non-nil copy of up to n bytes.
func (r *byteReader) bytes(n int) []byte {
	n = min(n, len(r.b))
	out := append([]byte{}, r.b[:n]...)
	r.b = r.b[n:]
	return out
}

// uint reads an n-byte big-endian unsigned integer.
func (r *byteReader) uint(n int) uint64 {
	var v uint64
	for range n {
		v = v<<8 | uint64(r.byte())
	}
	return v
}

// Component kinds of a key schema.
const (
	kindString = iota
	kindBytes
	kindInt64
	kindUint64
)

// readSchema reads 1 to 4 component kinds: a count byte, then a byte holding two
// bits per kind.
func readSchema(r *byteReader) []int {
	schema := make([]int, 1+r.byte()%4)
	bits := r.byte()
	for i := range schema {
		schema[i] = int(bits>>(2*i)) & 3
	}
	return schema
}

// readTuple reads a tuple of schema: a length byte (high bit set: the tuple is the
// prefix of length%(len+1)), a byte whose bit i copies component i from base, then
// the components.
func readTuple(r *byteReader, schema []int, base []any) []any {
	n := len(schema)
	if l := r.byte(); l&0x80 != 0 {
		n = int(l) % (len(schema) + 1)
	}
	same := r.byte()
	tuple := make([]any, 0, n)
	for i, k := range schema[:n] {
		if same>>i&1 == 1 && i < len(base) {
			tuple = append(tuple, base[i])
			continue
		}
		tuple = append(tuple, readComponent(r, k))
	}
	return tuple
}

// readComponent reads a string or bytes component as a length byte and its bytes,
// and an integer as a mode byte, which mostly picks an edge value, then the value's
// own bytes if any.
func readComponent(r *byteReader, kind int) any {
	switch kind {
	case kindString:
		return string(r.bytes(int(r.byte() % 16)))
	case kindBytes:
		return r.bytes(int(r.byte() % 16))
	case kindInt64:
		edges := []int64{math.MinInt64, -1, 0, 1, math.MaxInt64}
		switch mode := int(r.byte() % 8); {
		case mode < len(edges):
			return edges[mode]
		case mode == 5:
			return int64(int8(r.byte()))
		default:
			return int64(r.uint(8))
		}
	default:
		edges := []uint64{0, 1, math.MaxInt64, 1 << 63, math.MaxUint64}
		switch mode := int(r.byte() % 8); {
		case mode < len(edges):
			return edges[mode]
		case mode == 5:
			return uint64(r.byte())
		default:
			return r.uint(8)
		}
	}
}

func compareTuples(a, b []any) int {
	for i := range min(len(a), len(b)) {
		var c int
		switch x := a[i].(type) {
		case string:
			c = cmp.Compare(x, b[i].(string))
		case []byte:
			c = bytes.Compare(x, b[i].([]byte))
		case int64:
			c = cmp.Compare(x, b[i].(int64))
		case uint64:
			c = cmp.Compare(x, b[i].(uint64))
		}
		if c != 0 {
			return c
		}
	}
	return cmp.Compare(len(a), len(b))
}

func FuzzKeyCodec(f *testing.F) {
	// Interpreted seeds: schema count and kinds, then tuple a, then tuple b.
	f.Add([]byte("\x03\xe4" + "\x00\x00\x03a\x00\xff\x02\x00\x01\x00\x04" + "\x00\x0f"))                // equal tuples
	f.Add([]byte("\x03\xe4" + "\x00\x00\x01\x00\x00\x02\x03" + "\x84\x03"))                             // b is a prefix of a
	f.Add([]byte("\x00\x00" + "\x00\x00\x01a" + "\x00\x00\x02a\x00"))                                   // "a" < "a\x00"
	f.Add([]byte("\x00\x01" + "\x00\x00\x02\x00\x01" + "\x00\x00\x01\xff"))                             // 00 01 < ff
	f.Add([]byte("\x00\x02" + "\x00\x00\x04" + "\x00\x00\x00"))                                         // MaxInt64 > MinInt64
	f.Add([]byte("\x01\x0f" + "\x00\x00\x04\x06\x80\x00\x00\x00\x00\x00\x00\x00" + "\x00\x01\x05\xff")) // uint64 edges
	// Raw encodings, valid and not, for the decoders.
	f.Add([]byte("\x30a\x00\xffb\x00\x01\x20\x7f\xff\xff\xff\xff\xff\xff\xff"))
	f.Add([]byte("\x21\xff\xff\xff\xff\xff\xff\xff\xff\x31\x00\x01"))
	f.Add([]byte("\x30a\x00\x02\x00\x01"))
	f.Add([]byte("\x20\x80\x00"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		checkRawKey(t, data)

		r := &byteReader{b: data}
		schema := readSchema(r)
		a := readTuple(r, schema, nil)
		b := readTuple(r, schema, a)
		encA := checkKeyRoundTrip(t, a)
		encB := checkKeyRoundTrip(t, b)
		if got, want := bytes.Compare(encA, encB), compareTuples(a, b); got != want {
			t.Fatalf("bytes.Compare(%x, %x) = %d, but tuple order of %#v and %#v is %d", encA, encB, got, a, b, want)
		}
	})
}

// checkKeyRoundTrip encodes tuple, checks that every decoder gives it back, and
// returns its encoding.
func checkKeyRoundTrip(t *testing.T, tuple []any) []byte {
	t.Helper()
	enc, err := encoding.AppendKey(nil, tuple)
	if err != nil {
		t.Fatalf("AppendKey(%#v): %v", tuple, err)
	}
	got, err := encoding.DecodeKey(enc)
	if err != nil || len(got) != len(tuple) || (len(tuple) > 0 && !reflect.DeepEqual(got, tuple)) {
		t.Fatalf("DecodeKey(AppendKey(%#v)) = %#v, %v", tuple, got, err)
	}
	suffix := []byte{0x00, 0xff}
	full := append(bytes.Clone(enc), suffix...)
	prefix, rest, err := encoding.DecodeKeyPrefix(full, len(tuple))
	if err != nil || len(prefix) != len(tuple) || (len(tuple) > 0 && !reflect.DeepEqual(prefix, tuple)) || !bytes.Equal(rest, suffix) {
		t.Fatalf("DecodeKeyPrefix(%x, %d) = %#v, %x, %v", full, len(tuple), prefix, rest, err)
	}
	if rest, err := encoding.SkipKey(full, len(tuple)); err != nil || !bytes.Equal(rest, suffix) {
		t.Fatalf("SkipKey(%x, %d) = %x, %v", full, len(tuple), rest, err)
	}
	return enc
}

// checkRawKey feeds arbitrary bytes to the key decoders: they must fail only with
// ErrCorrupt, agree with each other, and accept only canonical encodings.
func checkRawKey(t *testing.T, data []byte) {
	t.Helper()
	key, err := encoding.DecodeKey(data)
	if err != nil {
		if !errors.Is(err, encoding.ErrCorrupt) {
			t.Fatalf("DecodeKey(%x): error %v does not wrap ErrCorrupt", data, err)
		}
	} else if enc, err := encoding.AppendKey(nil, key); err != nil || !bytes.Equal(enc, data) {
		t.Fatalf("DecodeKey(%x) = %#v, which encodes as %x, %v", data, key, enc, err)
	}
	for n := range 5 {
		prefix, rest, err := encoding.DecodeKeyPrefix(data, n)
		skipped, skipErr := encoding.SkipKey(data, n)
		if (err == nil) != (skipErr == nil) {
			t.Fatalf("n=%d on %x: DecodeKeyPrefix error %v, SkipKey error %v", n, data, err, skipErr)
		}
		if err != nil {
			if !errors.Is(err, encoding.ErrCorrupt) || !errors.Is(skipErr, encoding.ErrCorrupt) {
				t.Fatalf("n=%d on %x: errors %v, %v do not wrap ErrCorrupt", n, data, err, skipErr)
			}
			continue
		}
		enc, encErr := encoding.AppendKey(nil, prefix)
		if len(prefix) != n || !bytes.Equal(rest, skipped) || encErr != nil || !bytes.Equal(append(enc, rest...), data) {
			t.Fatalf("n=%d on %x: DecodeKeyPrefix = %#v, %x (encodes as %x, %v); SkipKey = %x", n, data, prefix, rest, enc, encErr, skipped)
		}
	}
}

func FuzzTimeCodec(f *testing.F) {
	f.Add(int64(math.MinInt64), int64(math.MaxInt64))
	f.Add(int64(-1), int64(0))
	f.Add(int64(0), int64(1))
	f.Add(int64(math.MaxInt64), int64(math.MaxInt64))
	f.Add(int64(math.MinInt64), int64(-1))
	f.Add(int64(1), int64(-1))
	f.Fuzz(func(t *testing.T, a, b int64) {
		want := cmp.Compare(a, b)
		ascA, ascB := encoding.AppendTimeAsc(nil, a), encoding.AppendTimeAsc(nil, b)
		if got := bytes.Compare(ascA, ascB); got != want {
			t.Fatalf("asc: bytes.Compare for %d, %d = %d, want %d", a, b, got, want)
		}
		descA, descB := encoding.AppendTimeDesc(nil, a), encoding.AppendTimeDesc(nil, b)
		if got := bytes.Compare(descA, descB); got != -want {
			t.Fatalf("desc: bytes.Compare for %d, %d = %d, want %d", a, b, got, -want)
		}
		for _, v := range []int64{a, b} {
			tail := []byte{0xee}
			got, rest, err := encoding.DecodeTimeAsc(append(encoding.AppendTimeAsc(nil, v), tail...))
			if err != nil || got != v || !bytes.Equal(rest, tail) {
				t.Fatalf("asc round trip of %d = %d, %x, %v", v, got, rest, err)
			}
			got, rest, err = encoding.DecodeTimeDesc(append(encoding.AppendTimeDesc(nil, v), tail...))
			if err != nil || got != v || !bytes.Equal(rest, tail) {
				t.Fatalf("desc round trip of %d = %d, %x, %v", v, got, rest, err)
			}
		}
		// Every 8 bytes are a valid time in both directions, so the codecs are
		// bijections: decoding any word and re-encoding it gives the word back.
		if got, _, err := encoding.DecodeTimeDesc(ascA); err != nil || !bytes.Equal(encoding.AppendTimeDesc(nil, got), ascA) {
			t.Fatalf("DecodeTimeDesc(%x) = %d, %v does not re-encode to its input", ascA, got, err)
		}
		if got := bytes.Compare(encoding.AppendUint64(nil, uint64(a)), encoding.AppendUint64(nil, uint64(b))); got != cmp.Compare(uint64(a), uint64(b)) {
			t.Fatalf("AppendUint64 order of %d, %d = %d", uint64(a), uint64(b), got)
		}
	})
}

func FuzzValueCodec(f *testing.F) {
	f.Add([]byte("\x80"))
	f.Add([]byte("\x82\xa1a\x01\xa1b\xc3"))
	f.Add([]byte("\x87\xa0\xc0\xa1b\xc4\x01\x00\xa1f\xcb\x7f\xf8\x00\x00\x00\x00\x00\x01\xa1i\xd3\x80\x00\x00\x00\x00\x00\x00\x00" +
		"\xa1s\xa2\x00\xff\xa1u\xcf\xff\xff\xff\xff\xff\xff\xff\xff\xa1z\xc2"))
	f.Add([]byte("\xdf\x80\x00\x00\x00"))
	f.Add([]byte("\x81\xa1a\xc6\xff\xff\xff\xff"))
	f.Add([]byte("\x82\xa1a\x01\xa1a\x02"))
	f.Add([]byte("\x81\xa1a\x91\x01"))
	f.Add([]byte("\xde\x00\x01\xd9\x01a\xd3\x00\x00\x00\x00\x00\x00\x00\x05"))
	f.Add([]byte("\x83\xa1a\xd6\xff\x65\xee\x49\x00\xa1b\xd7\xff\x00\x00\x07\xd0\x65\xee\x49\x00\xa1c\xc7\x0c\xff\x00\x00\x00\x00\xff\xff\xff\xff\xff\xff\xff\xff"))
	// Decimals (ext8 of type 1: a scale byte, then the coefficient in the
	// fewest bytes): 0.05, -18 nines at scale 18, and forms every decoder must
	// refuse (a coefficient not in its shortest form, scale 19, 19 digits).
	f.Add([]byte("\x81\xa1p\xc7\x02\x01\x02\x05"))
	f.Add([]byte("\x81\xa1p\xc7\x09\x01\x12\xf2\x1f\x49\x4c\x58\x9c\x00\x01"))
	f.Add([]byte("\x81\xa1p\xc7\x03\x01\x00\x00\x05"))
	f.Add([]byte("\x81\xa1p\xc7\x02\x01\x13\x01"))
	f.Add([]byte("\x81\xa1p\xc7\x09\x01\x00\x0d\xe0\xb6\xb3\xa7\x64\x00\x00"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		checkWalkAttrs(t, data)
		if a, err := encoding.DecodeAttrs(data); err != nil {
			if !errors.Is(err, encoding.ErrCorrupt) {
				t.Fatalf("DecodeAttrs(%x): error %v does not wrap ErrCorrupt", data, err)
			}
		} else {
			checkCanonicalAttrs(t, a)
			enc := appendAttrs(t, a)
			if len(enc) > len(data) {
				t.Fatalf("DecodeAttrs(%x) re-encodes to the longer %x; the canonical form is the smallest", data, enc)
			}
			checkAttrsFixedPoint(t, a, enc)
		}
	})
}

// checkWalkAttrs checks WalkAttrs against DecodeAttrs on arbitrary bytes: it
// fails only with ErrCorrupt, succeeds only where DecodeAttrs does, and then
// reports the same values.
func checkWalkAttrs(t *testing.T, data []byte) {
	t.Helper()
	walked := encoding.Attrs{}
	werr := encoding.WalkAttrs(data, func(name []byte, v *encoding.Value) error {
		walked[string(name)] = v.Any()
		return nil
	})
	a, derr := encoding.DecodeAttrs(data)
	switch {
	case werr != nil && !errors.Is(werr, encoding.ErrCorrupt):
		t.Fatalf("WalkAttrs(%x): error %v does not wrap ErrCorrupt", data, werr)
	case werr == nil && derr != nil:
		t.Fatalf("WalkAttrs(%x) accepts what DecodeAttrs refuses: %v", data, derr)
	case werr == nil && !attrsEqual(walked, a):
		t.Fatalf("WalkAttrs(%x) = %#v, DecodeAttrs %#v", data, walked, a)
	}
}

// FuzzAttrsRoundTrip builds attributes of every accepted Go type from the fuzz
// input, with the canonical value each must decode to, and checks the round trip.
func FuzzAttrsRoundTrip(f *testing.F) {
	// Seeds: the record fields (4 x 8 bytes and flags), then the attribute count,
	// then per attribute a name length, name, type byte and value.
	zeroRecord := strings.Repeat("\x00", 33)
	f.Add([]byte{})
	f.Add([]byte(zeroRecord + "\x03" + "\x00\x00" + "\x01a\x03\xff\xff\xff\xff\xff\xff\xff\xff" + "\x01b\x0f\xff"))
	f.Add([]byte("\x7f\xff\xff\xff\xff\xff\xff\xff\x80\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01\xff\xff\xff\xff\xff\xff\xff\xff\x01" +
		"\x05\x01f\x0d\x7f\xf8\x00\x00\x00\x00\x00\x01\x01g\x0c\x7f\xc0\x00\x01\x00\x0f\xff\x01s\x0e\x02\x00\xff\x01u\x0b\x80\x00\x00\x00\x00\x00\x00\x00"))
	f.Add([]byte(zeroRecord + "\x03" + "\x01a\x04\x80\x00\x00\x00\x00\x00\x00\x00" + "\x01b\x05\x80" + "\x01c\x07\x80\x00\x00\x00"))
	f.Add([]byte(zeroRecord + "\x04" + "\x00\x08\xff" + "\x01a\x09\xff\xff" + "\x01b\x0a\xff\xff\xff\xff" + "\x01c\x03\x7f\xff\xff\xff\xff\xff\xff\xff"))
	f.Add([]byte(zeroRecord + "\x02" + "\x01a\x0c\x80\x00\x00\x00" + "\x01b\x0d\x7f\xf0\x00\x00\x00\x00\x00\x00"))
	f.Add([]byte(zeroRecord + "\x02" + "\x01a\x0b\x00\x00\x00\x00\x00\x00\x00\x07" + "\x01b\x03\x7f\xff\xff\xff\xff\xff\xff\xff"))
	// Times: the range's edges, a timestamp-form boundary, and a free instant
	// with nanoseconds in a zone.
	f.Add([]byte(zeroRecord + "\x04" + "\x01a\x0f\xfe\x00\x00" + "\x01b\x0f\xfe\x01\x00" + "\x01c\x0f\xfe\x05\x03" +
		"\x01d\x0f\xfe\x40\x12\x34\x56\x78\x9a\xbc\xde\xf0\x3b\x9a\xc9\xff\xfb"))
	// Decimals: edges (18 nines at scale 18, 232.10) and a free one.
	f.Add([]byte(zeroRecord + "\x03" + "\x01a\x0f\xfd\x04" + "\x01b\x0f\xfd\x08" +
		"\x01c\x0f\xfd\x40\x12\x34\x56\x78\x9a\xbc\xde\xf1\x07"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &byteReader{b: data}
		rec := encoding.RecordValue{
			ValidTo: int64(r.uint(8)),
			TxFrom:  int64(r.uint(8)),
			TxTo:    int64(r.uint(8)),
			SK:      r.uint(8),
			Flags:   r.byte(),
		}
		if rec.TxTo == math.MaxInt64 { // a current record holds a commit number, not a time
			rec.TxCommit, rec.TxFrom = uint64(rec.TxFrom), 0
		}
		in, want := readAttrs(r)
		rec.Attrs = in
		for name, v := range in {
			if c, err := encoding.Canonical(v); err != nil || !valueEqual(c, want[name]) || reflect.TypeOf(c) != reflect.TypeOf(want[name]) {
				t.Fatalf("Canonical(%T(%v)) = %T(%v), %v; want %T(%v)", v, v, c, c, err, want[name], want[name])
			}
		}

		enc := appendAttrs(t, in)
		if wantEnc := appendAttrs(t, want); !bytes.Equal(enc, wantEnc) {
			t.Fatalf("%#v encodes as %x, its canonical form %#v as %x", in, enc, want, wantEnc)
		}
		got, err := encoding.DecodeAttrs(enc)
		if err != nil || !attrsEqual(got, want) {
			t.Fatalf("DecodeAttrs(AppendAttrs(%#v)) = %#v, %v; want %#v", in, got, err, want)
		}
		checkWalkAttrs(t, enc) // and what AppendAttrs writes, WalkAttrs accepts:
		if err := encoding.WalkAttrs(enc, func([]byte, *encoding.Value) error { return nil }); err != nil {
			t.Fatalf("WalkAttrs(AppendAttrs(%#v)): %v", in, err)
		}
		checkAttrsFixedPoint(t, got, enc)

		// The same attributes in a stored record's positional form, where the
		// encoder takes the record (one whose tx_to is not after its tx_from is
		// refused, and the key's tx_from is not needed: it is in the value).
		names := in.Names()
		ordinal := func(name string) (uint32, bool) { i := slices.Index(names, name); return uint32(i), i >= 0 }
		nameOf := func(ord uint32) (string, bool) {
			if int(ord) < len(names) {
				return names[ord], true
			}
			return "", false
		}
		if recEnc, err := encoding.AppendRecordPositional(nil, &rec, ordinal); err == nil {
			gotRec, err := encoding.DecodeRecordPositional(recEnc, 0, nameOf)
			wantRec := rec
			wantRec.Attrs = want
			if err != nil || !recordsEqual(gotRec, wantRec) {
				t.Fatalf("DecodeRecordPositional(AppendRecordPositional(%+v)) = %+v, %v; want %+v", rec, gotRec, err, wantRec)
			}
		} else if errors.Is(err, encoding.ErrUnsupportedType) {
			t.Fatalf("AppendRecordPositional(%+v): %v, though AppendAttrs took its attributes", rec, err)
		}
	})
}

// readAttrs reads up to 11 attributes: a count byte, then per attribute a name
// (length byte and bytes) and a value (readValue). It returns the attributes as
// built and as they must decode.
func readAttrs(r *byteReader) (in, want encoding.Attrs) {
	in, want = encoding.Attrs{}, encoding.Attrs{}
	for range r.byte() % 12 {
		name := string(r.bytes(int(r.byte() % 8)))
		in[name], want[name] = readValue(r)
	}
	return in, want
}

// readValue reads a type byte and a value of that type, returning the value and
// its canonical form: integers of every width widen to int64 (uint64 stays uint64
// above math.MaxInt64), float32 widens to float64, a nil []byte is empty bytes;
// a time (readTime) and a decimal (readDecimal) are byte strings' escapes.
func readValue(r *byteReader) (in, want any) {
	switch r.byte() % 16 {
	case 0:
		return nil, nil
	case 1:
		v := r.byte()&1 == 1
		return v, v
	case 2:
		v := int64(r.uint(8))
		return v, v
	case 3:
		v := r.uint(8)
		return v, canonicalUint(v)
	case 4:
		v := int(r.uint(8))
		return v, int64(v)
	case 5:
		v := int8(r.byte())
		return v, int64(v)
	case 6:
		v := int16(r.uint(2))
		return v, int64(v)
	case 7:
		v := int32(r.uint(4))
		return v, int64(v)
	case 8:
		v := r.byte()
		return v, int64(v)
	case 9:
		v := uint16(r.uint(2))
		return v, int64(v)
	case 10:
		v := uint32(r.uint(4))
		return v, int64(v)
	case 11:
		v := uint(r.uint(8))
		return v, canonicalUint(uint64(v))
	case 12:
		v := math.Float32frombits(uint32(r.uint(4)))
		return v, float64(v)
	case 13:
		v := math.Float64frombits(r.uint(8))
		return v, v
	case 14:
		v := string(r.bytes(int(r.byte())))
		return v, v
	default:
		n := r.byte()
		switch n {
		case 0xff:
			return []byte(nil), []byte{}
		case 0xfe:
			return readTime(r)
		case 0xfd:
			return readDecimal(r)
		}
		v := r.bytes(int(n))
		return v, bytes.Clone(v)
	}
}

// readTime reads a time attribute: a mode byte (edges of the range and of the
// timestamp forms, or a free instant), then for a free instant 8 bytes of seconds
// (folded into the attribute range), 4 of nanoseconds and a zone offset byte.
// Its canonical form is the instant in UTC truncated to the microsecond.
func readTime(r *byteReader) (in, want any) {
	edges := []time.Time{encoding.MinTime, encoding.MaxTime, time.Unix(0, 0), time.Unix(1<<32-1, 0),
		time.Unix(1<<32, 0), time.Unix(1<<34-1, 999_999_000), time.Unix(1<<34, 0), time.Unix(-1, 999_999_000), {}}
	var tm time.Time
	if mode := int(r.byte()); mode < len(edges) {
		tm = edges[mode]
	} else {
		span := uint64(encoding.MaxTime.Unix() - encoding.MinTime.Unix() + 1)
		sec := encoding.MinTime.Unix() + int64(r.uint(8)%span)
		tm = time.Unix(sec, int64(r.uint(4)%1e9))
	}
	tm = tm.In(time.FixedZone("", (int(int8(r.byte()))%15)*3600))
	return tm, time.UnixMicro(tm.UnixMicro()).UTC()
}

// maxDecimalCoef is the largest decimal coefficient: 18 nines.
const maxDecimalCoef = 999_999_999_999_999_999

// readDecimal reads a decimal attribute: a mode byte picking an edge (zero at
// scales 0 and 18, 18 nines of either sign at scales 0 and 18, the smallest
// steps) or, above them, 8 bytes of coefficient (the low bit its sign, the rest
// folded into 18 digits) and a scale byte (folded into 0-18). A decimal is its
// own canonical form, its scale included.
func readDecimal(r *byteReader) (in, want any) {
	edges := [][2]int64{{0, 0}, {0, 18}, {maxDecimalCoef, 0}, {-maxDecimalCoef, 0}, {maxDecimalCoef, 18},
		{-maxDecimalCoef, 18}, {1, 18}, {-1, 18}, {23210, 2}, {-5, 2}}
	var coef int64
	var scale int
	if mode := int(r.byte()); mode < len(edges) {
		coef, scale = edges[mode][0], int(edges[mode][1])
	} else {
		u := r.uint(8)
		coef = int64((u >> 1) % (maxDecimalCoef + 1))
		if u&1 == 1 {
			coef = -coef
		}
		scale = int(r.byte() % (encoding.MaxDecimalDigits + 1))
	}
	d, err := encoding.NewDecimal(coef, scale)
	if err != nil {
		panic(err)
	}
	return d, d
}

func canonicalUint(u uint64) any {
	if u > math.MaxInt64 {
		return u
	}
	return int64(u)
}

// checkCanonicalAttrs checks that a decoded record holds only canonical values.
func checkCanonicalAttrs(t *testing.T, a encoding.Attrs) {
	t.Helper()
	if a == nil {
		t.Fatal("decoded attributes are a nil map")
	}
	for name, v := range a {
		switch x := v.(type) {
		case nil, bool, int64, float64, string:
		case uint64:
			if x <= math.MaxInt64 {
				t.Fatalf("attribute %q decoded as uint64(%d), want int64", name, x)
			}
		case []byte:
			if x == nil {
				t.Fatalf("attribute %q decoded as a nil []byte", name)
			}
		case time.Time:
			if x.Location() != time.UTC || x.Nanosecond()%1000 != 0 || x.Before(encoding.MinTime) || x.After(encoding.MaxTime) {
				t.Fatalf("attribute %q decoded as the non-canonical time %v", name, x)
			}
		case encoding.Decimal:
			if d, err := encoding.NewDecimal(x.Coef(), x.Scale()); err != nil || d != x {
				t.Fatalf("attribute %q decoded as the invalid decimal %d scale %d: %v", name, x.Coef(), x.Scale(), err)
			}
		default:
			t.Fatalf("attribute %q decoded as a %T", name, v)
		}
	}
}

// checkAttrsFixedPoint checks that enc, the encoding of a, is deterministic and a
// fixed point: it decodes to a value equal to a, which encodes to enc again.
func checkAttrsFixedPoint(t *testing.T, a encoding.Attrs, enc []byte) {
	t.Helper()
	if again := appendAttrs(t, a.Clone()); !bytes.Equal(again, enc) {
		t.Fatalf("AppendAttrs(%#v) is not deterministic: %x, then %x", a, enc, again)
	}
	a2, err := encoding.DecodeAttrs(enc)
	if err != nil || !attrsEqual(a, a2) {
		t.Fatalf("DecodeAttrs(%x) = %#v, %v; want %#v", enc, a2, err, a)
	}
	if enc2 := appendAttrs(t, a2); !bytes.Equal(enc2, enc) {
		t.Fatalf("encoding changed on a second round trip: %x, then %x", enc, enc2)
	}
}

func appendAttrs(t *testing.T, a encoding.Attrs) []byte {
	t.Helper()
	enc, err := encoding.AppendAttrs(nil, a)
	if err != nil {
		t.Fatalf("AppendAttrs(%#v): %v", a, err)
	}
	return enc
}

// valueEqual compares attribute values exactly: floats by their bits (NaN equals
// itself, -0 differs from +0), bytes by content.
func valueEqual(a, b any) bool {
	switch x := a.(type) {
	case float64:
		y, ok := b.(float64)
		return ok && math.Float64bits(x) == math.Float64bits(y)
	case []byte:
		y, ok := b.([]byte)
		return ok && bytes.Equal(x, y)
	}
	return a == b
}

func attrsEqual(a, b encoding.Attrs) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || !valueEqual(v, w) {
			return false
		}
	}
	return true
}

func recordsEqual(a, b encoding.RecordValue) bool {
	return a.ValidTo == b.ValidTo && a.TxFrom == b.TxFrom && a.TxTo == b.TxTo && a.TxCommit == b.TxCommit &&
		a.SK == b.SK && a.Flags == b.Flags && attrsEqual(a.Attrs, b.Attrs)
}
