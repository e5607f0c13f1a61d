package main

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"
)

// This file generates every workload's input from a seed, so that every engine
// sees the same data in the same order and a run can be reproduced exactly.
//
// Valid time is an integer axis: round r of a key's history falls in
// [r*step, r*step + step/2), so a key's changes are strictly increasing in
// valid time and never share an instant.

const (
	step    = 1_000 // valid-time distance between rounds
	nCities = 64
	nTiers  = 4
)

// change is one row of an SCD2 feed: key's attributes are a from at on.
type change struct {
	key string
	at  int64
	attrs
}

// probe is a point of the valid-time axis to look a key up at: a lookup, or a
// fact to resolve.
type probe struct {
	key   string
	valid int64
	round int // transaction round for as-of-transaction lookups; unused otherwise
}

// cdcEvent is one event of a CDC feed.
type cdcEvent struct {
	key string
	at  int64
	seq int64
	del bool
	attrs
}

// dataset is the generated input of one run.
type dataset struct {
	sc        scale
	keys      []string // dimension keys, in key order
	cities    []string
	inOrder   []change // workload 1
	late      []change // workload 2
	lookups   []probe  // workload 3
	old       *corrections
	oldProbes []probe    // workload 4
	facts     []probe    // workload 5
	snapAt    int64      // workload 6
	snapNow   int64      // workload 10: after every change
	cdc       []cdcEvent // workload 7, in arrival order
	agg       *aggData   // workload 8
}

// corrections is workload 4's bitemporal history: every key has versions
// periods with initial attributes (round 0), then each correction round gives
// one version of every key new attributes.
type corrections struct {
	keys    []string
	periods [][]version  // per key: the versions as first loaded (round 0)
	rounds  [][]fixation // rounds[r-1]: the corrections of round r, in commit order

	byKey     [][]keyFix // per key: its corrections in round order (built once by records)
	indexOnce sync.Once
}

// keyFix is one correction of a key: version v takes attrs a in round round.
type keyFix struct {
	round, v int
	a        attrs
}

// fixation is one correction: version v of key k takes attrs a.
type fixation struct {
	k, v int
	a    attrs
}

// generate builds the whole dataset of a scale from seed.
func generate(sc scale, seed uint64) *dataset {
	d := &dataset{sc: sc}
	for i := range nCities {
		d.cities = append(d.cities, fmt.Sprintf("city-%02d", i))
	}
	d.keys = keyNames("c", sc.keys)
	d.inOrder = d.inOrderChanges(rand.New(rand.NewPCG(seed, 1)))
	d.late = lateChanges(d.inOrder, sc.keys, rand.New(rand.NewPCG(seed, 2)))
	d.lookups = d.probes(rand.New(rand.NewPCG(seed, 3)), d.keys, sc.lookups, 0)
	d.old = d.corrections(rand.New(rand.NewPCG(seed, 4)))
	d.oldProbes = d.probes(rand.New(rand.NewPCG(seed, 5)), d.old.keys, sc.lookups, sc.corrections)
	d.facts = d.probes(rand.New(rand.NewPCG(seed, 6)), d.keys, sc.facts, 0)
	d.snapAt = int64(sc.versions/2)*step + step/4
	d.snapNow = int64(sc.versions) * step
	d.cdc = d.cdcFeed(rand.New(rand.NewPCG(seed, 7)))
	d.agg = d.aggData(rand.New(rand.NewPCG(seed, 8)))
	return d
}

func keyNames(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%09d", prefix, i)
	}
	return out
}

func (d *dataset) randomAttrs(rng *rand.Rand) attrs {
	return attrs{city: d.cities[rng.IntN(nCities)], tier: rng.Int64N(nTiers)}
}

// inOrderChanges is the SCD2 feed of workload 1: versions rounds; in each round
// every key, in a random order, gets a change at a time of that round. A tenth
// of the changes repeat the key's current attributes (change detection must
// drop them).
func (d *dataset) inOrderChanges(rng *rand.Rand) []change {
	out := make([]change, 0, len(d.keys)*d.sc.versions)
	cur := make([]attrs, len(d.keys))
	for r := range d.sc.versions {
		for _, i := range rng.Perm(len(d.keys)) {
			a := d.randomAttrs(rng)
			if r > 0 && rng.IntN(10) == 0 {
				a = cur[i]
			}
			cur[i] = a
			out = append(out, change{key: d.keys[i], at: int64(r)*step + rng.Int64N(step/2), attrs: a})
		}
	}
	return out
}

// lateChanges delays a tenth of the changes of feed by one to three rounds
// (keys changes per round), so they arrive after later changes of their key.
func lateChanges(feed []change, keys int, rng *rand.Rand) []change {
	arrival := make([]float64, len(feed))
	for i := range feed {
		arrival[i] = float64(i)
		if rng.IntN(10) == 0 {
			arrival[i] += float64(keys) * (1 + 2*rng.Float64())
		}
	}
	idx := make([]int, len(feed))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return arrival[idx[a]] < arrival[idx[b]] })
	out := make([]change, len(feed))
	for i, j := range idx {
		out[i] = feed[j]
	}
	return out
}

// probes draws n random (key, valid time) points over keys, with valid times
// from one round before the first version to the end of the last round, and a
// transaction round in [0, rounds) when rounds > 0.
func (d *dataset) probes(rng *rand.Rand, keys []string, n, rounds int) []probe {
	out := make([]probe, n)
	for i := range out {
		out[i] = probe{key: keys[rng.IntN(len(keys))], valid: rng.Int64N(int64(d.sc.versions+1)*step) - step}
		if rounds > 0 {
			out[i].round = rng.IntN(rounds)
		}
	}
	return out
}

