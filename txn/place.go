package txn

// This file places a re-derivation of a key: where it resumes in the key's
// timeline, and which surrogate key each re-derived version keeps.

import (
	"slices"

	"github.com/bitempo/bitempo/store"
)

// resumePoint says where a batch's re-derivation of a key starts: the events
// before granule p, and the versions they alone determine, stay as they are.
type resumePoint struct {
	p  int64
	st store.RunState
	// within is the version the batch's earliest granule lands inside of (or
	// before the end of whose run there are later events). Its run's state just
	// before that granule depends on the run's last event before it, which only
	// the log knows; st then describes the fallback of re-deriving the whole run.
	within *store.Version
}

// resume chooses the resume point for a batch whose earliest event lies in
// granule m, given the key's current versions and the granule of its newest
// logged event. Only the suffix from there is re-derived: a late event costs the
// run it lands in and what follows, not the key's whole history.
func resume(cur []store.Version, m int64, newest int64, hasNewest bool) resumePoint {
	// i: the last version starting before m.
	i, _ := slices.BinarySearchFunc(cur, m, func(v store.Version, m int64) int {
		if v.ValidFrom < m {
			return -1
		}
		return 1
	})
	i--
	if i < 0 {
		return resumePoint{p: m}
	}
	v := &cur[i]
	switch {
	case v.ValidTo < m:
		// Its run ended before m, by a delete: nothing is open at m.
		return resumePoint{p: m}
	case v.ValidTo == m, v.ValidTo == store.Infinity && hasNewest && newest < m:
		// Its run's last event is before m, so v's attributes are that event's.
		return resumePoint{p: m, st: store.OpenState(v)}
	}
	rp := resumePoint{p: v.ValidFrom, within: v}
	if i > 0 && cur[i-1].ValidTo == v.ValidFrom {
		rp.st = store.OpenState(&cur[i-1])
	}
	return rp
}

// versionCounts classifies what re-deriving a key did to its versions.
type versionCounts struct {
	inserted, closed, split, merged, updated, removed int
}

// placeRuns turns the re-derived runs into versions, reusing the surrogate keys
// of the versions they replace so that a fact resolved to sk S at valid time v
// keeps resolving to S unless the batch changed what is true at v:
//
//   - A run takes the sk of the earliest replaced version that overlaps it, has
//     equal tracked attributes, and no earlier run took. So a version shortened
//     at either end, extended (also to an earlier start) or given new untracked
//     attributes keeps its sk, and versions that a late event fused into one
//     run leave their sk to the earliest of them.
//   - Every other run gets a new sk, in ascending valid time. So when a late
//     event splits a version, the earlier piece keeps its sk and the later one
//     gets a new sk, and a stretch whose tracked attributes changed is a new
//     version.
//
// Matching is not on valid_from alone, which would renumber a version that
// lost only its first instant (docs/design/cdc-surrogate-key-inheritance.md).
func placeRuns(t *store.Table, ks *keyState, replaced []store.Version, runs []store.DerivedRun, alloc func() uint64) ([]store.Version, versionCounts) {
	out := make([]store.Version, len(runs))
	heir := make([]int, len(runs)) // index into replaced, or -1
	taken := make([]bool, len(replaced))
	j := 0
	for k, r := range runs {
		heir[k] = -1
		for j < len(replaced) && replaced[j].ValidTo <= r.From {
			j++
		}
		for x := j; x < len(replaced) && replaced[x].ValidFrom < r.To; x++ {
			if !taken[x] && store.TrackedEqual(t, replaced[x].Attrs, r.Attrs) {
				heir[k], taken[x] = x, true
				break
			}
		}
		if heir[k] >= 0 {
			v := replaced[heir[k]]
			v.ValidFrom, v.ValidTo, v.Attrs = r.From, r.To, r.Attrs
			out[k] = v
		} else {
			out[k] = ks.table.NewVersion(ks.key, ks.tuple, r.From, r.To, alloc(), r.Attrs)
		}
	}
	return out, countVersions(t, replaced, out, heir, taken)
}

// overlaps reports whether two versions share a valid instant.
func overlaps(a, b *store.Version) bool { return a.ValidFrom < b.ValidTo && b.ValidFrom < a.ValidTo }

// countVersions classifies the outcome of placeRuns for ApplyResult.
func countVersions(t *store.Table, replaced, out []store.Version, heir []int, taken []bool) versionCounts {
	var c versionCounts
	wasSplit := make([]bool, len(replaced))
	for k := range out {
		if heir[k] >= 0 {
			continue
		}
		d := &out[k]
		split := false
		for x := range replaced {
			s := &replaced[x]
			if taken[x] && overlaps(s, d) && store.TrackedEqual(t, s.Attrs, d.Attrs) {
				split, wasSplit[x] = true, true
				break
			}
		}
		if split {
			c.split++
		} else {
			c.inserted++
		}
	}
	for k := range out {
		x := heir[k]
		if x < 0 || wasSplit[x] {
			continue
		}
		s, d := &replaced[x], &out[k]
		switch {
		case s.ValidFrom == d.ValidFrom && s.ValidTo == d.ValidTo && s.Attrs.Equal(d.Attrs):
		case d.ValidTo < s.ValidTo:
			c.closed++
		default:
			c.updated++
		}
	}
	for x := range replaced {
		if taken[x] {
			continue
		}
		merged := false
		for k := range out {
			if heir[k] >= 0 && overlaps(&replaced[x], &out[k]) && store.TrackedEqual(t, out[k].Attrs, replaced[x].Attrs) {
				merged = true
				break
			}
		}
		if merged {
			c.merged++
		} else {
			c.removed++
		}
	}
	return c
}
