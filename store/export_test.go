package store

// VerifyChangesKey derives one key of a changes table from scratch and reports
// how it differs from the key's versions, for tests that check the streaming
// changes-table check against it.
var VerifyChangesKey = verifyChangesKey

// RaceEnabled reports whether the race detector is on, for external tests
// that count allocations (raceEnabled).
const RaceEnabled = raceEnabled
