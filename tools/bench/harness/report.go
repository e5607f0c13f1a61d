package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"text/tabwriter"
	"time"
)

// rows formats the results, one line per engine and workload: workload,
// engine, operations per run, then the median run's wall time, wall time per
// operation, throughput and ratio, then CPU time per operation and its ratio.
// A ratio is the engine's median per operation over bitempo's on the same
// workload in the same run: 2.00x means the engine took twice as long as
// bitempo, 0.50x half as long.
func (h *harness) rows() [][]string {
	type ref struct{ wall, cpu time.Duration }
	refs := map[*workload]ref{}
	for _, r := range h.results {
		if r.engine == "bitempo" && r.err == nil {
			wall, cpu := r.perOp()
			refs[r.w] = ref{wall, cpu}
		}
	}
	ratio := func(x, base time.Duration) string {
		if base <= 0 {
			return "-"
		}
		return fmt.Sprintf("%.2fx", float64(x)/float64(base))
	}
	var out [][]string
	for _, r := range h.results {
		name := fmt.Sprintf("%d %s", r.w.id, r.w.name)
		if r.err != nil {
			out = append(out, []string{name, r.engine, "FAILED", "", "", "", "", "", ""})
			continue
		}
		median, _ := r.median()
		wall, cpu := r.perOp()
		base := refs[r.w]
		out = append(out, []string{name, r.engine, fmtCount(float64(r.ops)), fmtDuration(median), fmtDuration(wall),
			fmtCount(float64(r.ops)/median.Seconds()) + " " + r.w.unit + "/s", ratio(wall, base.wall),
			fmtDuration(cpu), ratio(cpu, base.cpu)})
	}
	return out
}

var header = []string{"workload", "engine", "ops", "median run", "per op", "throughput", "time vs bitempo", "CPU per op", "CPU vs bitempo"}

// printTable writes the results as an aligned text table.
func (h *harness) printTable(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	for _, x := range append([][]string{header}, h.rows()...) {
		fmt.Fprintln(tw, strings.Join(x, "\t")+"\t")
	}
	tw.Flush()
}

// writeMarkdown writes the results, the checksums, the machine and the engines.
func (h *harness) writeMarkdown(w io.Writer, command string, started time.Time, loadBefore string, failures []string) {
	fmt.Fprintf(w, "# bitempo peer benchmark: scale %s\n\n", h.sc.name)
	fmt.Fprintf(w, "Command: `%s`, started %s, took %s.\n\n", command, started.UTC().Format(time.RFC3339), time.Since(started).Round(time.Second))
	fmt.Fprintln(w, "## Machine")
	fmt.Fprintln(w)
	for _, line := range machine(loadBefore) {
		fmt.Fprintf(w, "- %s\n", line)
	}
	fmt.Fprintln(w, "\n## Engines")
	fmt.Fprintln(w)
	for _, k := range h.kinds {
		fmt.Fprintf(w, "- %s: %s\n", k.name, k.version())
	}
	sc := h.sc
	fmt.Fprintf(w, "\n## Data\n\n%d keys x %d changes (%d SCD2 changes, %d late in workload 2 order); %d lookups "+
		"(DuckDB: the first %d); workload 4: %d keys x %d versions x %d corrections; %d facts; CDC feed of %d events; "+
		"workload 8: %d users x 10 contracts x %d versions, %d rows; commits of %d; median of %d runs (%d for the write "+
		"workloads 1, 2 and 7, each a fresh database).\n\n",
		sc.keys, sc.versions, len(h.d.inOrder), countLate(h.d), sc.lookups, sc.slowLookups, sc.oldKeys, sc.versions,
		sc.corrections, sc.facts, len(h.d.cdc), sc.aggUsers, sc.versions, sc.aggRows, sc.batch, sc.runs, sc.writeRuns)
	fmt.Fprintln(w, "## Results")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Per op and throughput are wall-clock, from the median run. Time vs bitempo: the engine's median time per "+
		"operation over bitempo's on the same workload in the same run (above 1: bitempo is faster). CPU per op: the "+
		"median over runs of the process's user+system CPU time (all threads), per operation.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| "+strings.Join(header, " | ")+" |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---:|---:|---:|")
	for _, x := range h.rows() {
		fmt.Fprintln(w, "| "+strings.Join(x, " | ")+" |")
	}
	fmt.Fprintln(w, "\n## Block cache and garbage collection per run")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Each timed run in run order: its wall time per operation; the share of block lookups Pebble's block "+
		"cache answered and the blocks it missed per operation, each read from its file (from the operating system's "+
		"page cache when it holds the file) and decompressed (engines on Pebble); the Go garbage collector's cycles in "+
		"the whole process. When two runs of one engine differ, look here first.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| workload | engine | per op | block cache hits | blocks missed per op | GC cycles |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|")
	for _, x := range h.countsTable() {
		fmt.Fprintln(w, "| "+strings.Join(x, " | ")+" |")
	}
	fmt.Fprintln(w, "\n## Checksums")
	fmt.Fprintln(w)
	for _, r := range h.results {
		if r.err == nil {
			fmt.Fprintf(w, "- %d %s, %s: %s\n", r.w.id, r.w.name, r.engine, r.sum)
		}
	}
	if len(failures) == 0 {
		fmt.Fprintln(w, "\nEvery engine returned the same checksum on every workload.")
	} else {
		fmt.Fprintln(w, "\n**FAILURES**")
		fmt.Fprintln(w)
		for _, f := range failures {
			fmt.Fprintf(w, "- %s\n", f)
		}
	}
}

