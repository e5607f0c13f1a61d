package encoding

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"testing"
	"time"
)

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t.UTC()
}

// TestTimeValueRoundTrip checks that every time attribute value decodes to its
// canonical form (UTC, whole microseconds), in each of the timestamp forms.
func TestTimeValueRoundTrip(t *testing.T) {
	oslo := time.FixedZone("CET", 3600)
	tests := []struct {
		name    string
		in      time.Time
		want    time.Time
		encSize int // bytes of the value: header, type, payload
	}{
		{"epoch", time.Unix(0, 0), utc("1970-01-01T00:00:00Z"), 6},
		{"whole second", utc("2024-03-11T00:00:00Z"), utc("2024-03-11T00:00:00Z"), 6},
		{"microseconds", utc("2024-03-11T09:30:00.123456Z"), utc("2024-03-11T09:30:00.123456Z"), 10},
		{"nanoseconds truncated", utc("2024-03-11T09:30:00.123456789Z"), utc("2024-03-11T09:30:00.123456Z"), 10},
		{"zone dropped", time.Date(2024, 3, 11, 10, 30, 0, 0, oslo), utc("2024-03-11T09:30:00Z"), 6},
		{"before 1970 truncates to the past", utc("1969-12-31T23:59:59.9999999Z"), utc("1969-12-31T23:59:59.999999Z"), 15},
		{"year 1 (zero time)", time.Time{}, utc("0001-01-01T00:00:00Z"), 15},
		{"after 2514", utc("2600-01-01T00:00:00.5Z"), utc("2600-01-01T00:00:00.5Z"), 15},
		{"min", MinTime, MinTime, 15},
		{"max", MaxTime, MaxTime, 15},
		{"monotonic reading dropped", time.Unix(1700000000, 1000).Add(0), time.Unix(1700000000, 1000).UTC(), 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := Attrs{"t": tt.in}
			enc := mustAppendAttrs(t, in)
			if got := len(enc) - 3; got != tt.encSize { // 0x81, fixstr "t"
				t.Errorf("encoded value is %d bytes (%x), want %d", got, enc, tt.encSize)
			}
			got, err := DecodeAttrs(enc)
			if err != nil {
				t.Fatalf("DecodeAttrs(%x): %v", enc, err)
			}
			gt, ok := got["t"].(time.Time)
			if !ok || gt != tt.want || gt.Location() != time.UTC {
				t.Fatalf("round trip of %v = %#v, want %v", tt.in, got["t"], tt.want)
			}
			if again := mustAppendAttrs(t, got); !bytes.Equal(again, enc) {
				t.Fatalf("re-encoding changed the bytes: %x, then %x", enc, again)
			}
			c, err := Canonical(tt.in)
			if err != nil || c != tt.want {
				t.Fatalf("Canonical(%v) = %v, %v; want %v", tt.in, c, err, tt.want)
			}
			r := RecordValue{ValidTo: 5, TxCommit: 1, TxTo: math.MaxInt64, SK: 9, Attrs: in}
			only := func(name string) (uint32, bool) { return 0, name == "t" }
			renc, err := AppendRecordPositional(nil, &r, only)
			if err != nil {
				t.Fatal(err)
			}
			rv, err := DecodeRecordPositional(renc, 0, func(ord uint32) (string, bool) { return "t", ord == 0 })
			if err != nil || rv.Attrs["t"] != tt.want {
				t.Fatalf("DecodeRecordPositional(AppendRecordPositional) = %v, %v; want %v", rv.Attrs, err, tt.want)
			}
		})
	}
}

// TestTimeOutOfRange checks that a time beyond the attribute range is refused by
// the encoder, not wrapped around.
func TestTimeOutOfRange(t *testing.T) {
	for _, tm := range []time.Time{MinTime.Add(-time.Microsecond), MaxTime.Add(time.Microsecond), time.Date(300000, 1, 1, 0, 0, 0, 0, time.UTC)} {
		if _, err := AppendAttrs(nil, Attrs{"t": tm}); !errors.Is(err, ErrUnsupportedType) {
			t.Errorf("AppendAttrs of %v: %v, want ErrUnsupportedType", tm, err)
		}
		if _, err := Canonical(tm); !errors.Is(err, ErrUnsupportedType) {
			t.Errorf("Canonical(%v): %v, want ErrUnsupportedType", tm, err)
		}
	}
}

