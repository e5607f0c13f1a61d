package query_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// The floor store's layout, the peer harness's (tools/bench): key | 0x00 |
// desc(valid_from) -> valid_to | tier | city.
const (
	floorKeys     = 2_000
	floorVersions = 10
	floorStep     = 1_000
)

func floorKey(i int) string { return fmt.Sprintf("customer-%07d", i) }

func floorCity(i, v int) string { return fmt.Sprintf("city-%d", (i+v)%97) }

func appendDesc(dst []byte, t int64) []byte {
	return binary.BigEndian.AppendUint64(dst, ^(uint64(t) ^ 1<<63))
}

// floorVersion is what the floor decodes: a fixed struct, no attribute map.
type floorVersion struct {
	from, to, tier int64
	city           string
}

// BenchmarkGetFloor is query.Get and query.GetRow on a reused snapshot beside
// raw Pebble doing the minimal work of the same read (the peer harness's floor:
// SeekGE on key | desc(valid), a prefix check, and a fixed struct decoded from
// the value), both in memory, so the ratio is the read path's own cost (key
// encoding, table lookup, record decoding, the Version and its attribute map,
// or the row's two attributes), not the cache misses a larger store adds to
// both. ratio-to-floor is each read's time over the floor's, from the floor
// sub-benchmark run before it; the interleaved sub-benchmark's ratios are
// measured side by side.
func BenchmarkGetFloor(b *testing.B) {
	db, err := store.Open("", store.Options{InMemory: true})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	if _, err := db.CreateTable(store.TableDef{Name: "dim", Key: []store.KeyColumn{{Name: "id", Type: store.String}}}); err != nil {
		b.Fatal(err)
	}
	raw, err := pebble.Open("", &pebble.Options{FS: vfs.NewMem()})
	if err != nil {
		b.Fatal(err)
	}
	defer raw.Close()
	batch := raw.NewBatch()
	for lo := 0; lo < floorKeys; lo += 500 {
		_, err := txn.Update(db, func(tx *txn.Tx) error {
			for i := lo; i < lo+500; i++ {
				for v := range floorVersions {
					from, to := int64(v*floorStep), int64(v*floorStep+floorStep)
					if v == floorVersions-1 {
						to = store.Infinity
					}
					attrs := store.Attrs{"city": floorCity(i, v), "tier": int64(v)}
					if err := tx.Put("dim", store.Key{floorKey(i)}, attrs, from, to); err != nil {
						return err
					}
					k := appendDesc(append([]byte(floorKey(i)), 0), from)
					val := binary.BigEndian.AppendUint64(nil, uint64(to))
					val = binary.BigEndian.AppendUint64(val, uint64(v))
					if err := batch.Set(k, append(val, floorCity(i, v)...), nil); err != nil {
						return err
					}
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	if err := batch.Commit(pebble.NoSync); err != nil {
		b.Fatal(err)
	}
	for _, flush := range []func() error{raw.Flush, func() error { return db.Compact(b.Context()) }} {
		if err := flush(); err != nil {
			b.Fatal(err)
		}
	}
	snap, err := db.Snapshot()
	if err != nil {
		b.Fatal(err)
	}
	defer snap.Close()
	it, err := raw.NewIter(nil)
	if err != nil {
		b.Fatal(err)
	}
	defer it.Close()

	rng := rand.New(rand.NewPCG(1, 2))
	const n = 1 << 12
	keys := make([]string, n)
	skeys := make([]store.Key, n)
	valids := make([]int64, n)
	for i := range keys {
		keys[i] = floorKey(rng.IntN(floorKeys))
		skeys[i] = store.Key{keys[i]}
		valids[i] = rng.Int64N(floorVersions * floorStep)
	}
	// The reads, by index into keys and valids. The row path reads the
	// floor's two attributes through references made once, as a caller's hot
	// loop does.
	var buf []byte
	var sink floorVersion
	floorRead := func(i int) error {
		buf = append(append(buf[:0], keys[i%n]...), 0)
		pfx := len(buf)
		buf = appendDesc(buf, valids[i%n])
		if !it.SeekGE(buf) || !bytes.HasPrefix(it.Key(), buf[:pfx]) {
			return errors.New("floor read missed")
		}
		val := it.Value()
		sink = floorVersion{from: valids[i%n], to: int64(binary.BigEndian.Uint64(val)),
			tier: int64(binary.BigEndian.Uint64(val[8:])), city: string(val[16:])}
		if valids[i%n] >= sink.to {
			return errors.New("floor read missed")
		}
		return nil
	}
	getRead := func(opts query.GetOptions) func(int) error {
		return func(i int) error {
			_, err := query.Get(snap, "dim", skeys[i%n], query.AsOf{Valid: valids[i%n]}, opts)
			return err
		}
	}
	city, tier := store.NewAttrRef("city"), store.NewAttrRef("tier")
	toSink := func(r *store.Row) error {
		t, _ := r.Int64(tier)
		c, _ := r.Text(city)
		sink = floorVersion{from: r.ValidFrom, to: r.ValidTo, tier: t, city: string(c)}
		return nil
	}
	rowRead := func(i int) error {
		return query.GetRow(snap, "dim", skeys[i%n], query.AsOf{Valid: valids[i%n]}, query.GetOptions{}, toSink)
	}
	reads := []struct {
		name string
		read func(int) error
	}{
		{"floor-raw-pebble", floorRead},
		{"get", getRead(query.GetOptions{})},
		{"get-project=city", getRead(query.GetOptions{Project: []string{"city"}})},
		{"getrow", rowRead},
	}
	var floor float64
	for _, r := range reads {
		b.Run(r.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if err := r.read(i); err != nil {
					b.Fatal(err)
				}
			}
			perOp := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
			if r.name == "floor-raw-pebble" {
				floor = perOp
			} else if floor > 0 {
				b.ReportMetric(perOp/floor, "ratio-to-floor")
			}
		})
	}
	// interleaved alternates blocks of interleavedBlock floor reads with
	// blocks of one of the other reads, taking them in turn, and reports each
	// one's median block time over the floor's: the sides share the machine's
	// load from one millisecond to the next, which the ratios of the
	// sub-benchmarks above, run one after another, do not, and a block that
	// another process's work interrupted does not move a median. Every block
	// follows one of the other store's, so neither store finds its blocks in
	// the CPU's cache more often than the other; each read takes its own keys
	// (an offset into the list).
	b.Run("interleaved", func(b *testing.B) {
		spent := make([][]time.Duration, len(reads))
		next := 0
		for i := 0; b.Loop(); i++ {
			for _, k := range []int{0, 1 + i%(len(reads)-1)} {
				start := time.Now()
				for j := range interleavedBlock {
					if err := reads[k].read(next + j + k*n/len(reads)); err != nil {
						b.Fatal(err)
					}
				}
				spent[k] = append(spent[k], time.Since(start))
			}
			next += interleavedBlock
		}
		if len(spent[len(reads)-1]) == 0 {
			return // too few iterations for every read to have run
		}
		median := func(d []time.Duration) float64 {
			slices.Sort(d)
			return float64(d[len(d)/2])
		}
		floor := median(spent[0])
		for k, r := range reads[1:] {
			b.ReportMetric(median(spent[k+1])/floor, r.name+"/floor")
		}
	})
	_ = sink
}

// interleavedBlock is how many reads of one kind BenchmarkGetFloor's
// interleaved run times at once.
const interleavedBlock = 64
