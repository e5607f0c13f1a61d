package query

import (
	"encoding/base64"
	"errors"
	"fmt"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/store"
)

// ErrBadCursor: a cursor that is malformed, or was made by another kind of read
// or for another table.
var ErrBadCursor = errors.New("bitempo: invalid cursor")

// Page is one page of a paged read: its rows, and the cursor that resumes after
// the last of them, empty when the read has no more rows.
type Page[T any] struct {
	Rows []T
	Next string
}

// Cursor kinds.
const (
	cursorHistory byte = 'h'
	cursorChanges byte = 'c'
)

// cursorFormat is the first byte of every cursor, so that a later layout can be
// told apart.
const cursorFormat byte = 1

// cursor is the decoded form of an opaque cursor string: a position in a history
// read (the pinned transaction time, the key and valid_from of the last row) or in
// a change feed (the transaction-log position of the last row).
type cursor struct {
	kind      byte
	table     uint32
	tx        int64
	validFrom int64  // history
	tuple     []byte // history
	ordinal   uint32 // changes
}

// encode renders the cursor as URL-safe text.
func (c cursor) encode() string {
	b := []byte{cursorFormat, c.kind}
	b = encoding.AppendUint32(b, c.table)
	b = encoding.AppendTimeAsc(b, c.tx)
	switch c.kind {
	case cursorHistory:
		b = encoding.AppendTimeAsc(b, c.validFrom)
		b = append(b, c.tuple...)
	case cursorChanges:
		b = encoding.AppendUint32(b, c.ordinal)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodeCursor parses a cursor of the given kind made for table t.
func decodeCursor(text string, kind byte, t *store.Table) (cursor, error) {
	bad := func(why string) (cursor, error) {
		return cursor{}, fmt.Errorf("%w: %s", ErrBadCursor, why)
	}
	b, err := base64.RawURLEncoding.DecodeString(text)
	if err != nil {
		return bad("not base64url")
	}
	if len(b) < 2 || b[0] != cursorFormat || b[1] != kind {
		return bad("not a cursor of this read")
	}
	c := cursor{kind: kind}
	rest := b[2:]
	if c.table, rest, err = encoding.DecodeUint32(rest); err != nil {
		return bad("truncated")
	}
	if c.table != t.ID {
		return bad(fmt.Sprintf("made for another table than %q", t.Name))
	}
	if c.tx, rest, err = encoding.DecodeTimeAsc(rest); err != nil {
		return bad("truncated")
	}
	switch kind {
	case cursorHistory:
		if c.validFrom, rest, err = encoding.DecodeTimeAsc(rest); err != nil {
			return bad("truncated")
		}
		if _, err := t.DecodeKey(rest); err != nil {
			return bad("its key does not fit the table")
		}
		c.tuple = rest
	case cursorChanges:
		if c.ordinal, rest, err = encoding.DecodeUint32(rest); err != nil || len(rest) != 0 {
			return bad("wrong length")
		}
	}
	return c, nil
}
