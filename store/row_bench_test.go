package store

import (
	"bytes"
	"runtime"
	"testing"
	"time"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/layout"
)

// BenchmarkSnapshotRows measures a whole-table snapshot over benchStore's 100k
// keys x 10 versions at the newest valid time (every key's first record is the
// answer) and in the middle of the keys' histories (where the answer is four
// or five versions back from the newest), by three paths in every
// iteration, each first in turn so that a busy machine slows them alike: ScanAt
// (a Version with an attribute map per key), ScanRowsAt (a reused Row, its
// attributes read by name) and the floor, a raw engine iterator stepping with
// Next through every record of the current keyspace and decoding each key's
// valid_to. At the newest valid time the two store paths read the
// newest-version keyspace, one entry per key, where the floor steps through
// every version; in mid-history they walk the current keyspace as the floor
// does. Reported: ns per key of each, the two ratios to the floor,
// and the allocations per key of each store path (the floor's are zero).
func BenchmarkSnapshotRows(b *testing.B) {
	benchSnapshotRows(b, benchStore(b), benchKeys, []snapshotAt{
		{"valid-now", benchVersions * benchStep},
		{"valid-mid", benchVersions*benchStep/2 + 1},   // four versions newer than the answer
		{"valid-mid-1", benchVersions*benchStep/2 - 1}, // five
	})
}

// BenchmarkSnapshotRowsLongHistories is BenchmarkSnapshotRows over 10k keys x
// 100 versions: the same number of records, ten times as many per key, where
// leaving a key by stepping over its remaining records costs more than a
// NextPrefix or a seek (keySkipper).
func BenchmarkSnapshotRowsLongHistories(b *testing.B) {
	benchSnapshotRows(b, longHistoryStore(b), longKeys, []snapshotAt{
		{"valid-now", longVersions * benchStep},
		{"valid-mid", longVersions*benchStep/2 + 1},
	})
}

// snapshotAt is a sub-benchmark of benchSnapshotRows: a snapshot at valid.
type snapshotAt struct {
	name  string
	valid int64
}

// benchSnapshotRows runs BenchmarkSnapshotRows's three paths over db's table
// dim of keys keys at each valid time of cases.
func benchSnapshotRows(b *testing.B, db *DB, keys int, cases []snapshotAt) {
	tb, _ := db.Table("dim")
	s, err := db.Snapshot()
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	for _, tc := range cases {
		paths := []func() int{
			func() int { return scanVersions(b, s, tb, tc.valid) },
			func() int { return scanRows(b, s, tb, tc.valid) },
			func() int { return floorSnapshot(b, s, tb, tc.valid) },
		}
		b.Run(tc.name, func(b *testing.B) {
			var spent [3]time.Duration
			var allocs [3]uint64
			var ms runtime.MemStats
			for i := 0; b.Loop(); i++ {
				for k := range paths {
					j := (i + k) % len(paths)
					runtime.ReadMemStats(&ms)
					before := ms.Mallocs
					start := time.Now()
					if n := paths[j](); n != keys {
						b.Fatalf("path %d: %d keys, want %d", j, n, keys)
					}
					spent[j] += time.Since(start)
					runtime.ReadMemStats(&ms)
					allocs[j] += ms.Mallocs - before
				}
			}
			rows := float64(b.N * keys)
			per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / rows }
			b.ReportMetric(per(spent[0]), "ns/key-versions")
			b.ReportMetric(per(spent[1]), "ns/key-rows")
			b.ReportMetric(per(spent[2]), "ns/key-floor")
			b.ReportMetric(per(spent[0])/per(spent[2]), "versions-ratio")
			b.ReportMetric(per(spent[1])/per(spent[2]), "rows-ratio")
			b.ReportMetric(float64(allocs[0])/rows, "allocs/key-versions")
			b.ReportMetric(float64(allocs[1])/rows, "allocs/key-rows")
		})
	}
}

// scanVersions runs ScanAt and reads each version's attributes from its map.
func scanVersions(b *testing.B, s *Snapshot, tb *Table, valid int64) int {
	n := 0
	for v, err := range s.ScanAt(tb, Span{}, valid, Infinity) {
		if err != nil {
			b.Fatal(err)
		}
		if _, ok := v.Attrs["city"].(string); ok {
			n++
		}
	}
	return n
}

// scanRows runs ScanRowsAt and reads each row's attributes by name.
func scanRows(b *testing.B, s *Snapshot, tb *Table, valid int64) int {
	n := 0
	city, tier := NewAttrRef("city"), NewAttrRef("tier")
	err := s.ScanRowsAt(tb, Span{}, valid, Infinity, func(r *Row) bool {
		c, ok := r.Text(city)
		_, ok2 := r.Int64(tier)
		if ok && ok2 && len(c) > 0 {
			n++
		}
		return true
	})
	if err != nil {
		b.Fatal(err)
	}
	return n
}

// floorSnapshot walks the table's current keyspace with Next alone: per key,
// the first record starting at or before valid, kept when its valid_to is
// after valid.
func floorSnapshot(b *testing.B, s *Snapshot, tb *Table, valid int64) int {
	lower, upper := Span{}.bounds(layout.CurrentKeys, tb.ID)
	it, err := s.newIter(lower, upper)
	if err != nil {
		b.Fatal(err)
	}
	defer it.Close()
	n := 0
	var done []byte // key prefix of the key already answered
	for ok := it.First(); ok; ok = it.Next() {
		kp, from, err := layout.CurrentKeys.Split(it.Key(), len(lower))
		if err != nil {
			b.Fatal(err)
		}
		if from > valid || (done != nil && bytes.Equal(kp, done)) {
			continue
		}
		done = append(done[:0], kp...)
		rv, err := encoding.DecodeRecordHeadAt(it.Value(), from, 0)
		if err != nil {
			b.Fatal(err)
		}
		if valid < rv.ValidTo {
			n++
		}
	}
	if err := it.Error(); err != nil {
		b.Fatal(err)
	}
	return n
}
