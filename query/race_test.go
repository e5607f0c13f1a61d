//go:build race

package query_test

// raceEnabled: the race detector is on, and with it Pebble's invariant checks,
// which allocate on iterator moves; tests that count allocations skip.
const raceEnabled = true
