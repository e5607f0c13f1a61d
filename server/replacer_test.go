package server

import (
	"strings"
	"testing"
)

// TestReplacerAcrossWrites turns stand-in paths back into the client's
// whatever the boundaries of the writes that carry them.
func TestReplacerAcrossWrites(t *testing.T) {
	const dir = "/tmp/bitempo-run-42"
	names := map[string]string{dir + "/0/in.csv": "in.csv", dir + "/0": ".", dir + "/1/out.csv": "../out.csv"}
	text := "read " + dir + "/0/in.csv line 3; wrote " + dir + "/1/out.csv; temp " + dir + "/0/.x; other /tmp/bitempo-run-4 stays; " + dir + "/9 unknown"
	want := "read in.csv line 3; wrote ../out.csv; temp ./.x; other /tmp/bitempo-run-4 stays; " + dir + "/9 unknown"
	for size := 1; size <= len(text); size++ {
		var out strings.Builder
		r := newReplacer(&out, dir, names)
		for i := 0; i < len(text); i += size {
			_, _ = r.Write([]byte(text[i:min(i+size, len(text))]))
		}
		_ = r.Close()
		if out.String() != want {
			t.Fatalf("writes of %d bytes: %q, want %q", size, out.String(), want)
		}
	}
}
