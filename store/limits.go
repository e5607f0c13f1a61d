package store

import (
	"fmt"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/engine"
)

// Size limits of what the store writes.
const (
	// MaxValueSize is the largest stored value, in bytes: the largest the
	// decoders accept (encoding.MaxValueSize).
	MaxValueSize = encoding.MaxValueSize
	// MaxAttrsSize is the largest encoded attribute map (encoding.AppendAttrs)
	// one version may hold. A record value is the attributes behind a header of
	// at most 48 bytes (format, three times, surrogate key, flags); the values of
	// events and checkpoints of changes tables and of the group index carry the
	// same attributes behind a header no larger. 1 KiB leaves room for growth.
	MaxAttrsSize = MaxValueSize - 1<<10
)

// checkWrites refuses a batch holding a value the decoders would refuse, before
// anything of it is written. Without it a value over the limit committed and
// then made its key unreadable, and so impossible to overwrite or delete.
// Package txn checks attributes against the same limit as they are written, so
// this is the backstop for every other path (raw writes, layout growth).
func checkWrites(writes []engine.Write) error {
	for _, w := range writes {
		if len(w.Value) > MaxValueSize {
			return fmt.Errorf("%w: a value of %d bytes exceeds the limit of %d (keyspace %#02x)", ErrTooLarge, len(w.Value), MaxValueSize, w.Key[0])
		}
	}
	return nil
}
