package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"
)

// TestPebbleTuningFlags checks that --block-size and --pebble-cache-mib reach
// both engines on Pebble, that the report says so, and that a run without them
// is back on the defaults.
func TestPebbleTuningFlags(t *testing.T) {
	out := filepath.Join(t.TempDir(), "results.md")
	var stdout, stderr bytes.Buffer
	code := run([]string{"--scale", "small", "--only", "3,6", "--runs", "1", "--engines", "bitempo,pebble",
		"--block-size", "16384", "--pebble-cache-mib", "96", "--out", out}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	for _, want := range []string{"3 lookup-latest", "6 snapshot", "every engine agrees"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, stdout.String())
		}
	}
	md, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, engine := range []string{"- bitempo: ", "- pebble: "} {
		line := lineWith(string(md), engine)
		for _, want := range []string{"96 MiB block cache", "16384-byte data blocks"} {
			if !strings.Contains(line, want) {
				t.Errorf("%q lacks %q", line, want)
			}
		}
	}

	var o pebble.Options
	o.EnsureDefaults()
	pebbleSetup.apply(&o)
	for i := range o.Levels {
		if o.Levels[i].BlockSize != 16384 {
			t.Errorf("level %d: block size %d after the run with --block-size 16384", i, o.Levels[i].BlockSize)
		}
	}
	if got := pebbleSetup.cache(); got != 96<<20 {
		t.Errorf("cache %d after the run with --pebble-cache-mib 96", got)
	}

	if code := run([]string{"--scale", "small", "--only", "3", "--runs", "1", "--engines", "pebble"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr.String())
	}
	if pebbleSetup != (pebbleTuning{}) || pebbleSetup.cache() != cacheBytes {
		t.Errorf("a run without the flags kept %+v", pebbleSetup)
	}
	if d := pebbleSetup.describe(); d != "64 MiB block cache, 32 MiB of it reserved for the 16 MiB memtables" {
		t.Errorf("default description %q", d)
	}

	for _, bad := range [][]string{{"--block-size", "-1"}, {"--block-size", "4194304"}, {"--pebble-cache-mib", "-5"}, {"--pebble-cache-mib", "32"}} {
		stderr.Reset()
		if code := run(append([]string{"--scale", "small", "--only", "3"}, bad...), &stdout, &stderr); code != 2 {
			t.Errorf("%v: exit %d, want 2", bad, code)
		}
		if want := bad[0] + " must be"; !strings.Contains(stderr.String(), want) {
			t.Errorf("%v: stderr %q lacks %q", bad, stderr.String(), want)
		}
	}
}

// lineWith returns the first line of s that contains sub, or "".
func lineWith(s, sub string) string {
	for line := range strings.SplitSeq(s, "\n") {
		if strings.Contains(line, sub) {
			return line
		}
	}
	return ""
}
