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
// [format, valid_to, tx_from, tx_to, sk, flags, attrs]. An open end (valid_to or
// tx_to equal to math.MaxInt64, the +∞ of an interval) is written as msgpack nil:
// one byte instead of nine. Every record of the current index has an open tx_to
// and most current versions an open valid_to, so this keeps the index that point
// reads walk about an eighth smaller. Decoders also accept the nine-byte integer
// form, which stores written before this encoding hold.
func AppendRecord(dst []byte, r *RecordValue) ([]byte, error) {
	w := bytes.NewBuffer(dst)
	enc := msgpack.GetEncoder()
	defer msgpack.PutEncoder(enc)
	enc.Reset(w)
	err := firstErr(
		enc.EncodeArrayLen(7),
		enc.EncodeInt(recordFormat),
		encodeEnd(enc, r.ValidTo),
		enc.EncodeInt(r.TxFrom),
		encodeEnd(enc, r.TxTo),
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
	r, rest, err := recordHead(b)
	if err != nil {
		return r, err
	}
	if r.Attrs, rest, err = parseAttrs(rest); err != nil {
		return r, err
	}
	if len(rest) != 0 {
		return r, fmt.Errorf("%w: %d trailing bytes after record", ErrCorrupt, len(rest))
	}
	return r, nil
}

// encodeEnd writes the end of an interval: nil when open (math.MaxInt64).
func encodeEnd(enc *msgpack.Encoder, end int64) error {
	if end == math.MaxInt64 {
		return enc.EncodeNil()
	}
	return enc.EncodeInt(end)
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
