package txn

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/store"
	"github.com/cockroachdb/pebble/v2"
)

// BenchmarkApply measures Apply throughput on a continuing CDC feed: every
// iteration applies the next batch (one event per key, keys = batch size), in
// order or with 10% of the events late (landing inside a key's existing
// history, where they split or adjust versions). Three warm-up batches give the
// keys history first.
//
// The floor, in the same run, is raw Pebble writing as many records as the
// commit did (event log entries, current and history records, sk index and
// transaction log entries, the batch id), with keys and values of an event's
// size, in one synced batch: what storing those records costs with no logic at
// all. Reported: events/s, floor-events/s (the batch's events over the floor's
// time), records/event and x-floor (Apply time over floor time). ns/op counts
// Apply only.
//
//	go test ./txn -run '^$' -bench 'BenchmarkApply/./batch=1000$' -benchtime 30x
//	go test ./txn -run '^$' -bench 'BenchmarkApply/./batch=100000$' -benchtime 3x
func BenchmarkApply(b *testing.B) {
	for _, late := range []int{0, 10} {
		for _, size := range []int{1_000, 100_000} {
			name := fmt.Sprintf("feed=in-order/batch=%d", size)
			if late > 0 {
				name = fmt.Sprintf("feed=%d%%-late/batch=%d", late, size)
			}
			b.Run(name, func(b *testing.B) { benchApply(b, size, late) })
		}
	}
}

func benchApply(b *testing.B, size, latePercent int) {
	db, err := store.Open(b.TempDir(), store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	def := store.TableDef{Name: "feed", Kind: store.Changes, Key: []store.KeyColumn{{Name: "id", Type: store.String}}, TrackExcept: []string{"amount"}}
	if _, err := db.CreateTable(def); err != nil {
		b.Fatal(err)
	}
	floor, err := pebble.Open(b.TempDir(), &pebble.Options{Logger: benchQuietLogger{}})
	if err != nil {
		b.Fatal(err)
	}
	defer floor.Close()

	feed := &benchFeed{keys: size, rng: rand.New(rand.NewPCG(1, 2))}
	for range 3 {
		if _, err := benchApplyBatch(db, feed.nextID(), feed.next(0)); err != nil {
			b.Fatal(err)
		}
	}
	var applyTime, floorTime time.Duration
	records := 0
	b.ResetTimer()
	for range b.N {
		batch := feed.next(latePercent)
		start := time.Now()
		c, err := benchApplyBatch(db, feed.nextID(), batch)
		if err != nil {
			b.Fatal(err)
		}
		applyTime += time.Since(start)

		b.StopTimer()
		// Per event one log entry; per asserted record the record, its sk index
		// and txlog entries; per retired one the current delete, the history
		// record and the txlog entry; and the batch id.
		n := len(batch) + 3*c.Asserted + 3*c.Retired + 1
		records += n
		start = time.Now()
		if err := benchFloor(floor, batch, n); err != nil {
			b.Fatal(err)
		}
		floorTime += time.Since(start)
		b.StartTimer()
	}
	events := float64(b.N * size)
	b.ReportMetric(events/applyTime.Seconds(), "events/s")
	b.ReportMetric(events/floorTime.Seconds(), "floor-events/s")
	b.ReportMetric(float64(records)/events, "records/event")
	b.ReportMetric(applyTime.Seconds()/floorTime.Seconds(), "x-floor")
}

func benchApplyBatch(db *store.DB, id string, batch []Event) (Commit, error) {
	return Update(db, func(tx *Tx) error {
		_, err := tx.Apply("feed", id, batch)
		return err
	})
}

// benchFloor writes n records, keyed and valued like the batch's event-log
// entries (cycling through the events), in one synced Pebble batch.
func benchFloor(db *pebble.DB, events []Event, n int) error {
	batch := db.NewBatch()
	defer batch.Close()
	var key, value []byte
	for i := range n {
		e := &events[i%len(events)]
		key = encoding.AppendUint32(append(key[:0], 0x20), uint32(i/len(events)))
		key, _ = encoding.AppendKey(key, e.Key)
		key = encoding.AppendTimeAsc(encoding.AppendTimeAsc(key, e.At), e.Seq)
		var err error
		if value, err = encoding.AppendAttrs(append(value[:0], 0x92, byte(e.Op)), e.Attrs); err != nil {
			return err
		}
		if err := batch.Set(key, value, nil); err != nil {
			return err
		}
	}
	return batch.Commit(pebble.Sync)
}

// benchFeed generates a CDC feed: batch n holds one event per key at valid
// time 100*n + jitter, with a tracked status out of three values (so about a
// third of the upserts are no-op upserts joining a run) and an untracked amount.
type benchFeed struct {
	keys  int
	n     int
	ids   int
	rng   *rand.Rand
	names []string
}

func (f *benchFeed) nextID() string {
	f.ids++
	return fmt.Sprintf("batch-%d", f.ids)
}

func (f *benchFeed) next(latePercent int) []Event {
	if f.names == nil {
		for k := range f.keys {
			f.names = append(f.names, fmt.Sprintf("customer-%08d", k))
		}
	}
	f.n++
	events := make([]Event, f.keys)
	for k := range f.keys {
		at := int64(f.n)*100 + f.rng.Int64N(50)
		if f.n > 1 && f.rng.IntN(100) < latePercent {
			at = f.rng.Int64N(int64(f.n-1)*100) + 1 // somewhere in the key's past
		}
		events[k] = Event{
			Key: store.Key{f.names[k]},
			At:  at,
			Op:  OpUpsert,
			Attrs: store.Attrs{
				"status": []string{"active", "suspended", "closed"}[f.rng.IntN(3)],
				"amount": f.rng.Int64N(1_000_000),
			},
		}
	}
	return events
}

type benchQuietLogger struct{}

func (benchQuietLogger) Infof(string, ...any)  {}
func (benchQuietLogger) Errorf(string, ...any) {}
func (benchQuietLogger) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf(format, args...))
}
