package cli

import (
	"bytes"
	"fmt"
	"iter"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/internal/testutil/randstore"
	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
)

// TestRowReadsPrintAsMapReads checks that scan, resolve, history over a range
// of keys and changes, which read row views (query.SnapshotRows,
// query.ResolveRows, query.HistoryRows, query.ChangesRows), print byte for
// byte what the map API's versions print through the same writers, in every
// output format the commands have (csv, json, table, and for resolve a
// Parquet file), on random stores: keys of three column types, attributes of
// every kind, declared columns whose values print conformed, corrections and
// deletes, at the latest and at past transaction times, with and without
// --attrs (a name no record holds included), --prefix and valid-time windows.
func TestRowReadsPrintAsMapReads(t *testing.T) {
	t.Parallel()
	for seed := range uint64(3) {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(seed, 17))
			dir := t.TempDir()
			txs := rowsStore(t, rng, dir)
			db, err := store.Open(filepath.Join(dir, "db"), store.Options{Logger: discardLogger()})
			if err != nil {
				t.Fatal(err)
			}
			tb, err := db.Table("d")
			if err != nil {
				t.Fatal(err)
			}
			type run struct {
				args []string
				want []byte
				file string // the command's -o file, compared with want
			}
			var runs []run
			for q := range 12 {
				tx := int64(0)
				if rng.IntN(2) == 0 {
					tx = txs[rng.IntN(len(txs))]
				}
				common := []string{"--db", filepath.Join(dir, "db"), "--tx", "latest"}
				if tx != 0 {
					common[3] = formatInstant(tx)
				}
				var project []string
				if rng.IntN(2) == 0 {
					project = []string{"v2", "price", "zz", "day", "v0"}
				}
				if project != nil {
					common = append(common, "--attrs", strings.Join(project, ","))
				}
				valid := rng.Int64N(60) - 5
				var prefix []string
				if rng.IntN(3) == 0 {
					prefix = []string{fmt.Sprint("k", rng.IntN(3))}
				}
				withTx := rng.IntN(2) == 0
				facts := filepath.Join(dir, fmt.Sprintf("facts%d.csv", q))
				writeRowsFacts(t, rng, facts, 40)
				for _, format := range []string{"csv", "json", "table"} {
					args := append([]string{"scan", "d", "--valid", fmt.Sprint(valid), "--format", format}, common...)
					for _, p := range prefix {
						args = append(args, "--prefix", p)
					}
					if withTx {
						args = append(args, "--with-tx")
					}
					runs = append(runs, run{args: args, want: mapScan(t, db, tb, format, valid, tx, prefix, project, withTx)})
					from, to := rng.Int64N(30)-5, rng.Int64N(30)+26
					args = append([]string{"history", "d", "--format", format, "--from", fmt.Sprint(from), "--to", fmt.Sprint(to)}, common...)
					hprefix, whole := []string{fmt.Sprint("k", rng.IntN(4))}, false
					switch rng.IntN(3) {
					case 0:
						hprefix = []string{"k"} // a string prefix of every key
						args = append(args, "--prefix", hprefix[0])
					case 1:
						args = append(args, "--prefix", hprefix[0])
					default:
						args, whole = append(args, hprefix[0]), true // leading values: whole components
					}
					if withTx {
						args = append(args, "--with-tx")
					}
					runs = append(runs, run{args: args, want: mapHistory(t, db, tb, format, from, to, tx, hprefix, whole, project, withTx)})
					since := int64(0)
					if c := txs[rng.IntN(len(txs))]; rng.IntN(2) == 0 && (tx == 0 || c < tx) {
						since = c // a window (since, until] that is not empty
					}
					args = []string{"changes", "d", "--format", format, "--db", filepath.Join(dir, "db"), "--since", "0"}
					if since != 0 {
						args[len(args)-1] = formatInstant(since)
					}
					if tx != 0 {
						args = append(args, "--until", formatInstant(tx))
					}
					if project != nil {
						args = append(args, "--attrs", strings.Join(project, ","))
					}
					runs = append(runs, run{args: args, want: mapChanges(t, db, tb, format, since, tx, project)})
					for _, miss := range []string{"null", "skip"} {
						args := append([]string{"resolve", "d", "--facts", facts, "--key", "s,b,n", "--at", "at", "--miss", miss, "--format", format}, common...)
						runs = append(runs, run{args: args, want: mapResolve(t, db, tb, facts, &outputFlags{format: format}, tx, project, miss == "skip")})
					}
				}
				out := filepath.Join(dir, fmt.Sprintf("resolved%d.parquet", q))
				ref := filepath.Join(dir, fmt.Sprintf("want%d.parquet", q))
				args := append([]string{"resolve", "d", "--facts", facts, "--key", "s,b,n", "--at", "at", "--miss", "null", "-o", out}, common...)
				mapResolve(t, db, tb, facts, &outputFlags{path: ref}, tx, project, false)
				want, err := os.ReadFile(ref)
				if err != nil {
					t.Fatal(err)
				}
				runs = append(runs, run{args: args, want: want, file: out})
			}
			// Enough facts for the batch join to lay out rows on several
			// goroutines at once on a machine with two or more cores.
			facts := filepath.Join(dir, "many.csv")
			writeRowsFacts(t, rng, facts, 40_000)
			args := []string{"resolve", "d", "--facts", facts, "--key", "s,b,n", "--at", "at", "--miss", "null", "--format", "csv", "--db", filepath.Join(dir, "db")}
			runs = append(runs, run{args: args, want: mapResolve(t, db, tb, facts, &outputFlags{format: "csv"}, 0, nil, false)})
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			for _, r := range runs {
				var stdout, stderr bytes.Buffer
				a := &app{stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr, quiet: true}
				if code := a.run(r.args); code != 0 {
					t.Fatalf("bitempo %s: exit %d: %s", strings.Join(r.args, " "), code, stderr.String())
				}
				got := stdout.Bytes()
				if r.file != "" {
					var err error
					if got, err = os.ReadFile(r.file); err != nil {
						t.Fatal(err)
					}
				}
				if !bytes.Equal(got, r.want) {
					t.Fatalf("bitempo %s:\n%s\nthe map API's versions print:\n%s", strings.Join(r.args, " "), got, r.want)
				}
			}
		})
	}
}

