// Package callstack answers one question about the calling goroutine: is a
// given function on its stack? The store uses it to recognise a call made from
// inside its own write transaction, and the Pebble engine to recognise a call
// inside its guard against Pebble's Fatalf, without goroutine ids.
package callstack

import (
	"runtime"
	"sync"
)

// Has reports whether the function named want (as runtime.Frame.Function
// spells it) is on the calling goroutine's stack.
func Has(want string) bool {
	pcs := make([]uintptr, 64)
	skip := 2
	for {
		n := runtime.Callers(skip, pcs)
		frames := runtime.CallersFrames(pcs[:n])
		for {
			f, more := frames.Next()
			if f.Function == want {
				return true
			}
			if !more {
				break
			}
		}
		if n < len(pcs) {
			return false
		}
		skip += n
	}
}

// NameOf returns, once computed, the name of the function that call passes
// control to when it calls its argument: the name Has looks for. The function
// must call inner directly.
func NameOf(call func(inner func() error)) func() string {
	return sync.OnceValue(func() string {
		var name string
		call(func() error {
			pc := make([]uintptr, 1)
			runtime.Callers(2, pc)
			name = runtime.FuncForPC(pc[0]).Name()
			return nil
		})
		return name
	})
}
