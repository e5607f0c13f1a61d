package randstore

import "pgregory.net/rapid"

// Rapid returns a Rand whose numbers t draws, so that rapid shrinks a failing
// history to the fewest and smallest writes it can.
func Rapid(t *rapid.T) Rand { return rapidRand{t} }

type rapidRand struct{ t *rapid.T }

func (r rapidRand) IntN(n int) int { return rapid.IntRange(0, n-1).Draw(r.t, "randstore") }

func (r rapidRand) Int64N(n int64) int64 { return rapid.Int64Range(0, n-1).Draw(r.t, "randstore") }
