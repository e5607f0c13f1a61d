package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// workload is one measured task, run on every engine.
type workload struct {
	id   int
	name string
	// unit names one operation ("changes", "lookups", ...).
	unit string
	// latency marks workloads whose headline is the time per operation (point
	// reads); the others report throughput.
	latency bool
	// engines, when set, names the only engines that run the workload (the
	// others are skipped, not failed).
	engines []string
	run     func(h *harness, k engineKind) (measurement, error)
}

// measurement is what one engine did on one workload: how many operations each
// run performed, how long each run took, and the checksum of its answers.
type measurement struct {
	ops   int
	times []sample
	sum   checksum
}

// sample is one timed run: wall-clock time, and the CPU time (user and system)
// the whole process spent meanwhile, every thread counted: an engine's
// background work (compactions, DuckDB's worker threads) is part of its cost.
// On a shared machine CPU time is the steadier figure; wall time is what a
// user waits. counts are the garbage collector's cycles and the block cache's
// lookups during the run (counters.go).
type sample struct {
	wall, cpu time.Duration
	counts    runCounts
}

// stopwatch starts a sample.
type stopwatch struct {
	wall time.Time
	cpu  time.Duration
}

func startWatch() stopwatch { return stopwatch{wall: time.Now(), cpu: processCPU()} }

func (s stopwatch) stop() sample {
	return sample{wall: time.Since(s.wall), cpu: processCPU() - s.cpu}
}

// processCPU returns the user and system CPU time of the process so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// median returns the median wall time and the median CPU time of the runs.
func (m measurement) median() (wall, cpu time.Duration) {
	var ws, cs []time.Duration
	for _, s := range m.times {
		ws, cs = append(ws, s.wall), append(cs, s.cpu)
	}
	slices.Sort(ws)
	slices.Sort(cs)
	return ws[len(ws)/2], cs[len(cs)/2]
}

// perOp returns the median wall and CPU time of one operation.
func (m measurement) perOp() (wall, cpu time.Duration) {
	w, c := m.median()
	n := time.Duration(max(m.ops, 1))
	return w / n, c / n
}

// result is a measurement of one engine on one workload, or its failure.
type result struct {
	w      *workload
	engine string
	measurement
	err error
}

// harness runs workloads on engines and keeps what runs share: the data, the
// directory databases live in, and each engine's base table (the SCD2 table
// after workload 1) that the read workloads use, or why it could not be built.
type harness struct {
	d       *dataset
	sc      scale
	root    string
	kinds   []engineKind
	log     io.Writer
	base    map[string]*openEngine
	baseErr map[string]error
	labels  pprof.LabelSet // of the workload and engine being measured
	// measuring names the engine being measured; live holds every open
	// database, whose counters are read around a timed run (counters.go).
	measuring string
	live      []*openEngine
	next      int
	results   []result
}

// openEngine is an open database and its directory.
type openEngine struct {
	engine
	kind        string
	dir         string
	readsStaged bool
	factsStaged bool
}

func newHarness(d *dataset, root string, kinds []engineKind, log io.Writer) *harness {
	return &harness{d: d, sc: d.sc, root: root, kinds: kinds, log: log,
		base: map[string]*openEngine{}, baseErr: map[string]error{}}
}

// fresh opens a new, empty database of kind k.
func (h *harness) fresh(k engineKind, label string) (*openEngine, error) {
	h.next++
	dir := filepath.Join(h.root, fmt.Sprintf("%02d-%s-%s", h.next, k.name, label))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	e, err := k.open(dir)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", k.name, err)
	}
	oe := &openEngine{engine: e, kind: k.name, dir: dir}
	h.live = append(h.live, oe)
	return oe, nil
}

// discard closes a database and deletes its files.
func (h *harness) discard(e *openEngine) error {
	h.forget(e)
	return errors.Join(e.close(), os.RemoveAll(e.dir))
}

// keepBase makes e the base table of engine k, replacing any earlier one.
func (h *harness) keepBase(k engineKind, e *openEngine) error {
	var err error
	if old := h.base[k.name]; old != nil {
		err = h.discard(old)
	}
	h.base[k.name] = e
	delete(h.baseErr, k.name)
	return err
}

// baseFor returns engine k's base table, building it untimed when workload 1
// did not run, with its reads started. The table is built once per run: a
// failure to build it is kept and returned to every later workload, which then
// fails without building another.
func (h *harness) baseFor(k engineKind) (*openEngine, error) {
	if err := h.baseErr[k.name]; err != nil {
		return nil, fmt.Errorf("no base table (failed earlier in this run): %w", err)
	}
	e, err := h.prepareBase(k)
	if err != nil {
		h.baseErr[k.name] = err
	}
	return e, err
}

