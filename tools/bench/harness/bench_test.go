package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// tiny is a scale for tests: every workload on every engine in seconds.
var tiny = scale{name: "tiny", keys: 300, versions: 6, lookups: 2_000, slowLookups: 100,
	oldKeys: 20, corrections: 100, facts: 3_000, aggUsers: 20, aggRows: 300, batch: 100, runs: 1, writeRuns: 1}

// TestEnginesAgree runs every workload on every engine, the opt-in ones
// (duckdb-mem, bitempo-etcd) included, and requires every engine to succeed
// with the same checksum as bitempo.
func TestEnginesAgree(t *testing.T) {
	var log bytes.Buffer
	h := newHarness(generate(tiny, 7), t.TempDir(), engineKinds, &log)
	h.run(workloads)
	defer func() {
		if err := h.close(); err != nil {
			t.Error(err)
		}
	}()
	if f := h.failures(); len(f) > 0 {
		t.Fatalf("failures:\n%s\nlog:\n%s", strings.Join(f, "\n"), log.String())
	}
	want := 0 // a result per workload and engine that runs it
	for _, w := range workloads {
		for _, k := range engineKinds {
			if w.engines == nil || slices.Contains(w.engines, k.name) {
				want++
			}
		}
	}
	if len(h.results) != want {
		t.Fatalf("%d results, want %d", len(h.results), want)
	}
	ran := map[string]int{}
	for _, r := range h.results {
		if r.sum.rows == 0 {
			t.Errorf("workload %s on %s checked no rows", r.w.name, r.engine)
		}
		ran[r.engine]++
	}
	for _, name := range []string{"duckdb", "duckdb-mem", "bitempo-etcd"} {
		if ran[name] == 0 {
			t.Errorf("no workload ran on %s", name)
		}
	}
}

// TestSelectOptInEngines checks that the opt-in engines run only when named,
// and that --engines accepts them, bitempo first.
func TestSelectOptInEngines(t *testing.T) {
	def, err := selectEngines(nil)
	if err != nil {
		t.Fatal(err)
	}
	if names := engineNamesOf(def); slices.Contains(names, "duckdb-mem") || slices.Contains(names, "bitempo-etcd") || !slices.Contains(names, "duckdb") {
		t.Fatalf("default engines %v", names)
	}
	kinds, err := selectEngines([]string{"duckdb-mem,duckdb", "bitempo"})
	if err != nil {
		t.Fatal(err)
	}
	if names := engineNamesOf(kinds); !slices.Equal(names, []string{"bitempo", "duckdb", "duckdb-mem"}) {
		t.Fatalf("engines %v, want bitempo, duckdb, duckdb-mem", names)
	}
	if _, err := selectEngines([]string{"duckdb-huge"}); err == nil || !strings.Contains(err.Error(), "duckdb-mem") {
		t.Fatalf("unknown engine: err = %v, want a refusal naming the engines", err)
	}
}

// TestDuckDBMemCommand runs the duckdb-mem engine through the command at tiny
// scale beside the plain duckdb engine: each is a row of its own, with its
// memory limit in the markdown's engine list, and they agree.
func TestDuckDBMemCommand(t *testing.T) {
	out := filepath.Join(t.TempDir(), "results.md")
	var stdout, stderr bytes.Buffer
	code := run([]string{"--scale", "small", "--engines", "duckdb,duckdb-mem", "--only", "resolve", "--runs", "1", "--out", out}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	md, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| 5 resolve | duckdb |", "| 5 resolve | duckdb-mem |", duckdbMemLimit + " memory limit", "64 MB memory limit"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
}

// TestSmallScaleCommand runs the command as CI does, for a subset of the
// workloads, and checks its table and markdown.
func TestSmallScaleCommand(t *testing.T) {
	out := filepath.Join(t.TempDir(), "results.md")
	var stdout, stderr bytes.Buffer
	code := run([]string{"--scale", "small", "--only", "3,resolve", "--runs", "1", "--out", out}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	for _, want := range []string{"3 lookup-latest", "5 resolve", "duckdb", "every engine agrees"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, stdout.String())
		}
	}
	md, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## Machine", "CPU: ", "Go: go", "| 5 resolve | sqlite |", "Every engine returned the same checksum"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
}

// TestMismatchFails checks that an engine that answers differently makes the
// run fail, naming the workload and both checksums.
func TestMismatchFails(t *testing.T) {
	broken := engineKind{name: "broken", version: func() string { return "broken" }, open: func(dir string) (engine, error) {
		e, err := openPebble(dir)
		return offByOne{e}, err
	}}
	var log bytes.Buffer
	h := newHarness(generate(tiny, 7), t.TempDir(), []engineKind{engineKinds[0], broken}, &log)
	h.run([]*workload{findWorkload("lookup-latest")})
	defer h.close()
	f := h.failures()
	if len(f) != 1 || !strings.Contains(f[0], "lookup-latest: checksums differ") || !strings.Contains(f[0], "broken: ") {
		t.Fatalf("failures = %q", f)
	}
}