// TestTimeDecodeForms checks the decoder against hand-written timestamps: every
// form of the same instant decodes to it, and malformed or non-canonical ones
// are corrupt.
func TestTimeDecodeForms(t *testing.T) {
	attr := func(v []byte) []byte { return append([]byte{0x81, 0xa1, 't'}, v...) }
	ts32 := func(sec uint32) []byte {
		return binary.BigEndian.AppendUint32([]byte{0xd6, 0xff}, sec)
	}
	ts64 := func(sec, nsec uint64) []byte {
		return binary.BigEndian.AppendUint64([]byte{0xd7, 0xff}, nsec<<34|sec)
	}
	ts96 := func(sec int64, nsec uint32) []byte {
		b := binary.BigEndian.AppendUint32([]byte{0xc7, 12, 0xff}, nsec)
		return binary.BigEndian.AppendUint64(b, uint64(sec))
	}
	want := utc("2024-03-11T00:00:00Z")
	for _, v := range [][]byte{ts32(uint32(want.Unix())), ts64(uint64(want.Unix()), 0), ts96(want.Unix(), 0)} {
		a, err := DecodeAttrs(attr(v))
		if err != nil || a["t"] != want {
			t.Errorf("DecodeAttrs(%x) = %v, %v; want %v", attr(v), a, err, want)
		}
	}
	a, err := DecodeAttrs(attr(ts96(-1, 500_000_000)))
	if err != nil || a["t"] != utc("1969-12-31T23:59:59.5Z") {
		t.Errorf("negative seconds: %v, %v", a, err)
	}
	bad := map[string][]byte{
		"nanoseconds":           ts64(1, 1),
		"nanoseconds over 1e9":  ts96(1, 1_000_000_000),
		"seconds beyond range":  ts96(math.MaxInt64, 0),
		"seconds before range":  ts96(math.MinInt64, 0),
		"other extension type":  {0xd6, 0x01, 0, 0, 0, 0},
		"ext8 of 5 bytes":       {0xc7, 5, 0xff, 0, 0, 0, 0, 0},
		"truncated fixext4":     {0xd6, 0xff, 0, 0},
		"truncated fixext8":     {0xd7, 0xff, 0, 0, 0, 0, 0},
		"truncated ext8":        {0xc7, 12, 0xff, 0},
		"ext8 without a length": {0xc7},
		"fixext1":               {0xd4, 0xff, 0},
		"fixext16":              append([]byte{0xd8, 0xff}, make([]byte, 16)...),
	}
	for name, v := range bad {
		if a, err := DecodeAttrs(attr(v)); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: DecodeAttrs(%x) = %v, %v; want ErrCorrupt", name, attr(v), a, err)
		}
	}
}

// TestTimeEqual checks Attrs.Equal on times against the encodings, including
// times that are equal instants in different zones and at sub-microsecond
// precision.
func TestTimeEqual(t *testing.T) {
	base := utc("2024-03-11T09:30:00.000001Z")
	values := []any{base, base.In(time.FixedZone("X", -7200)), base.Add(500 * time.Nanosecond), base.Add(time.Microsecond),
		time.Time{}, base.UnixMicro(), "2024-03-11T09:30:00.000001Z", nil}
	for _, x := range values {
		for _, y := range values {
			a, b := Attrs{"t": x}, Attrs{"t": y}
			want := bytes.Equal(mustAppendAttrs(t, a), mustAppendAttrs(t, b))
			if got := a.Equal(b); got != want {
				t.Errorf("Equal(%v, %v) = %v, encodings equal %v", x, y, got, want)
			}
		}
	}
	if (Attrs{"t": MaxTime.Add(time.Second)}).Equal(Attrs{"t": MaxTime.Add(time.Second)}) {
		t.Error("an out-of-range time, which cannot be encoded, is Equal")
	}
}