// countLate counts the changes of workload 2 that arrive after a later change
// of their key.
func countLate(d *dataset) int {
	newest := map[string]int64{}
	n := 0
	for _, c := range d.late {
		if t, ok := newest[c.key]; ok && c.at < t {
			n++
			continue
		}
		newest[c.key] = c.at
	}
	return n
}

// machine describes the machine the run is on.
func machine(loadBefore string) []string {
	return []string{
		"CPU: " + cpuModel() + fmt.Sprintf(", %d cores (GOMAXPROCS %d)", runtime.NumCPU(), runtime.GOMAXPROCS(0)),
		"memory: " + memTotal(),
		"OS: " + runtime.GOOS + "/" + runtime.GOARCH + ", kernel " + strings.TrimSpace(readFile("/proc/sys/kernel/osrelease")),
		"Go: " + runtime.Version(),
		"load average (1, 5, 15 min) before: " + loadBefore + ", after: " + loadAverage(),
	}
}

func memTotal() string {
	var kb float64
	if _, err := fmt.Sscanf(procField("/proc/meminfo", "MemTotal"), "%f kB", &kb); err != nil {
		return "unknown"
	}
	return fmt.Sprintf("%.1f GiB", kb/(1<<20))
}

func cpuModel() string {
	if m := procField("/proc/cpuinfo", "model name"); m != "" {
		return m
	}
	return "unknown"
}

// procField returns the value of the first "name: value" line of a /proc file.
func procField(path, name string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == name {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func readFile(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "unknown"
	}
	return string(b)
}

func loadAverage() string {
	f := strings.Fields(readFile("/proc/loadavg"))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// moduleVersion returns the version of a dependency built into the binary.
func moduleVersion(path string) string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if m.Path == path {
				return path + " " + m.Version
			}
		}
	}
	return path
}

// fmtDuration prints d with three significant digits.
func fmtDuration(d time.Duration) string {
	switch {
	case d < time.Microsecond:
		return fmt.Sprintf("%d ns", d.Nanoseconds())
	case d < time.Millisecond:
		return sig3(float64(d)/float64(time.Microsecond)) + " us"
	case d < time.Second:
		return sig3(float64(d)/float64(time.Millisecond)) + " ms"
	}
	return sig3(d.Seconds()) + " s"
}

func sig3(x float64) string {
	switch {
	case x >= 100:
		return fmt.Sprintf("%.0f", x)
	case x >= 10:
		return fmt.Sprintf("%.1f", x)
	}
	return fmt.Sprintf("%.2f", x)
}

// fmtCount prints a count or rate with a k or M suffix.
func fmtCount(x float64) string {
	switch {
	case x >= 1e6:
		return sig3(x/1e6) + "M"
	case x >= 1e3:
		return sig3(x/1e3) + "k"
	}
	return sig3(x)
}
