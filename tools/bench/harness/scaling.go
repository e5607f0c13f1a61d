package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// Scaling reports: `--scaling medium.md,large.md` reads result files written by
// --out at different scales and reports, for every workload and engine present
// in the first file and a later one, how the time per operation, the CPU time
// per operation and the throughput changed. It runs no benchmark; the files
// carry the measurements (and their machines and load averages, which the
// report does not judge).

// scaleResults is one --out file's results.
type scaleResults struct {
	path, scale string
	rows        map[string]scaleRow // by "workload|engine"
	order       []string
}

// scaleRow is one engine's result on one workload.
type scaleRow struct {
	workload, engine string
	ops              float64
	perOp, cpuPerOp  time.Duration
	throughput       float64
	unit             string // of throughput, e.g. "changes/s"
}

// readScaleResults parses the scale and the results table of a file written by
// writeMarkdown. Failed rows are left out.
func readScaleResults(path string) (*scaleResults, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	res := &scaleResults{path: path, rows: map[string]scaleRow{}}
	sc := bufio.NewScanner(f)
	line := 0
	for sc.Scan() {
		line++
		text := sc.Text()
		if s, ok := strings.CutPrefix(text, "# bitempo peer benchmark: scale "); ok {
			res.scale = strings.TrimSpace(s)
			continue
		}
		cells := markdownCells(text)
		if len(cells) != len(header) || cells[0] == header[0] || strings.HasPrefix(cells[0], "---") || cells[2] == "FAILED" {
			continue
		}
		if _, err := strconv.Atoi(strings.SplitN(cells[0], " ", 2)[0]); err != nil {
			continue // not a results row
		}
		row, err := parseScaleRow(cells)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		id := row.workload + "|" + row.engine
		if _, dup := res.rows[id]; !dup {
			res.order = append(res.order, id)
		}
		res.rows[id] = row
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if res.scale == "" || len(res.rows) == 0 {
		return nil, fmt.Errorf("%s: not a results file of this harness (written by --out)", path)
	}
	return res, nil
}

// markdownCells splits a markdown table line into trimmed cells; nil if the
// line is not a table row.
func markdownCells(line string) []string {
	line = strings.TrimSpace(line)
	if !strings.HasPrefix(line, "|") || !strings.HasSuffix(line, "|") || len(line) < 2 {
		return nil
	}
	cells := strings.Split(line[1:len(line)-1], "|")
	for i := range cells {
		cells[i] = strings.TrimSpace(cells[i])
	}
	return cells
}

// parseScaleRow reads the cells of a results row (header order).
func parseScaleRow(c []string) (scaleRow, error) {
	r := scaleRow{workload: c[0], engine: c[1]}
	var err error
	if r.ops, err = parseCount(c[2]); err != nil {
		return r, err
	}
	if r.perOp, err = parseDuration(c[4]); err != nil {
		return r, err
	}
	if r.cpuPerOp, err = parseDuration(c[7]); err != nil {
		return r, err
	}
	rate, unit, _ := strings.Cut(c[5], " ")
	if r.throughput, err = parseCount(rate); err != nil {
		return r, err
	}
	r.unit = unit
	return r, nil
}

// parseDuration reads fmtDuration's output: a number and ns, us, ms or s.
func parseDuration(s string) (time.Duration, error) {
	num, unit, ok := strings.Cut(s, " ")
	x, err := strconv.ParseFloat(num, 64)
	if !ok || err != nil {
		return 0, fmt.Errorf("duration %q", s)
	}
	scale := map[string]time.Duration{"ns": time.Nanosecond, "us": time.Microsecond, "ms": time.Millisecond, "s": time.Second}[unit]
	if scale == 0 {
		return 0, fmt.Errorf("duration %q: unit %q", s, unit)
	}
	return time.Duration(x * float64(scale)), nil
}

// parseCount reads fmtCount's output: a number with an optional k or M.
func parseCount(s string) (float64, error) {
	mult := 1.0
	switch {
	case strings.HasSuffix(s, "k"):
		mult, s = 1e3, strings.TrimSuffix(s, "k")
	case strings.HasSuffix(s, "M"):
		mult, s = 1e6, strings.TrimSuffix(s, "M")
	}
	x, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("count %q", s)
	}
	return x * mult, nil
}

var scalingHeader = []string{"workload", "engine", "scales", "ops", "per op", "per op growth", "CPU per op growth", "throughput"}

// scalingRows compares each later file with the first: per workload and
// engine, the operations and time per operation at both scales, and their
// ratio (2.00x: an operation costs twice as much at the later scale).
func scalingRows(files []*scaleResults) [][]string {
	base := files[0]
	var out [][]string
	for _, later := range files[1:] {
		for _, id := range base.order {
			a, okA := base.rows[id]
			b, okB := later.rows[id]
			if !okA || !okB {
				continue
			}
			out = append(out, []string{a.workload, a.engine, base.scale + " -> " + later.scale,
				fmtCount(a.ops) + " -> " + fmtCount(b.ops),
				fmtDuration(a.perOp) + " -> " + fmtDuration(b.perOp),
				fmt.Sprintf("%.2fx", float64(b.perOp)/float64(a.perOp)),
				fmt.Sprintf("%.2fx", float64(b.cpuPerOp)/float64(a.cpuPerOp)),
				fmtCount(a.throughput) + " -> " + fmtCount(b.throughput) + " " + a.unit})
		}
	}
	return out
}

// runScaling is the --scaling mode: it reads the files, prints the table and,
// with out, writes it as markdown.
func runScaling(paths []string, out string, stdout io.Writer) error {
	if len(paths) < 2 {
		return fmt.Errorf("--scaling needs two or more result files (written by --out), smallest scale first")
	}
	var files []*scaleResults
	for _, p := range paths {
		r, err := readScaleResults(p)
		if err != nil {
			return err
		}
		files = append(files, r)
	}
	rows := scalingRows(files)
	if len(rows) == 0 {
		return fmt.Errorf("no workload and engine is in %s and a later file", paths[0])
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	for _, x := range append([][]string{scalingHeader}, rows...) {
		fmt.Fprintln(tw, strings.Join(x, "\t")+"\t")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if out == "" {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# bitempo peer benchmark: scaling from %s\n\n", files[0].scale)
	fmt.Fprintf(&b, "From %s. Growth is the later scale's time per operation over the first's: 1.00x means an operation costs the same at both scales.\n\n", strings.Join(paths, ", "))
	fmt.Fprintf(&b, "| %s |\n|%s\n", strings.Join(scalingHeader, " | "), strings.Repeat("---|", len(scalingHeader)))
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s |\n", strings.Join(r, " | "))
	}
	return os.WriteFile(out, []byte(b.String()), 0o644)
}