func (h *harness) prepareBase(k engineKind) (*openEngine, error) {
	e := h.base[k.name]
	if e == nil {
		var err error
		if e, err = h.buildBase(k); err != nil {
			return nil, err
		}
		h.base[k.name] = e
	}
	if !e.readsStaged {
		if err := h.settle(k, e, "the base table"); err != nil {
			return nil, err
		}
		if err := e.startReads(); err != nil {
			return nil, err
		}
		e.readsStaged = true
	}
	return e, nil
}

// buildBase builds engine k's base table: loaded in bulk for engines marked
// bulkBase, otherwise through the engine's ingest of workload 1's feed, and in
// bulk after all where that fails and the engine can (dimBulkLoader).
func (h *harness) buildBase(k engineKind) (*openEngine, error) {
	if k.bulkBase {
		return h.loadBase(k)
	}
	e, err := h.fresh(k, "base")
	if err != nil {
		return nil, err
	}
	h.logf("  %s: building the base table (%d changes, not timed)", k.name, len(h.d.inOrder))
	err = inOrder(e.createDim, func() error { return e.ingest(h.d.inOrder, h.sc.batch) })
	if err == nil {
		return e, nil
	}
	if _, ok := e.engine.(dimBulkLoader); !ok {
		return nil, errors.Join(err, h.discard(e))
	}
	if derr := h.discard(e); derr != nil {
		return nil, errors.Join(err, derr)
	}
	h.logf("  %s: the ingest failed (%v); loading the finished table in bulk instead (not timed)", k.name, firstLine(err))
	e, lerr := h.loadBase(k)
	if lerr != nil {
		return nil, errors.Join(err, lerr)
	}
	return e, nil
}

// loadBase creates a base table of engine k and loads the finished table into
// it in bulk (dimBulkLoader), untimed.
func (h *harness) loadBase(k engineKind) (*openEngine, error) {
	e, err := h.fresh(k, "base-bulk")
	if err != nil {
		return nil, err
	}
	bl, ok := e.engine.(dimBulkLoader)
	if !ok {
		return nil, errors.Join(fmt.Errorf("%s cannot load a table in bulk", k.name), h.discard(e))
	}
	final := finalDim(h.d.inOrder)
	n := 0
	for _, vs := range final {
		n += len(vs)
	}
	h.logf("  %s: loading the base table in bulk (%d keys, %d versions, not timed)", k.name, len(final), n)
	start := time.Now()
	if err := inOrder(e.createDim, func() error { return bl.loadDim(final) }); err != nil {
		return nil, errors.Join(err, h.discard(e))
	}
	h.logf("  %s: loaded the base table in %s", k.name, time.Since(start).Round(time.Millisecond))
	return e, nil
}

// firstLine is the first line of err's message.
func firstLine(err error) string {
	msg, _, _ := strings.Cut(err.Error(), "\n")
	return msg
}

// settle runs engine k's maintenance after a load (engine.settle), untimed, and
// logs how long it took.
func (h *harness) settle(k engineKind, e *openEngine, what string) error {
	start := time.Now()
	if err := e.settle(); err != nil {
		return fmt.Errorf("settle %s: %w", what, err)
	}
	h.logf("  %s: settled %s in %s (not timed)", k.name, what, time.Since(start).Round(time.Millisecond))
	return nil
}

// close releases every base table.
func (h *harness) close() error {
	var errs []error
	for _, e := range h.base {
		errs = append(errs, h.discard(e))
	}
	h.base = map[string]*openEngine{}
	return errors.Join(errs...)
}

