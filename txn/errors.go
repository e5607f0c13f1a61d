package txn

import (
	"errors"
	"fmt"

	"github.com/bitempo/bitempo/store"
)

var (
	// ErrWrongKind: a write the table's kind does not take (Put on a changes table,
	// Apply on a periods table).
	ErrWrongKind = errors.New("bitempo: operation not allowed on this kind of table")
	// ErrInvalidAttr: an attribute that cannot be stored (unsupported type, or a
	// name that repeats a key column).
	ErrInvalidAttr = errors.New("bitempo: invalid attribute")
	// ErrFinished: use of a transaction after its function returned.
	ErrFinished = errors.New("bitempo: transaction has finished")
)

// AttrError describes an attribute that cannot be stored.
type AttrError struct {
	Table, Name string
	Err         error
}

func (e *AttrError) Error() string {
	if ge := (*store.GroupValueError)(nil); errors.As(e.Err, &ge) {
		return ge.Error() // it names the table and attribute already
	}
	return fmt.Sprintf("bitempo: table %q attribute %q: %v", e.Table, e.Name, e.Err)
}

// Is makes errors.Is(err, ErrInvalidAttr) true.
func (e *AttrError) Is(target error) bool { return target == ErrInvalidAttr }

// Unwrap returns the underlying cause (such as encoding.ErrUnsupportedType).
func (e *AttrError) Unwrap() error { return e.Err }
