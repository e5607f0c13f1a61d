package main

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// This file holds the semantics every peer engine shares with bitempo, written
// once in Go so that the peers cannot drift apart: the SCD2 upsert of a periods
// table (docs/semantics.md "Upsert", bitempo's Tx.Upsert), the derivation of versions
// from CDC events (docs/semantics.md "Changes tables" rules 1-3), and the checksums that every
// engine's answers must match.

// inf is the open end of a valid or transaction period.
const inf int64 = math.MaxInt64

// attrs are the tracked attributes of every version in the benchmark. Change
// detection compares both (exact, null-safe equality is plain == here: the
// generated data has no nulls).
type attrs struct {
	city string
	tier int64
}

// version is one version of a key as every engine reports it: its valid period
// [from, to) and its attributes.
type version struct {
	from, to int64
	attrs
}

// covers reports whether valid time t lies in the version.
func (v version) covers(t int64) bool { return v.from <= t && t < v.to }

// upsert applies an SCD2 change effective at at to w, a stretch of one key's
// timeline sorted by from (disjoint versions). w must hold every version the
// change can touch: the two latest versions starting at or before at and the
// first one starting after it (the whole timeline always qualifies). It returns
// the new stretch; w's backing array is reused.
//
// Rules (bitempo's Tx.Upsert): equal attributes in effect change nothing; a
// different version in effect, [a, b), is closed at at (or replaced when a = at)
// and the change covers [at, b); with nothing in effect the change covers [at,
// s), s being the next version's start or +inf. A change that would touch an
// equal neighbour extends the neighbour instead.
func upsert(w []version, at int64, a attrs) []version {
	i, found := covering(w, at)
	if !found {
		end := inf
		if i < len(w) {
			end = w[i].from
		}
		return place(w, i, at, end, a)
	}
	v := &w[i]
	if v.attrs == a {
		return w
	}
	end := v.to
	if v.from == at {
		w = slices.Delete(w, i, i+1)
	} else {
		v.to = at
		i++
	}
	return place(w, i, at, end, a)
}

// place puts [from, to) with a at index i of w, where nothing covers it, or
// extends an equal neighbour instead (the earlier one first, absorbing an equal
// later one too).
func place(w []version, i int, from, to int64, a attrs) []version {
	hasPrev := i > 0 && w[i-1].to == from && w[i-1].attrs == a
	hasNext := i < len(w) && w[i].from == to && w[i].attrs == a
	switch {
	case hasPrev && hasNext:
		w[i-1].to = w[i].to
		return slices.Delete(w, i, i+1)
	case hasPrev:
		w[i-1].to = to
		return w
	case hasNext:
		w[i].from = from
		return w
	}
	return slices.Insert(w, i, version{from: from, to: to, attrs: a})
}

// covering returns the index of the version of w covering t, or the index where
// a version starting at t would go, and whether one covers t.
func covering(w []version, t int64) (int, bool) {
	i, _ := slices.BinarySearchFunc(w, t, func(v version, t int64) int {
		switch {
		case v.to <= t:
			return -1
		case v.from > t:
			return 1
		}
		return 0
	})
	return i, i < len(w) && w[i].covers(t)
}

// rewrite is what turns a stored stretch of a key's timeline into a new one:
// versions to delete (by from), to update in place (same from, new content) and
// to insert.
type rewrite struct {
	deletes []int64
	updates []version
	inserts []version
}

// diff compares a stretch as loaded with the same stretch after upserts. Stretches
// are short (a window or one key's timeline), so the quadratic scan is cheaper
// than a map.
func diff(orig, cur []version) rewrite {
	var r rewrite
	for _, o := range orig {
		j := slices.IndexFunc(cur, func(c version) bool { return c.from == o.from })
		switch {
		case j < 0:
			r.deletes = append(r.deletes, o.from)
		case cur[j] != o:
			r.updates = append(r.updates, cur[j])
		}
	}
	for _, c := range cur {
		if !slices.ContainsFunc(orig, func(o version) bool { return o.from == c.from }) {
			r.inserts = append(r.inserts, c)
		}
	}
	return r
}

// derive returns the versions a key's CDC events derive to. evs must be sorted
// by (at, seq) with one event per (at, seq). A run of consecutive upserts with
// equal attributes and no delete between is one version, from its first event
// to the event that ends it (a different upsert or a delete), or +inf. The
// generated feeds have distinct valid times per key and no conflicting ties, so
// granules, tie-breaking and partial updates do not arise.
func derive(evs []cdcEvent) []version {
	var out []version
	open := false
	for _, e := range evs {
		switch {
		case e.del && open:
			out[len(out)-1].to = e.at
			open = false
		case e.del:
		case open && out[len(out)-1].attrs == e.attrs:
		default:
			if open {
				out[len(out)-1].to = e.at
			}
			out = append(out, version{from: e.at, to: inf, attrs: e.attrs})
			open = true
		}
	}
	return out
}

// compareEvents orders events by (at, seq).
func compareEvents(a, b cdcEvent) int {
	if a.at != b.at {
		return cmp.Compare(a.at, b.at)
	}
	return cmp.Compare(a.seq, b.seq)
}

// dedupeEvents sorts evs by (at, seq) and keeps one event per (at, seq): a
// delete wins a tie, else the first seen (the feeds' duplicates are exact copies).
func dedupeEvents(evs []cdcEvent) []cdcEvent {
	slices.SortStableFunc(evs, compareEvents)
	out := evs[:0]
	for _, e := range evs {
		if n := len(out); n > 0 && out[n-1].at == e.at && out[n-1].seq == e.seq {
			if e.del {
				out[n-1] = e
			}
			continue
		}
		out = append(out, e)
	}
	return out
}

// checksum is an order-independent digest of a workload's answers: the number
// of rows and the wrapping sum of their hashes. Engines return rows in different
// orders; the sum makes that irrelevant.
type checksum struct {
	rows int
	sum  uint64
}

func (c *checksum) add(h uint64) {
	c.rows++
	c.sum += h
}

func (c checksum) String() string { return fmt.Sprintf("%d rows %016x", c.rows, c.sum) }

// hashVersion hashes a key's version (the key may be empty when the row is
// identified otherwise, e.g. by a fact's index).
func hashVersion(key string, v version) uint64 {
	h := hashString(key)
	h = mix(h ^ uint64(v.from))
	h = mix(h ^ uint64(v.to))
	return hashAttrs(h, v.attrs)
}

// hashAttrs folds attributes into h.
func hashAttrs(h uint64, a attrs) uint64 {
	h = mix(h ^ hashString(a.city))
	return mix(h ^ uint64(a.tier))
}

// hashMiss is the hash of "no version" for row id.
func hashMiss(id uint64) uint64 { return mix(id ^ 0x6d697373) }

func hashString(s string) uint64 {
	h := uint64(14695981039346656037) // FNV-1a
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// mix is the splitmix64 finaliser.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ (x >> 31)
}
