package main

import (
	"errors"
	"fmt"
	"math"
)

// Workload 8: temporal aggregation backfill (the SCD2 group-by of docs/semantics.md).
// Contracts, grouped by user, change amount and status over time; for each
// training row (user, ts) the features are aggregations over that user's
// contract versions active at ts (valid_from <= ts < valid_to), one with a
// 30-day window on valid_from. The table is loaded and the rows staged before
// timing; the timed part computes every row's features and delivers them to
// Go. The checksum covers every row's features.

// aggSpecs are the features, in bitempo's query.ParseAgg form: count,
// amount_sum, amount_sum_30d, amount_max, status_count_distinct.
var aggSpecs = []string{"count", "sum(amount)", "sum(amount):30d", "max(amount)", "count_distinct(status)"}

// window30d is the window of the third feature, in valid-time ticks.
const window30d = 30 * day

// features are one row's results, in aggSpecs order; null marks an empty set's
// null (SUM and MAX of no versions).
type features [5]int64

const null = math.MinInt64

func runBackfill(h *harness, k engineKind) (measurement, error) {
	e, err := h.fresh(k, "agg")
	if err != nil {
		return measurement{}, err
	}
	h.logf("  %s: loading %d contracts and staging %d rows (not timed)", k.name, len(h.d.agg.contracts), len(h.d.agg.rows))
	if err := e.loadAggregates(h.d.agg); err != nil {
		return measurement{}, errors.Join(err, h.discard(e))
	}
	if err := h.settle(k, e, "the contracts"); err != nil {
		return measurement{}, errors.Join(err, h.discard(e))
	}
	out := make([]features, len(h.d.agg.rows))
	times, err := timeFill(h, out, e.backfill)
	m := measurement{ops: len(out), times: times}
	for i, f := range out {
		x := mix(uint64(i))
		for _, v := range f {
			x = mix(x ^ uint64(v))
		}
		m.sum.add(x)
	}
	return m, errors.Join(err, h.discard(e))
}

// aggregateVersions computes the features at ts over versions (one group's),
// for engines that aggregate in Go.
func aggregateVersions(vs []contractVersion, ts int64) features {
	f := features{0, null, null, null, 0}
	var seen [4]string
	for _, v := range vs {
		if v.from > ts || ts >= v.to {
			continue
		}
		f[0]++
		f[1] = addNullable(f[1], v.amount)
		if v.from > ts-window30d {
			f[2] = addNullable(f[2], v.amount)
		}
		if f[3] == null || v.amount > f[3] {
			f[3] = v.amount
		}
		if !containsStatus(seen[:f[4]], v.status) {
			seen[f[4]] = v.status
			f[4]++
		}
	}
	return f
}

func addNullable(sum, x int64) int64 {
	if sum == null {
		return x
	}
	return sum + x
}

func containsStatus(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// featureValue converts one of bitempo's feature values to features' form.
func featureValue(v any) (int64, error) {
	switch x := v.(type) {
	case nil:
		return null, nil
	case int64:
		return x, nil
	case int:
		return int64(x), nil
	case uint64:
		if x <= math.MaxInt64 {
			return int64(x), nil
		}
	}
	return 0, fmt.Errorf("unexpected feature value %v (%T)", v, v)
}
