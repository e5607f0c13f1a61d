package cli

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/bitempo/bitempo/store"
)

// comparableDump is the dump of a store with the transaction log's ordinals
// left out and its lines sorted: an import numbers the changes of one
// transaction in key order, the original in the order its writes made them.
func comparableDump(t *testing.T, dir, db string) string {
	t.Helper()
	out := ok(t, dir, "dump", "--db", db).stdout
	ordinal := regexp.MustCompile(` ordinal=\d+`)
	var lines, txlog []string
	for _, l := range csvLines(out) {
		// An import numbers the commits of the records it rebuilds in its
		// own order: the map of commit numbers is its own (records show
		// the times their numbers map to).
		if strings.HasPrefix(l, "commits,") || strings.HasPrefix(l, "meta,,,name=last_commit,") {
			continue
		}
		if strings.HasPrefix(l, "txlog,") {
			txlog = append(txlog, ordinal.ReplaceAllString(l, ""))
			continue
		}
		lines = append(lines, l)
	}
	slices.Sort(txlog)
	return strings.Join(append(lines, txlog...), "\n")
}

func TestExportAllImport(t *testing.T) {
	t.Parallel()
	dir := customersStore(t)
	correct(t, dir)
	ok(t, dir, "create", "subs", "--key", "account", "--kind", "changes", "--axis", "int", "--db", "db")
	write(t, dir, "feed1.csv", "account,lsn,op,plan,price\na1,1,u,free,0\na1,5,u,pro,9.5\na2,3,u,free,0\n")
	write(t, dir, "feed2.csv", "account,lsn,op,plan,price\na1,30,u,team,20\na2,40,d,,\n")
	ok(t, dir, "load", "subs", "feed1.csv", "--at", "lsn", "--op-col", "op", "--delete-value", "d", "--db", "db")
	ok(t, dir, "load", "subs", "feed2.csv", "--at", "lsn", "--op-col", "op", "--delete-value", "d", "--db", "db")
	ok(t, dir, "create", "blobs", "--key", "id,n", "--key-types", "bytes,uint64", "--group-by", "cat", "--db", "db")
	write(t, dir, "blobs.jsonl", `{"id":"00ff","n":18446744073709551615,"at":"2024-01-01T00:00:00Z","cat":"x","ok":true,"f":1.0}`+"\n"+
		`{"id":"01","n":0,"at":"2024-01-02T00:00:00Z","cat":"y","ok":null}`+"\n")
	ok(t, dir, "load", "blobs", "blobs.jsonl", "--at", "at", "--db", "db")
	ok(t, dir, "create", "empty", "--key", "k", "--db", "db")

	r := ok(t, dir, "export", "--all", "--history", "-o", "exp", "--db", "db")
	if !strings.Contains(r.stderr, "exported 4 tables") {
		t.Fatalf("summary: %s", r.stderr)
	}
	m, err := readManifest(filepath.Join(dir, "exp"))
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Tables) != 4 || m.Tables[1].Name != "subs" || m.Tables[1].Counts["events"] != 5 || m.Tables[1].Counts["batches"] != 2 {
		t.Fatalf("manifest: %+v", m.Tables)
	}
	r = ok(t, dir, "import", "exp", "--db", "copy")
	if !strings.Contains(r.stderr, "verify: ok") {
		t.Fatalf("import summary: %s", r.stderr)
	}
	if got, want := comparableDump(t, dir, "copy"), comparableDump(t, dir, "db"); got != want {
		t.Fatalf("dump of the copy:\n%s\nwant:\n%s", got, want)
	}
	ok(t, dir, "verify", "--db", "copy")
	// The copy keeps working: a new load commits after the original's last tx
	// and hands out the next sk.
	write(t, dir, "more.csv", "customer_id,at,name,city,score\nc9,2024-03-01,Eve,Oslo,1\n")
	ok(t, dir, "load", "customers", "more.csv", "--at", "at", "--db", "copy")
	if out := ok(t, dir, "get", "customers", "c9", "--valid", "2024-03-02", "--db", "copy").stdout; !strings.Contains(out, "c9,2024-03-01,,8,Eve") {
		t.Fatalf("new version in the copy: %s", out)
	}

	// Refusals: an existing store, a directory without manifest, a newer format,
	// export --all flags.
	fails(t, dir, 1, "is not empty", "import", "exp", "--db", "db")
	os.MkdirAll(filepath.Join(dir, "nomanifest"), 0o755)
	fails(t, dir, 1, "has no manifest.json", "import", "nomanifest", "--db", "x")
	data, _ := os.ReadFile(filepath.Join(dir, "exp", "manifest.json"))
	os.MkdirAll(filepath.Join(dir, "newer"), 0o755)
	write(t, dir, "newer/manifest.json", strings.Replace(string(data), `"version": 1`, `"version": 2`, 1))
	fails(t, dir, 1, "export format version 2", "import", "newer", "--db", "x")
	// A damaged records file fails the import and leaves no store behind.
	os.MkdirAll(filepath.Join(dir, "bad"), 0o755)
	for _, e := range mustReadDir(t, filepath.Join(dir, "exp")) {
		b, _ := os.ReadFile(filepath.Join(dir, "exp", e))
		if strings.HasSuffix(e, "records.jsonl") && strings.Contains(string(b), "c1") {
			b = []byte(strings.Replace(string(b), `"tx_from":`, `"tx_from":-`, 1))
		}
		write(t, dir, "bad/"+e, string(b))
	}
	fails(t, dir, 1, "transaction period", "import", "bad", "--db", "x")
	if _, err := os.Stat(filepath.Join(dir, "x")); !os.IsNotExist(err) {
		t.Fatalf("a failed import left the store: %v", err)
	}
	fails(t, dir, 2, "takes --history and -o DIR only", "export", "--all", "-o", "e2", "--db", "db")
	fails(t, dir, 1, "is not empty", "export", "--all", "--history", "-o", "exp", "--db", "db")
}

