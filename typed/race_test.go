//go:build race

package typed_test

// raceEnabled: the race detector is on, and with it Pebble's invariant checks,
// which allocate on iterator moves, and a sync.Pool that drops a random share
// of what is put back; tests that count allocations skip.
const raceEnabled = true