// rowsStore writes the random store of TestRowReadsPrintAsMapReads
// into dir and returns its commits' transaction times.
func rowsStore(t *testing.T, rng *rand.Rand, dir string) []int64 {
	t.Helper()
	db, err := store.Open(filepath.Join(dir, "db"), store.Options{Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	cols, err := store.ParseColumns("price:decimal(10,2),day:date,ratio:float64")
	if err != nil {
		t.Fatal(err)
	}
	def := store.TableDef{Name: "d", Axis: store.AxisInt, Columns: cols, MixedTypes: true,
		Key: []store.KeyColumn{{Name: "s", Type: store.String}, {Name: "b", Type: store.Bytes}, {Name: "n", Type: store.Uint64}}}
	if _, err := db.CreateTable(def); err != nil {
		t.Fatal(err)
	}
	return randstore.Write(t, db, rng, randstore.History{
		Table: "d", Commits: 15, MaxOps: 12,
		Ops:   []randstore.Op{randstore.Upsert, randstore.Upsert, randstore.Put, randstore.Put, randstore.Delete},
		Key:   func(int) store.Key { return rowsKey(rng) },
		Attrs: func() store.Attrs { return rowsAttrs(rng) }, Valid: 50, PutLen: 20, DeleteLen: 10,
	})
}

// rowsKey draws one of 24 keys.
func rowsKey(rng *rand.Rand) store.Key {
	return store.Key{fmt.Sprint("k", rng.IntN(4)), []byte{byte(rng.IntN(2)), 0xff}, uint64(rng.IntN(2)) * (math.MaxUint64 - 2)}
}

// rowsAttrs draws attributes of every kind, the declared columns' among them,
// some absent.
func rowsAttrs(rng *rand.Rand) store.Attrs {
	a := store.Attrs{}
	for i := range 4 {
		name := fmt.Sprint("v", i)
		switch rng.IntN(10) {
		case 0:
			a[name] = rng.Int64N(2000) - 1000
		case 1:
			a[name] = fmt.Sprint("s,\"", rng.IntN(50), "\n")
		case 2:
			a[name] = rng.NormFloat64() * 1e6
		case 3:
			a[name] = rng.IntN(2) == 0
		case 4:
			a[name] = []byte{byte(rng.IntN(256)), 1}
		case 5:
			a[name] = time.UnixMicro(rng.Int64N(1 << 50)).UTC()
		case 6:
			d, _ := encoding.NewDecimal(rng.Int64N(1e6)-5e5, rng.IntN(4))
			a[name] = d
		case 7:
			a[name] = uint64(math.MaxInt64) + uint64(rng.IntN(9)) + 1
		case 8:
			a[name] = strings.Repeat("é", 70) // cut in table output
		}
	}
	if rng.IntN(3) != 0 {
		d, _ := encoding.NewDecimal(rng.Int64N(1e8), 2)
		a["price"] = d
	}
	if rng.IntN(3) != 0 {
		a["day"] = time.UnixMicro(rng.Int64N(20_000) * 86_400_000_000).UTC()
	}
	if rng.IntN(3) != 0 {
		a["ratio"] = float64(rng.IntN(100)) / 3
	}
	return a
}

// writeRowsFacts writes a facts file of n facts for resolve --key s,b,n --at
// at, keys known and unknown.
func writeRowsFacts(t *testing.T, rng *rand.Rand, path string, n int) {
	t.Helper()
	var b strings.Builder
	b.WriteString("s,b,n,at,v0\n")
	for range n {
		k := rowsKey(rng)
		if rng.IntN(8) == 0 {
			k[0] = "unknown"
		}
		fmt.Fprintf(&b, "%s,%x,%d,%d,fact-%d\n", k[0], k[1], k[2], rng.Int64N(60)-5, rng.IntN(9))
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// mapScan prints a scan from query.Snapshot's versions with the layout scan
// prints.
func mapScan(t *testing.T, db *store.DB, tb *store.Table, format string, valid, tx int64, prefix, project []string, withTx bool) []byte {
	t.Helper()
	keys, err := prefixRange(tb, prefix)
	if err != nil {
		t.Fatal(err)
	}
	versions := query.Snapshot(db, "d", query.AsOf{Valid: valid, Tx: tx}, keys, query.SnapshotOptions{Project: project})
	return printVersions(t, db, tb, format, versions, project, withTx)
}

// printVersions prints versions with the layout scan and history print.
func printVersions(t *testing.T, db *store.DB, tb *store.Table, format string, versions iter.Seq2[store.Version, error], project []string, withTx bool) []byte {
	t.Helper()
	var all []store.Version
	for v, err := range versions {
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, v)
	}
	var buf bytes.Buffer
	w, err := (&outputFlags{format: format}).writer(&app{stdout: &buf})
	if err != nil {
		t.Fatal(err)
	}
	if err := writeVersions(w, newVersionColumns(db, tb, withTx).project(project), all); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// mapHistory prints a history of the keys starting with prefix (its last
// value a string prefix unless whole) from query.HistoryRange's versions with
// the layout history prints.
func mapHistory(t *testing.T, db *store.DB, tb *store.Table, format string, from, to, tx int64, prefix []string, whole bool, project []string, withTx bool) []byte {
	t.Helper()
	keys, err := prefixRange(tb, prefix)
	if err != nil {
		t.Fatal(err)
	}
	if whole {
		keys.StringPrefix = false
	}
	versions := query.HistoryRange(db, "d", keys, from, to, query.HistoryOptions{Tx: tx, Project: project})
	return printVersions(t, db, tb, format, versions, project, withTx)
}

// mapChanges prints the change feed (since, until] (until 0: the latest
// commit) from query.Changes's versions with the layout changes prints.
func mapChanges(t *testing.T, db *store.DB, tb *store.Table, format string, since, until int64, project []string) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := (&outputFlags{format: format}).writer(&app{stdout: &buf})
	if err != nil {
		t.Fatal(err)
	}
	cols := newVersionColumns(db, tb, true).project(project)
	header := append(append([]string{"tx", "op"}, cols.header()...), "erased_records", "erasure_reason")
	if err := w.header(header); err != nil {
		t.Fatal(err)
	}
	for c, err := range query.Changes(db, "d", since, until, "", query.ChangesOptions{Project: project}) {
		if err != nil {
			t.Fatal(err)
		}
		row := append([]cell{txCell(c.Tx), valueCell(c.Op.String())}, cols.cells(&c.Version)...)
		if err := w.row(append(row, cell{}, cell{})); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// mapResolve prints a resolve of the facts in path with query.Resolve's
// attribute maps, each cell made by attrCell, through out's writer (stdout,
// returned, or out.path).
func mapResolve(t *testing.T, db *store.DB, tb *store.Table, path string, out *outputFlags, tx int64, project []string, skip bool) []byte {
	t.Helper()
	in, err := readInput(path, "csv", nil)
	if err != nil {
		t.Fatal(err)
	}
	facts, err := parseFacts(in, tb, &resolveFlags{keys: []string{"s", "b", "n"}, at: "at"})
	if err != nil {
		t.Fatal(err)
	}
	qf := make([]query.Fact, len(facts))
	for i, f := range facts {
		qf[i] = query.Fact{Key: f.Key, At: f.Valid, Tx: tx}
	}
	res, err := query.Resolve(db, "d", qf, query.ResolveOptions{Miss: query.MissNull, Attrs: true, Project: project})
	if err != nil {
		t.Fatal(err)
	}
	names := db.AttrNames(tb)
	if len(project) > 0 {
		names = project
	}
	results := make([]resolved, len(res))
	for _, r := range res {
		cells := make([]cell, 0, len(in.cols)+1+len(names))
		for _, v := range in.rows[r.Index].vals {
			cells = append(cells, inputCell(v))
		}
		if r.Found() {
			cells = append(cells, valueCell(r.SK))
			for _, name := range names {
				cells = append(cells, attrCell(tb, name, r.Attrs[name]))
			}
		} else {
			cells = append(cells, make([]cell, 1+len(names))...)
		}
		results[r.Index] = resolved{reason: r.Reason, cells: cells}
	}
	var buf bytes.Buffer
	w, err := out.writer(&app{stdout: &buf})
	if err != nil {
		t.Fatal(err)
	}
	if err := writeResolved(w, tb, in, names, results, skip); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
