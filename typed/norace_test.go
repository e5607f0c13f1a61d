//go:build !race

package typed_test

// raceEnabled: see race_test.go.
const raceEnabled = false