// corrections builds workload 4's history.
func (d *dataset) corrections(rng *rand.Rand) *corrections {
	c := &corrections{keys: keyNames("b", d.sc.oldKeys)}
	cur := make([][]attrs, len(c.keys))
	for k := range c.keys {
		var vs []version
		for r := range d.sc.versions {
			from := int64(r)*step + rng.Int64N(step/2)
			if r > 0 {
				vs[r-1].to = from
			}
			vs = append(vs, version{from: from, to: inf, attrs: d.randomAttrs(rng)})
			cur[k] = append(cur[k], vs[r].attrs)
		}
		c.periods = append(c.periods, vs)
	}
	for range d.sc.corrections {
		var round []fixation
		for _, k := range rng.Perm(len(c.keys)) {
			v := rng.IntN(d.sc.versions)
			a := d.randomAttrs(rng)
			for a == cur[k][v] {
				a = d.randomAttrs(rng)
			}
			cur[k][v] = a
			round = append(round, fixation{k: k, v: v, a: a})
		}
		c.rounds = append(c.rounds, round)
	}
	return c
}

// record is one bitemporal record of workload 4: a version as asserted in
// transaction round txFrom and retired in round txTo (inf while current).
type record struct {
	version
	txFrom, txTo int64
}

// records replays the corrections into the records of key k, in (from, txFrom)
// order, for engines that bulk-load the finished history. The first call indexes
// the corrections by key, so loading every key is linear in the corrections
// (scanning every round for each key was quadratic: hours at large scale).
func (c *corrections) records(k int) []record {
	var out []record
	open := make([]int, len(c.periods[k])) // index in out of each version's current record
	for v, p := range c.periods[k] {
		open[v] = len(out)
		out = append(out, record{version: p, txFrom: 0, txTo: inf})
	}
	c.indexOnce.Do(func() {
		c.byKey = make([][]keyFix, len(c.keys))
		for r, round := range c.rounds {
			for _, f := range round {
				c.byKey[f.k] = append(c.byKey[f.k], keyFix{round: r + 1, v: f.v, a: f.a})
			}
		}
	})
	for _, f := range c.byKey[k] {
		out[open[f.v]].txTo = int64(f.round)
		open[f.v] = len(out)
		nv := c.periods[k][f.v]
		nv.attrs = f.a
		out = append(out, record{version: nv, txFrom: int64(f.round), txTo: inf})
	}
	slices.SortFunc(out, func(a, b record) int {
		if a.from != b.from {
			return cmp.Compare(a.from, b.from)
		}
		return cmp.Compare(a.txFrom, b.txFrom)
	})
	return out
}

// cdcFeed is workload 7's feed: every key has versions events (a twentieth of
// them deletes after the first, a quarter of the upserts repeating the previous
// attributes so runs form), a tenth of all events are sent twice, and the whole
// feed is shuffled.
func (d *dataset) cdcFeed(rng *rand.Rand) []cdcEvent {
	var out []cdcEvent
	for _, key := range d.keys {
		prev := d.randomAttrs(rng)
		for r := range d.sc.versions {
			e := cdcEvent{key: key, at: int64(r)*step + rng.Int64N(step/2)}
			switch {
			case r > 0 && rng.IntN(20) == 0:
				e.del = true
			case rng.IntN(4) == 0:
				e.attrs = prev
			default:
				e.attrs = d.randomAttrs(rng)
			}
			if !e.del {
				prev = e.attrs
			}
			out = append(out, e)
			if rng.IntN(10) == 0 {
				out = append(out, e)
			}
		}
	}
	rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// Workload 8 runs on a time axis: valid times are microseconds, because its
// windows are days.
const (
	day      int64 = 86_400_000_000
	aggEpoch       = 19_723 * day // 2024-01-01
)

var statuses = []string{"active", "pending", "suspended", "closed"}

// aggData is workload 8's input: contracts grouped by user, each with a history
// of amount and status, and the training rows (user, time) to backfill
// features for.
type aggData struct {
	users     []string
	contracts []contract
	rows      []leftRow
}

// contract is one contract's versions.
type contract struct {
	id, user string
	versions []contractVersion
}

type contractVersion struct {
	from, to int64
	amount   int64
	status   string
}

// leftRow asks for the features of user at ts.
type leftRow struct {
	user string
	ts   int64
}

// aggData draws sc.aggUsers users with ten contracts each; a contract starts in
// the first month, changes every 1-60 days for sc.versions versions, and ends
// after its last version in a fifth of cases. Rows pick a user and a time in
// the first two years.
func (d *dataset) aggData(rng *rand.Rand) *aggData {
	a := &aggData{users: keyNames("u", d.sc.aggUsers)}
	for u, user := range a.users {
		for c := range 10 {
			k := contract{id: fmt.Sprintf("k%09d-%d", u, c), user: user}
			t := aggEpoch + rng.Int64N(30*day)
			for range d.sc.versions {
				next := t + day + rng.Int64N(60*day)
				k.versions = append(k.versions, contractVersion{from: t, to: next,
					amount: 1 + rng.Int64N(1000), status: statuses[rng.IntN(len(statuses))]})
				t = next
			}
			if rng.IntN(5) != 0 {
				k.versions[len(k.versions)-1].to = inf
			}
			a.contracts = append(a.contracts, k)
		}
	}
	a.rows = make([]leftRow, d.sc.aggRows)
	for i := range a.rows {
		a.rows[i] = leftRow{user: a.users[rng.IntN(len(a.users))], ts: aggEpoch + rng.Int64N(730*day)}
	}
	return a
}
