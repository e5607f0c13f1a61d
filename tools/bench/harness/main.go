// Command bench measures bitempo against the engines a user would pick instead
// (raw Pebble, the floor; SQLite; DuckDB) on the same generated data in the same
// run, checks that every engine returns the same answers, and prints a table of
// the results.
//
// It is a nested module, so that the library's dependency graph does not carry
// SQLite and DuckDB. Run it from the repository root through the launcher in
// tools/bench (which builds this module and runs it with the same arguments):
//
//	go run ./tools/bench --scale small|medium|large [--only 1,3,...] [--out FILE.md]
//
// or from this directory with "go run .".
//
// Workloads: 1 scd2-ingest, 2 scd2-ingest-late, 3 lookup-latest, 4 lookup-old-tx,
// 5 resolve, 6 snapshot, 7 cdc-apply, 8 aggregate-backfill, 9 resolve-old-tx
// (workload 5's facts at one past transaction time; bitempo only, checked
// against the model), 10 snapshot-newest (workload 6 at the newest valid
// time). Each engine gets a
// 64 MiB cache budget and durable (fsynced) commits; the opt-in duckdb-mem is
// DuckDB with an 8GB memory limit, and the opt-in bitempo-etcd is bitempo on a
// 3-member etcd cluster inside the process. The exit status is 1 when an
// engine fails a workload or the engines' checksums of a workload differ; see
// BENCHMARKS.md at the repository root for what each engine does per workload.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"slices"
	"strings"
	"syscall"
	"time"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// listFlag collects a repeatable, comma-separated flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(s string) error { *l = append(*l, s); return nil }

// items returns the values given, comma separated or repeated, trimmed, empty
// ones left out.
func (l listFlag) items() []string {
	var out []string
	for _, v := range l {
		for _, s := range strings.Split(v, ",") {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
	}
	return out
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	scaleName := fs.String("scale", "small", "data size: small, medium or large")
	var only, engineNames listFlag
	fs.Var(&only, "only", "workloads to run, by number or name, comma separated or repeated (default all): "+workloadNames())
	fs.Var(&engineNames, "engines", "engines to run, comma separated: "+engineNamesHelp())
	out := fs.String("out", "", "also write the results as markdown, with machine details, to this file")
	runs := fs.Int("runs", 0, "repetitions of every measurement (default: the scale's, 3 for reads; 3 for writes at small, 1 above)")
	seed := fs.Uint64("seed", 1, "seed of the generated data")
	dir := fs.String("dir", "", "parent directory for the databases (default: the system's temporary directory)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	blockSize := fs.Int("block-size", 0, "target size in bytes of the table files' data blocks of the engines on Pebble, bitempo and the floor alike (default Pebble's, 4096)")
	pebbleCache := fs.Int("pebble-cache-mib", 0, "block cache in MiB of the engines on Pebble, bitempo and the floor alike, more than the 32 MiB their memtables keep of it; the other engines keep their 64 MB (default 64)")
	var scaling listFlag
	fs.Var(&scaling, "scaling", "run nothing; compare result files written by --out at different scales (smallest first): how time per operation and throughput change")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "bench: unexpected argument %q (list workloads as --only 1,3,5)\n", fs.Arg(0))
		return 2
	}
	if len(scaling) > 0 {
		if err := runScaling(scaling.items(), *out, stdout); err != nil {
			fmt.Fprintln(stderr, "bench:", err)
			return 1
		}
		return 0
	}
	sc, err := scaleByName(*scaleName)
	if err != nil {
		fmt.Fprintln(stderr, "bench:", err)
		return 2
	}
	if *runs > 0 {
		sc.runs, sc.writeRuns = *runs, *runs
	}
	if *blockSize < 0 || *blockSize > maxBlockSize {
		fmt.Fprintf(stderr, "bench: --block-size must be 0 to %d bytes\n", maxBlockSize)
		return 2
	}
	if *pebbleCache != 0 && *pebbleCache <= memtablesMiB {
		fmt.Fprintf(stderr, "bench: --pebble-cache-mib must be more than the %d MiB the memtables keep of it\n", memtablesMiB)
		return 2
	}
	pebbleSetup = pebbleTuning{blockSize: *blockSize, cacheBytes: int64(*pebbleCache) << 20}
	ws, err := selectWorkloads(only)
	if err != nil {
		fmt.Fprintln(stderr, "bench:", err)
		return 2
	}
	kinds, err := selectEngines(engineNames)
	if err != nil {
		fmt.Fprintln(stderr, "bench:", err)
		return 2
	}
	root, err := os.MkdirTemp(*dir, "bitempo-peers-")
	if err != nil {
		fmt.Fprintln(stderr, "bench:", err)
		return 1
	}
	defer os.RemoveAll(root)
	defer removeOnSignal(root, stderr)()

	if *cpuProfile != "" {
		stop, err := startCPUProfile(*cpuProfile)
		if err != nil {
			fmt.Fprintln(stderr, "bench:", err)
			return 1
		}
		defer stop()
	}
	started, loadBefore := time.Now(), loadAverage()
	fmt.Fprintf(stderr, "generating %s data (seed %d)\n", sc.name, *seed)
	h := newHarness(generate(sc, *seed), root, kinds, stderr)
	h.run(ws)
	failures := h.failures()
	if err := h.close(); err != nil {
		failures = append(failures, "closing databases: "+err.Error())
	}
	fmt.Fprintln(stdout)
	h.printTable(stdout)
	if *out != "" {
		if err := writeMarkdownFile(h, *out, "go run ./tools/bench "+strings.Join(args, " "), started, loadBefore, failures); err != nil {
			failures = append(failures, err.Error())
		}
	}
	if len(failures) > 0 {
		fmt.Fprintln(stdout)
		for _, f := range failures {
			fmt.Fprintln(stdout, "FAIL:", f)
		}
		return 1
	}
	fmt.Fprintln(stdout, "\nchecksums: every engine agrees on every workload")
	return 0
}

