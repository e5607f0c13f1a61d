package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestRunsCountBlockCacheAndGC runs point lookups on bitempo and the floor:
// every run of both counts the block-cache lookups of most point lookups, the
// report lists each run's hit rate and GC cycles, and closing the harness
// leaves no database whose counters would be read.
func TestRunsCountBlockCacheAndGC(t *testing.T) {
	sc := tiny
	sc.runs = 3
	kinds, err := selectEngines([]string{"bitempo,pebble"})
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	h := newHarness(generate(sc, 7), t.TempDir(), kinds, &log)
	h.run([]*workload{findWorkload("lookup-latest")})
	if f := h.failures(); len(f) > 0 {
		t.Fatalf("failures: %q\n%s", f, log.String())
	}
	if len(h.results) != 2 {
		t.Fatalf("%d results, want 2", len(h.results))
	}
	for _, r := range h.results {
		if len(r.times) != sc.runs {
			t.Fatalf("%s: %d runs, want %d", r.engine, len(r.times), sc.runs)
		}
		for i, s := range r.times {
			c := s.counts
			if !c.cached || c.hits+c.misses < int64(sc.lookups)/2 {
				t.Errorf("%s run %d: %+v, want a block lookup for most of the %d point lookups", r.engine, i, c, sc.lookups)
			}
			if rate := c.hitRate(); rate < 0 || rate > 1 {
				t.Errorf("%s run %d: hit rate %v", r.engine, i, rate)
			}
		}
	}
	var md bytes.Buffer
	h.writeMarkdown(&md, "test", time.Now(), "0 0 0", nil)
	_, report, ok := strings.Cut(md.String(), "## Block cache and garbage collection per run")
	if !ok {
		t.Fatalf("the report has no counters section:\n%s", md.String())
	}
	for _, engine := range []string{"bitempo", "pebble"} {
		row := "| 3 lookup-latest | " + engine + " | "
		i := strings.Index(report, row)
		if i < 0 {
			t.Fatalf("no counters row for %s:\n%s", engine, report)
		}
		line, _, _ := strings.Cut(report[i+len(row):], "\n")
		cols := strings.Split(strings.TrimSuffix(line, " |"), " | ")
		if len(cols) != 4 {
			t.Fatalf("%s: counters row %q, want 4 columns after the engine", engine, line)
		}
		for c, what := range []string{"times", "hit rates", "misses", "GC cycles"} {
			if n := strings.Count(cols[c], ",") + 1; n != sc.runs {
				t.Errorf("%s: %s %q, want %d", engine, what, cols[c], sc.runs)
			}
		}
		if n := strings.Count(cols[1], "%"); n != sc.runs {
			t.Errorf("%s: hit rates %q, want %d percentages", engine, cols[1], sc.runs)
		}
	}
	if !strings.Contains(log.String(), "block cache hits") {
		t.Errorf("the log does not give the hit rate:\n%s", log.String())
	}
	if err := h.close(); err != nil {
		t.Fatal(err)
	}
	if len(h.live) != 0 {
		t.Errorf("%d databases still counted after close", len(h.live))
	}
}
