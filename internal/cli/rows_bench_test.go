package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// benchKeys is how many keys the store of BenchmarkScanResolve holds.
const benchKeys = 10_000

// BenchmarkScanResolve runs bitempo scan and bitempo resolve in process over
// a store of benchKeys keys (two versions each, four attributes), writing
// CSV or JSON to a discarded stdout, and reports the heap allocations per
// printed row (the command's whole run, opening the store included, divided
// by its rows).
func BenchmarkScanResolve(b *testing.B) {
	dir := benchStore(b)
	db := filepath.Join(dir, "db")
	facts := filepath.Join(dir, "facts.csv")
	for _, format := range []string{"csv", "json"} {
		b.Run("scan/"+format, func(b *testing.B) {
			benchCommand(b, "scan", "d", "--valid", "150", "--format", format, "--db", db)
		})
		b.Run("resolve/"+format, func(b *testing.B) {
			benchCommand(b, "resolve", "d", "--facts", facts, "--key", "id", "--at", "at", "--format", format, "--db", db)
		})
	}
	b.Run("scan-attrs/csv", func(b *testing.B) {
		benchCommand(b, "scan", "d", "--valid", "150", "--attrs", "tier,city", "--format", "csv", "--db", db)
	})
}

// benchCommand runs one command line in process b.N times and reports its
// allocations per row of output.
func benchCommand(b *testing.B, args ...string) {
	a := &app{stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard, quiet: true}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for b.Loop() {
		if code := a.run(args); code != 0 {
			b.Fatalf("bitempo %s: exit %d", strings.Join(args, " "), code)
		}
	}
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(b.N*benchKeys), "allocs/row")
}

// benchStore writes the store of BenchmarkScanResolve and a facts file that
// references every key once.
func benchStore(b *testing.B) string {
	dir := b.TempDir()
	db, err := store.Open(filepath.Join(dir, "db"), store.Options{Logger: discardLogger()})
	if err != nil {
		b.Fatal(err)
	}
	def := store.TableDef{Name: "d", Key: []store.KeyColumn{{Name: "id", Type: store.String}}, Axis: store.AxisInt}
	if _, err := db.CreateTable(def); err != nil {
		b.Fatal(err)
	}
	for from := int64(0); from < 200; from += 100 {
		_, err := txn.Update(db, func(tx *txn.Tx) error {
			for i := range benchKeys {
				attrs := store.Attrs{"city": fmt.Sprintf("city-%d", i%97), "tier": int64(i % 5), "score": float64(i) / 8, "active": i%2 == 0}
				if err := tx.Put("d", store.Key{fmt.Sprintf("k%05d", i)}, attrs, from, store.Infinity); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		b.Fatal(err)
	}
	var facts strings.Builder
	facts.WriteString("id,at\n")
	for i := range benchKeys {
		fmt.Fprintf(&facts, "k%05d,%d\n", (i*7919)%benchKeys, 50+i%100)
	}
	if err := os.WriteFile(filepath.Join(dir, "facts.csv"), []byte(facts.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	return dir
}