func writeMarkdownFile(h *harness, path, command string, started time.Time, loadBefore string, failures []string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	h.writeMarkdown(f, command, started, loadBefore, failures)
	return f.Close()
}

func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		return nil, errors.Join(err, f.Close())
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	}, nil
}

// selectEngines parses --engines; bitempo, when chosen, always comes first.
func selectEngines(names []string) ([]engineKind, error) {
	if len(names) == 0 {
		return slices.DeleteFunc(slices.Clone(engineKinds), func(k engineKind) bool { return k.optIn }), nil
	}
	want := listFlag(names).items()
	var out []engineKind
	for _, k := range engineKinds {
		if slices.Contains(want, k.name) {
			out = append(out, k)
		}
	}
	for _, n := range want {
		if !slices.ContainsFunc(out, func(k engineKind) bool { return k.name == n }) {
			return nil, fmt.Errorf("unknown engine %q (want one of %s)", n, strings.Join(engineNamesOf(engineKinds), ", "))
		}
	}
	return out, nil
}

// engineNamesHelp describes --engines: the default engines, and the opt-in
// ones with what they are.
func engineNamesHelp() string {
	var def, optIn []string
	for _, k := range engineKinds {
		if k.optIn {
			optIn = append(optIn, fmt.Sprintf("%s (%s)", k.name, k.about))
		} else {
			def = append(def, k.name)
		}
	}
	return fmt.Sprintf("default %s; opt-in, run only when named: %s", strings.Join(def, ","), strings.Join(optIn, ", "))
}

func engineNamesOf(kinds []engineKind) []string {
	var out []string
	for _, k := range kinds {
		out = append(out, k.name)
	}
	return out
}

// removeOnSignal makes an interrupt or termination remove the databases under
// root before the process exits (status 128 + the signal's number, as a shell
// reports it), instead of leaving gigabytes in the temporary directory; the
// engines are not closed first, their files are deleted with them. The
// returned function stops that.
func removeOnSignal(root string, stderr io.Writer) (stop func()) {
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case sig := <-signals:
			fmt.Fprintf(stderr, "bench: %v: removing the databases in %s\n", sig, root)
			_ = os.RemoveAll(root)
			status := 1
			if n, ok := sig.(syscall.Signal); ok {
				status = 128 + int(n)
			}
			os.Exit(status)
		case <-done:
		}
	}()
	return func() {
		signal.Stop(signals)
		close(done)
	}
}
