package main

import (
	"fmt"
	"runtime/metrics"
	"slices"
	"strings"
	"time"
)

// blockCacheCounter is an engine on Pebble that reports its block cache's
// lookups: bitempo on Pebble and the floor. A block read the cache answers is
// a hit; a miss reads the block from its file (from the operating system's
// page cache on these machines) and decompresses it.
type blockCacheCounter interface {
	blockCacheCounts() (hits, misses int64)
}

// runCounts is what the Go runtime and the measured engine counted during one
// timed run, read before and after it outside the timed span: the garbage
// collector's cycles (every goroutine's, loads in the background included) and
// the block cache's hits and misses, summed over the open databases of the
// measured engine (cached false when none of them reports a block cache).
type runCounts struct {
	gcCycles     uint64
	hits, misses int64
	cached       bool
}

// sub returns the counts accumulated between before and c.
func (c runCounts) sub(before runCounts) runCounts {
	return runCounts{gcCycles: c.gcCycles - before.gcCycles, hits: c.hits - before.hits,
		misses: c.misses - before.misses, cached: c.cached}
}

// hitRate is the share of block lookups the cache answered, or -1 with no
// lookup.
func (c runCounts) hitRate() float64 {
	if !c.cached || c.hits+c.misses == 0 {
		return -1
	}
	return float64(c.hits) / float64(c.hits+c.misses)
}

const gcCyclesMetric = "/gc/cycles/total:gc-cycles"

// counts reads the counters now, for the databases of the engine being
// measured (h.measuring).
func (h *harness) counts() runCounts {
	s := []metrics.Sample{{Name: gcCyclesMetric}}
	metrics.Read(s)
	var c runCounts
	if s[0].Value.Kind() == metrics.KindUint64 {
		c.gcCycles = s[0].Value.Uint64()
	}
	for _, e := range h.live {
		if e.kind != h.measuring {
			continue
		}
		if bc, ok := e.engine.(blockCacheCounter); ok {
			hits, misses := bc.blockCacheCounts()
			c.hits, c.misses, c.cached = c.hits+hits, c.misses+misses, true
		}
	}
	return c
}

// forget drops e from the open databases whose counters are read.
func (h *harness) forget(e *openEngine) {
	h.live = slices.DeleteFunc(h.live, func(x *openEngine) bool { return x == e })
}

// countsSummary describes the runs' counters in a few words: the block
// cache's hit rate and the garbage collector's cycles, each as the range over
// the runs ("70.0% (69.7%-70.1%)"), or "" when there were no runs.
func countsSummary(times []sample) (hitRates, gcCycles string) {
	if len(times) == 0 {
		return "", ""
	}
	var rates []float64
	var cycles []uint64
	for _, s := range times {
		if r := s.counts.hitRate(); r >= 0 {
			rates = append(rates, 100*r)
		}
		cycles = append(cycles, s.counts.gcCycles)
	}
	hitRates = "-"
	if len(rates) > 0 {
		hitRates = spread(rates, func(x float64) string { return fmt.Sprintf("%.1f%%", x) })
	}
	return hitRates, spread(cycles, func(x uint64) string { return fmt.Sprint(x) })
}

// spread formats the median of xs and, when they differ, their range.
func spread[T uint64 | float64](xs []T, format func(T) string) string {
	sorted := slices.Clone(xs)
	slices.Sort(sorted)
	med := format(sorted[len(sorted)/2])
	lo, hi := format(sorted[0]), format(sorted[len(sorted)-1])
	if lo == hi {
		return med
	}
	return med + " (" + lo + "-" + hi + ")"
}

// countsTable returns the rows of the report's table of counters: workload,
// engine, then for each run, in order: its wall time per operation, the block
// cache's hit rate, the blocks read from files (the misses) per operation, and
// the GC cycles.
func (h *harness) countsTable() [][]string {
	var out [][]string
	for _, r := range h.results {
		if r.err != nil || len(r.times) == 0 {
			continue
		}
		var times, rates, misses, cycles []string
		ops := float64(max(r.ops, 1))
		for _, s := range r.times {
			times = append(times, fmtDuration(s.wall/time.Duration(max(r.ops, 1))))
			if rate := s.counts.hitRate(); rate >= 0 {
				rates = append(rates, fmt.Sprintf("%.1f%%", 100*rate))
				misses = append(misses, fmt.Sprintf("%.3g", float64(s.counts.misses)/ops))
			} else {
				rates, misses = append(rates, "-"), append(misses, "-")
			}
			cycles = append(cycles, fmt.Sprint(s.counts.gcCycles))
		}
		out = append(out, []string{fmt.Sprintf("%d %s", r.w.id, r.w.name), r.engine, strings.Join(times, ", "),
			strings.Join(rates, ", "), strings.Join(misses, ", "), strings.Join(cycles, ", ")})
	}
	return out
}
