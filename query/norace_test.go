//go:build !race

package query_test

// raceEnabled: see race_test.go.
const raceEnabled = false