// offByOne is an engine whose lookups read one round late.
type offByOne struct{ engine }

func (o offByOne) lookup(key string, valid int64) (version, bool, error) {
	return o.engine.lookup(key, valid+step)
}

func TestSelectWorkloads(t *testing.T) {
	ws, err := selectWorkloads([]string{"5,1", "W3", "snapshot"})
	if err != nil {
		t.Fatal(err)
	}
	var ids []int
	for _, w := range ws {
		ids = append(ids, w.id)
	}
	if got := ids; len(got) != 4 || got[0] != 1 || got[1] != 3 || got[2] != 5 || got[3] != 6 {
		t.Fatalf("ids = %v, want [1 3 5 6]", got)
	}
	if _, err := selectWorkloads([]string{"11"}); err == nil {
		t.Fatal("workload 11 accepted")
	}
}

// TestUpsertRules pins the shared SCD2 rules the peers use on the cases where
// a late change interacts with its neighbours.
func TestUpsertRules(t *testing.T) {
	a, b := attrs{city: "oslo"}, attrs{city: "bergen"}
	for _, tc := range []struct {
		name string
		in   []version
		at   int64
		a    attrs
		want []version
	}{
		{"first", nil, 10, a, []version{{10, inf, a}}},
		{"equal", []version{{10, inf, a}}, 20, a, []version{{10, inf, a}}},
		{"change", []version{{10, inf, a}}, 20, b, []version{{10, 20, a}, {20, inf, b}}},
		{"replace at start", []version{{10, 20, a}, {20, inf, b}}, 20, a, []version{{10, inf, a}}},
		{"late lands between", []version{{10, 30, a}, {30, inf, a}}, 20, b, []version{{10, 20, a}, {20, 30, b}, {30, inf, a}}},
		{"late merges into next", []version{{10, 30, a}, {30, inf, b}}, 20, b, []version{{10, 20, a}, {20, inf, b}}},
		{"before first merges", []version{{10, inf, a}}, 5, a, []version{{5, inf, a}}},
		{"before first", []version{{10, inf, a}}, 5, b, []version{{5, 10, b}, {10, inf, a}}},
	} {
		got := upsert(append([]version(nil), tc.in...), tc.at, tc.a)
		if len(got) != len(tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
				break
			}
		}
	}
}

// TestScalingReport writes two result files with writeMarkdown, as --out does
// at two scales, and checks that --scaling reads them back and reports the
// growth of the time per operation; files that are not results are refused.
func TestScalingReport(t *testing.T) {
	dir := t.TempDir()
	d := generate(tiny, 7)
	write := func(scaleName string, perOp time.Duration, ops int) string {
		h := newHarness(d, dir, engineKinds[:2], io.Discard)
		h.sc.name = scaleName
		for i, k := range h.kinds {
			run := time.Duration(ops) * perOp * time.Duration(i+1)
			h.results = append(h.results, result{w: findWorkload("lookup-latest"), engine: k.name,
				measurement: measurement{ops: ops, times: []sample{{wall: run, cpu: run / 2}}}})
		}
		path := filepath.Join(dir, scaleName+".md")
		var b bytes.Buffer
		h.writeMarkdown(&b, "test", time.Now(), "0 0 0", nil)
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	small, big := write("small", 2*time.Microsecond, 1000), write("big", 5*time.Microsecond, 10_000)
	md := filepath.Join(dir, "scaling.md")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"--scaling", small + "," + big, "--out", md}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	for _, want := range []string{"small -> big", "2.00 us -> 5.00 us", "4.00 us -> 10.0 us", "1.00k -> 10.0k", "2.50x"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("scaling table lacks %q:\n%s", want, stdout.String())
		}
	}
	b, err := os.ReadFile(md)
	if err != nil || !strings.Contains(string(b), "| 3 lookup-latest | pebble | small -> big |") {
		t.Errorf("scaling markdown: %v\n%s", err, b)
	}
	other := filepath.Join(dir, "notes.md")
	if err := os.WriteFile(other, []byte("# notes\n\n| a | b |\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"--scaling", small}, {"--scaling", small + "," + other}} {
		stderr.Reset()
		if code := run(args, io.Discard, &stderr); code != 1 || !strings.Contains(stderr.String(), "bench: ") {
			t.Errorf("run %q: exit %d, stderr %q; want a refusal", args, code, stderr.String())
		}
	}
}

