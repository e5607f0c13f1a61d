package encoding

import (
	"bytes"
	"fmt"
	"math"

	"github.com/vmihailenco/msgpack/v5"
)

// recordFormat is the first element of every encoded record value; a decoder that
// meets another number refuses the value rather than guessing its shape.
const recordFormat = 1

// Record flags.
const (
	// FlagInferred marks a placeholder version created for a key that was unknown
	// when a fact referenced it (a late-arriving dimension member).
	FlagInferred uint8 = 1 << 0
)

// RecordValue is the value half of a stored record; the key half (table, natural
// key, valid_from and, for retired records, tx_from) lives in the Pebble key.
type RecordValue struct {
	ValidTo int64  // exclusive end of the valid period; math.MaxInt64 when open
	TxFrom  int64  // transaction that asserted the record
	TxTo    int64  // transaction that retired it; math.MaxInt64 while current
	SK      uint64 // surrogate key of the version
	Flags   uint8  // FlagInferred, ...
	Attrs   Attrs
}

// AppendRecord appends the msgpack encoding of r to dst:
// [format, valid_to, tx_from, tx_to, sk, flags, attrs].
func AppendRecord(dst []byte, r *RecordValue) ([]byte, error) {
	w := bytes.NewBuffer(dst)
	enc := msgpack.GetEncoder()
	defer msgpack.PutEncoder(enc)
	enc.Reset(w)
	err := firstErr(
		enc.EncodeArrayLen(7),
		enc.EncodeInt(recordFormat),
		enc.EncodeInt(r.ValidTo),
		enc.EncodeInt(r.TxFrom),
		enc.EncodeInt(r.TxTo),
		enc.EncodeUint(r.SK),
		enc.EncodeUint(uint64(r.Flags)),
	)
	if err == nil {
		err = encodeAttrs(enc, r.Attrs)
	}
	if err != nil {
		return dst, err
	}
	return w.Bytes(), nil
}

// DecodeRecord decodes a value written by AppendRecord.
func DecodeRecord(b []byte) (RecordValue, error) {
	var r RecordValue
	if len(b) > MaxValueSize {
		return r, fmt.Errorf("%w: record of %d bytes exceeds %d", ErrCorrupt, len(b), MaxValueSize)
	}
	rd := bytes.NewReader(b)
	dec := msgpack.GetDecoder()
	defer msgpack.PutDecoder(dec)
	dec.Reset(rd)
	n, err := dec.DecodeArrayLen()
	if err != nil || n != 7 {
		return r, fmt.Errorf("%w: record header (array of %d, %v)", ErrCorrupt, n, err)
	}
	format, err := dec.DecodeInt64()
	if err != nil || format != recordFormat {
		return r, fmt.Errorf("%w: record format %d (%v)", ErrCorrupt, format, err)
	}
	var flags uint64
	if err := firstErr(
		decodeInt(dec, &r.ValidTo),
		decodeInt(dec, &r.TxFrom),
		decodeInt(dec, &r.TxTo),
		decodeUint(dec, &r.SK),
		decodeUint(dec, &flags),
	); err != nil {
		return r, corrupt("record header", err)
	}
	if flags > 0xFF {
		return r, fmt.Errorf("%w: record flags %d", ErrCorrupt, flags)
	}
	r.Flags = uint8(flags)
	if r.Attrs, err = decodeAttrs(dec, rd); err != nil {
		return r, err
	}
	if rd.Len() != 0 {
		return r, fmt.Errorf("%w: %d trailing bytes after record", ErrCorrupt, rd.Len())
	}
	return r, nil
}

// decodeInt decodes a msgpack integer that fits an int64. msgpack's DecodeInt64
// alone would also read nil as 0 and wrap a uint64 above math.MaxInt64 to a
// negative number, turning a corrupt field into a plausible time.
func decodeInt(dec *msgpack.Decoder, dst *int64) error {
	c, err := dec.PeekCode()
	switch {
	case err != nil:
		return err
	case isSignedCode(c):
		*dst, err = dec.DecodeInt64()
		return err
	case isUnsignedCode(c):
		u, err := dec.DecodeUint64()
		if err == nil && u > math.MaxInt64 {
			err = fmt.Errorf("integer %d overflows int64", u)
		}
		*dst = int64(u)
		return err
	}
	return fmt.Errorf("msgpack code 0x%02x where an integer belongs", c)
}

// decodeUint decodes a non-negative msgpack integer. msgpack's DecodeUint64 alone
// would also read nil as 0 and wrap a negative number (-1 to math.MaxUint64).
func decodeUint(dec *msgpack.Decoder, dst *uint64) error {
	c, err := dec.PeekCode()
	switch {
	case err != nil:
		return err
	case isUnsignedCode(c):
		*dst, err = dec.DecodeUint64()
		return err
	case isSignedCode(c):
		n, err := dec.DecodeInt64()
		if err == nil && n < 0 {
			err = fmt.Errorf("negative integer %d where an unsigned one belongs", n)
		}
		*dst = uint64(n)
		return err
	}
	return fmt.Errorf("msgpack code 0x%02x where an integer belongs", c)
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
