package txn

import (
	"fmt"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/bitempo/bitempo/store"
)

// BenchmarkSyncedCommit measures small synced transactions on disk: each
// iteration is one transaction that puts one key, acknowledged once its
// write-ahead log write is synced. The floor, in the same run, is raw Pebble
// committing one synced Set per iteration to a directory beside it; the two
// alternate so that a busy machine slows both alike. Reported: ns/commit of
// each and their ratio.
//
//	go test ./txn -run '^$' -bench BenchmarkSyncedCommit
func BenchmarkSyncedCommit(b *testing.B) {
	db, err := store.Open(b.TempDir(), store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	if _, err := db.CreateTable(store.TableDef{Name: "t", Key: []store.KeyColumn{{Name: "id", Type: store.String}}}); err != nil {
		b.Fatal(err)
	}
	raw, err := pebble.Open(b.TempDir(), &pebble.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer raw.Close()
	var spent [2]time.Duration
	b.ResetTimer()
	for i := range b.N {
		key := fmt.Sprintf("key-%09d", i)
		start := time.Now()
		if _, err := Update(db, func(tx *Tx) error {
			return tx.Put("t", store.Key{key}, store.Attrs{"n": int64(i)}, 0, store.Infinity)
		}); err != nil {
			b.Fatal(err)
		}
		mid := time.Now()
		if err := raw.Set([]byte(key), []byte("value"), pebble.Sync); err != nil {
			b.Fatal(err)
		}
		spent[0] += mid.Sub(start)
		spent[1] += time.Since(mid)
	}
	b.ReportMetric(float64(spent[0].Nanoseconds())/float64(b.N), "ns/commit")
	b.ReportMetric(float64(spent[1].Nanoseconds())/float64(b.N), "ns/raw-commit")
	b.ReportMetric(float64(spent[0])/float64(spent[1]), "x-raw")
}
