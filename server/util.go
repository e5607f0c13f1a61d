package server

import (
	"bytes"
	"fmt"
)

// equalComponent compares two key components ([]byte by content).
func equalComponent(a, b any) bool {
	if x, ok := a.([]byte); ok {
		y, ok := b.([]byte)
		return ok && bytes.Equal(x, y)
	}
	return fmt.Sprintf("%T %v", a, a) == fmt.Sprintf("%T %v", b, b)
}
