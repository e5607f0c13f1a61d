//go:build race

package store

// raceEnabled: the race detector is on, and with it Pebble's invariant checks,
// which allocate on every iterator move; tests that count allocations skip.
const raceEnabled = true
