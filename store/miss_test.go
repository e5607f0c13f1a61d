package store

import "testing"

// A miss is explained by whether a version of the key ended at or before the
// valid time and whether one starts after it.
func TestClassifyMiss(t *testing.T) {
	for _, c := range []struct {
		endedBefore, startsAfter bool
		want                     MissReason
	}{
		{false, false, UnknownKey},
		{false, true, BeforeFirst},
		{true, true, InGap},
		{true, false, AfterLast},
	} {
		if got := ClassifyMiss(c.endedBefore, c.startsAfter); got != c.want {
			t.Errorf("ClassifyMiss(%v, %v) = %v, want %v", c.endedBefore, c.startsAfter, got, c.want)
		}
	}
}