// TestBulkBaseAfterFailedIngest gives DuckDB an ingest that fails: the read
// workloads must still run on a base table loaded in bulk, and agree.
func TestBulkBaseAfterFailedIngest(t *testing.T) {
	failing := engineKind{name: "duckdb-noingest", slowPoint: true, version: func() string { return "test" }, open: func(dir string) (engine, error) {
		e, err := openDuckDB(dir)
		if err != nil {
			return nil, err
		}
		return failingIngest{e.(*duckdbEngine)}, nil
	}}
	var log bytes.Buffer
	h := newHarness(generate(tiny, 7), t.TempDir(), []engineKind{engineKinds[0], failing}, &log)
	h.run([]*workload{findWorkload("lookup-latest"), findWorkload("snapshot")})
	defer h.close()
	if f := h.failures(); len(f) > 0 {
		t.Fatalf("failures: %q\nlog:\n%s", f, log.String())
	}
	if !strings.Contains(log.String(), "loading the finished table in bulk instead") {
		t.Fatalf("no bulk fallback in the log:\n%s", log.String())
	}
}

// TestOneBasePerRun runs three read workloads on an engine whose base table
// cannot be built: it is tried once, and every workload fails naming why.
func TestOneBasePerRun(t *testing.T) {
	failing := engineKind{name: "pebble-noingest", version: func() string { return "test" }, open: func(dir string) (engine, error) {
		e, err := openPebble(dir)
		return failingPebbleIngest{e}, err
	}}
	var log bytes.Buffer
	h := newHarness(generate(tiny, 7), t.TempDir(), []engineKind{failing}, &log)
	h.run([]*workload{findWorkload("lookup-latest"), findWorkload("resolve"), findWorkload("snapshot")})
	defer h.close()
	if n := strings.Count(log.String(), "building the base table"); n != 1 {
		t.Fatalf("the base table was built %d times, want once:\n%s", n, log.String())
	}
	f := h.failures()
	if len(f) != 3 {
		t.Fatalf("failures = %q, want three", f)
	}
	for _, line := range f {
		if !strings.Contains(line, "ingest refused") {
			t.Errorf("failure %q does not say why", line)
		}
	}
}

// TestEtcdBaseLoadedInBulk runs the read workloads on bitempo on etcd without
// workload 1: its base table is loaded in bulk, once, and every workload's
// checksum agrees with the floor's on an ingested table.
func TestEtcdBaseLoadedInBulk(t *testing.T) {
	kinds, err := selectEngines([]string{"pebble,bitempo-etcd"})
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	h := newHarness(generate(tiny, 7), t.TempDir(), kinds, &log)
	h.run([]*workload{findWorkload("lookup-latest"), findWorkload("resolve"), findWorkload("snapshot"), findWorkload("snapshot-newest")})
	defer h.close()
	if f := h.failures(); len(f) > 0 {
		t.Fatalf("failures: %q\nlog:\n%s", f, log.String())
	}
	if n := strings.Count(log.String(), "bitempo-etcd: loading the base table in bulk"); n != 1 {
		t.Fatalf("the etcd base table was loaded %d times, want once:\n%s", n, log.String())
	}
	if strings.Contains(log.String(), "bitempo-etcd: building the base table") {
		t.Fatalf("the etcd base table was ingested:\n%s", log.String())
	}
	if len(h.results) != 8 {
		t.Fatalf("%d results, want 8", len(h.results))
	}
}

// TestEtcdBulkLoadInCommits loads the finished table on etcd in commits of at
// most 100 versions, keys whole, and reads back exactly the model's table.
func TestEtcdBulkLoadInCommits(t *testing.T) {
	e, err := openBitempoEtcd(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer e.close()
	etcdEngine := e.(*bitempoEtcdEngine)
	etcdEngine.bulkVersions = 100
	d := generate(tiny, 7)
	final := finalDim(d.inOrder)
	if err := inOrder(e.createDim, func() error { return etcdEngine.loadDim(final) }); err != nil {
		t.Fatal(err)
	}
	var want checksum
	for key, vs := range final {
		for _, v := range vs {
			want.add(hashVersion(key, v))
		}
	}
	if want.rows <= 100 {
		t.Fatalf("%d versions: too few for more than one commit", want.rows)
	}
	got, err := tableChecksum(e.dimVersions)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Fatalf("loaded table %s, want %s", got, want)
	}
}

// failingPebbleIngest is the floor with an ingest that always fails, and no
// bulk loader.
type failingPebbleIngest struct{ engine }

func (failingPebbleIngest) ingest([]change, int) error { return errors.New("ingest refused") }

// failingIngest is DuckDB with an ingest that always fails.
type failingIngest struct{ *duckdbEngine }

func (failingIngest) ingest([]change, int) error { return errors.New("ingest refused") }