func mustReadDir(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// TestManifestTableDef round-trips every field of a table definition through
// the manifest's JSON.
func TestManifestTableDef(t *testing.T) {
	t.Parallel()
	def := store.TableDef{Name: "t", Key: []store.KeyColumn{{Name: "a", Type: store.Bytes}, {Name: "b", Type: store.Uint64}},
		Kind: store.Changes, Track: []string{"x", "y"}, Compare: map[string]store.CompareOptions{"x": {Round: true, Scale: 2, Trim: true, FoldCase: true}},
		Axis: store.AxisDate, Granularity: 86_400_000_000, IgnoreNulls: true, Lateness: 7, GroupBy: []string{"g"}}
	mt := manifestOf(def)
	data, err := json.Marshal(&mt)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"compare":{"x":{"round":true,"scale":2,"trim":true,"fold_case":true}}`) {
		t.Fatalf("manifest JSON: %s", data)
	}
	var back manifestTable
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	got, err := back.tableDef()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, def) {
		t.Fatalf("definition after the manifest:\n%+v\nwant:\n%+v", got, def)
	}
}

func TestFidelityValues(t *testing.T) {
	t.Parallel()
	for _, v := range []any{nil, true, int64(-1), int64(math.MaxInt64), uint64(math.MaxUint64), 1.0, math.Copysign(0, -1),
		1e300, math.NaN(), math.Inf(1), math.Inf(-1), "", "x", []byte{}, []byte{0, 255}} {
		enc, err := encodeValue(v)
		if err != nil {
			t.Fatal(err)
		}
		data, err := json.Marshal(enc)
		if err != nil {
			t.Fatal(err)
		}
		dec := json.NewDecoder(strings.NewReader(string(data)))
		dec.UseNumber()
		var raw any
		if err := dec.Decode(&raw); err != nil {
			t.Fatal(err)
		}
		got, err := decodeValue(raw)
		if err != nil {
			t.Fatalf("%v (%s): %v", v, data, err)
		}
		if f, ok := v.(float64); ok {
			g, _ := got.(float64)
			if math.Float64bits(g) != math.Float64bits(f) && !(math.IsNaN(f) && math.IsNaN(g)) {
				t.Fatalf("%v: got %v via %s", v, got, data)
			}
			continue
		}
		if !reflect.DeepEqual(got, v) {
			t.Fatalf("%#v: got %#v via %s", v, got, data)
		}
	}
	if _, err := encodeValue(struct{}{}); err == nil {
		t.Fatal("a value of an unknown type was encoded")
	}
}

// The way out of format 2: a format-2 build's full export of a store
// (testdata/format2-export, of store/testdata/format2) imports into a store of
// this format whole. Every version and every past record reads as the
// format-2 build printed them, a read at a past transaction time included,
// and the store takes new commits after the imported ones.
func TestImportFormat2Export(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	exp, err := filepath.Abs(filepath.Join("testdata", "format2-export"))
	if err != nil {
		t.Fatal(err)
	}
	if r := ok(t, dir, "import", exp, "--db", "db"); !strings.Contains(r.stderr, "verify: ok") {
		t.Fatalf("import summary: %s", r.stderr)
	}
	for _, c := range []struct{ args, want string }{
		{"audit customers c1", "id,valid_from,valid_to,sk,city,tier,tx_from,tx_to\n" +
			"c1,10,,1,Oslo,0,2023-11-14T22:13:20.001Z,2023-11-14T22:13:20.002Z\n" +
			"c1,10,20,1,Oslo,0,2023-11-14T22:13:20.002Z,\n" +
			"c1,20,,3,Bergen,1,2023-11-14T22:13:20.002Z,2023-11-14T22:13:20.003Z\n" +
			"c1,20,30,3,Bergen,1,2023-11-14T22:13:20.003Z,\n" +
			"c1,30,,4,Oslo,2,2023-11-14T22:13:20.003Z,\n"},
		{"audit customers c2", "id,valid_from,valid_to,sk,city,tier,tx_from,tx_to\nc2,5,,2,Tromsø,,2023-11-14T22:13:20.001Z,\n"},
		{"history customers c1", "id,valid_from,valid_to,sk,city,tier\nc1,10,20,1,Oslo,0\nc1,20,30,3,Bergen,1\nc1,30,,4,Oslo,2\n"},
		{"get customers c1 --valid 25 --tx 2023-11-14T22:13:20.002Z", "id,valid_from,valid_to,sk,city,tier\nc1,20,,3,Bergen,1\n"},
	} {
		if got := ok(t, dir, append(strings.Fields(c.args), "--db", "db")...).stdout; got != c.want {
			t.Fatalf("bitempo %s:\n%s\nwant:\n%s", c.args, got, c.want)
		}
	}
	write(t, dir, "more.csv", "id,at,city\nc2,7,Bodø\n")
	ok(t, dir, "load", "customers", "more.csv", "--at", "at", "--db", "db")
	out := ok(t, dir, "audit", "customers", "c2", "--db", "db").stdout
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[3], "c2,7,,5,Bodø,,") || strings.Compare(lines[3][len("c2,7,,5,Bodø,,"):], "2023-11-14T22:13:20.003Z") <= 0 {
		t.Fatalf("a load after the import:\n%s", out)
	}
	ok(t, dir, "verify", "--db", "db")
}
