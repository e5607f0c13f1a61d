package store

import (
	"errors"
	"fmt"

	"github.com/bitempo/bitempo/encoding"
)

// WalkInto is Walk reporting each value in v, which the caller owns and may
// reuse for every record it walks: a walk of a record then allocates nothing,
// where Walk allocates the Value it reports through (fn may keep it). Batch
// reads that decode a row view per record (query.ResolveRows, the
// aggregations) walk this way.
func (r RawAttrs) WalkInto(v *encoding.Value, fn func(name string, v *encoding.Value) error) error {
	if r.IsZero() {
		return nil
	}
	err := encoding.WalkAttrsProjectedInto(r.b, r.name, r.proj, v, fn)
	if err != nil && errors.Is(err, encoding.ErrCorrupt) {
		return fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return err
}