func (h *harness) logf(format string, args ...any) {
	fmt.Fprintf(h.log, "%s %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// run runs the workloads, each on every engine in turn (so that engines are
// measured close together in time on a machine whose load may drift).
func (h *harness) run(ws []*workload) {
	for _, w := range ws {
		h.logf("workload %d %s", w.id, w.name)
		for _, k := range h.kinds {
			if w.engines != nil && !slices.Contains(w.engines, k.name) {
				h.logf("  %-8s skipped (the workload runs on %s only)", k.name, strings.Join(w.engines, ", "))
				continue
			}
			start := time.Now()
			h.labels = pprof.Labels("workload", w.name, "engine", k.name)
			h.measuring = k.name
			m, err := w.run(h, k)
			r := result{w: w, engine: k.name, measurement: m, err: err}
			h.results = append(h.results, r)
			if err != nil {
				h.logf("  %-8s FAILED: %v", k.name, err)
				continue
			}
			wall, cpu := m.perOp()
			rates, cycles := countsSummary(m.times)
			h.logf("  %-8s %s per %s (CPU %s), median of %d (%s in all), %s; block cache hits %s, GC cycles %s per run",
				k.name, fmtDuration(wall), strings.TrimSuffix(w.unit, "s"), fmtDuration(cpu), len(m.times),
				fmtDuration(time.Since(start)), m.sum, rates, cycles)
		}
	}
}

// timeRuns times work sc.runs times, calling before (untimed) ahead of each.
func (h *harness) timeRuns(before func(run int) error, work func(run int) error) ([]sample, error) {
	var times []sample
	for r := range h.sc.runs {
		if before != nil {
			if err := before(r); err != nil {
				return nil, err
			}
		}
		s, err := h.timed(func() error { return work(r) })
		if err != nil {
			return nil, err
		}
		times = append(times, s)
	}
	return times, nil
}

// timeFill times fill, which writes its answers into out, clearing out
// before each run.
func timeFill[T any](h *harness, out []T, fill func(out []T) error) ([]sample, error) {
	return h.timeRuns(func(int) error {
		clear(out)
		return nil
	}, func(int) error { return fill(out) })
}

// timed times work and counts what it did (counters.go, read outside the
// timed span), run with the pprof labels of the workload and engine
// being measured (h.labels), so that a CPU profile (--cpuprofile) tells the
// timed work of each apart from the untimed loads: go tool pprof -tagfocus
// engine=bitempo-etcd,workload=resolve. Goroutines the work starts inherit the
// labels; those an engine started earlier (etcd's members, Pebble's
// compactions) do not.
func (h *harness) timed(work func() error) (sample, error) {
	var err error
	before := h.counts()
	w := startWatch()
	pprof.Do(context.Background(), h.labels, func(context.Context) { err = work() })
	s := w.stop()
	s.counts = h.counts().sub(before)
	return s, err
}

// failures returns a line per failed measurement and per workload whose
// engines disagree.
func (h *harness) failures() []string {
	var out []string
	sums := map[*workload]map[checksum][]string{}
	var order []*workload
	for _, r := range h.results {
		if r.err != nil {
			out = append(out, fmt.Sprintf("workload %d %s on %s failed: %v", r.w.id, r.w.name, r.engine, r.err))
			continue
		}
		if sums[r.w] == nil {
			sums[r.w] = map[checksum][]string{}
			order = append(order, r.w)
		}
		sums[r.w][r.sum] = append(sums[r.w][r.sum], r.engine)
	}
	for _, w := range order {
		if len(sums[w]) < 2 {
			continue
		}
		var parts []string
		for sum, engines := range sums[w] {
			parts = append(parts, fmt.Sprintf("%s: %s", strings.Join(engines, ", "), sum))
		}
		slices.Sort(parts)
		out = append(out, fmt.Sprintf("workload %d %s: checksums differ: %s", w.id, w.name, strings.Join(parts, "; ")))
	}
	return out
}

// selectWorkloads parses --only: workload numbers or names, comma separated.
func selectWorkloads(only []string) ([]*workload, error) {
	if len(only) == 0 {
		return workloads, nil
	}
	var out []*workload
	for _, s := range listFlag(only).items() {
		w := findWorkload(s)
		if w == nil {
			return nil, fmt.Errorf("unknown workload %q (want %s)", s, workloadNames())
		}
		if !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	slices.SortFunc(out, func(a, b *workload) int { return a.id - b.id })
	return out, nil
}

func findWorkload(s string) *workload {
	n, err := strconv.Atoi(strings.TrimPrefix(strings.ToUpper(s), "W"))
	for _, w := range workloads {
		if (err == nil && w.id == n) || w.name == s {
			return w
		}
	}
	return nil
}

func workloadNames() string {
	var names []string
	for _, w := range workloads {
		names = append(names, fmt.Sprintf("%d %s", w.id, w.name))
	}
	return strings.Join(names, ", ")
}

// workloads is every workload, in the order they run.
var workloads = []*workload{
	{id: 1, name: "scd2-ingest", unit: "changes", run: runIngestInOrder},
	{id: 2, name: "scd2-ingest-late", unit: "changes", run: runIngestLate},
	{id: 3, name: "lookup-latest", unit: "lookups", latency: true, run: runLookupLatest},
	{id: 4, name: "lookup-old-tx", unit: "lookups", latency: true, run: runLookupOldTx},
	{id: 5, name: "resolve", unit: "facts", run: runResolve},
	{id: 6, name: "snapshot", unit: "keys", run: runSnapshot},
	{id: 7, name: "cdc-apply", unit: "events", run: runCDC},
	{id: 8, name: "aggregate-backfill", unit: "rows", run: runBackfill},
	{id: 9, name: "resolve-old-tx", unit: "facts", engines: []string{"bitempo"}, run: runResolveOldTx},
	{id: 10, name: "snapshot-newest", unit: "keys", run: runSnapshotNewest},
}
