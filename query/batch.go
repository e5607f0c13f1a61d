package query

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/bitempo/bitempo/store"
)

// This file is Resolve's batch join: encode the facts' keys, split the batch into
// disjoint key ranges, sort each range and merge it against the current-state
// index with one forward pass of one iterator, on every core.

// minPerWorker is the smallest share of a batch worth a goroutine of its own.
const minPerWorker = 1 << 14

// maxWorkers bounds the goroutines of one batch.
const maxWorkers = 256

// rangeSize is about how many facts one key range holds. A range is sorted and
// merged by one goroutine with one forward pass of one iterator; ranges of this
// size sort within the processor's caches, and many ranges balance the cores.
const rangeSize = 1 << 16

// maxRanges bounds the key ranges of one batch (a range number is a uint16).
const maxRanges = 1 << 16

// probe is one fact ready to sort and merge. It holds no pointers, so a batch of
// a million costs the garbage collector nothing to scan: its key is an offset
// into the encoded keys of its input chunk.
type probe struct {
	// pfx is bytes 1-8 of the encoded key, big-endian and zero-padded; pfx2
	// is bytes 9-15 likewise, shifted left one byte, and the key's length
	// (17 for any longer key) in its low byte. Byte 0 is the type tag of the
	// first key column, the same for every key of a table, so the two words
	// order keys of up to 16 bytes (an identifier of 13 characters,
	// zero-padded numbers included), and a shorter key before a longer one
	// it is a prefix of, without reading the key buffers, whose reads miss
	// the cache in a sort. Only two keys longer than 16 bytes whose first 16
	// agree need their bytes compared.
	pfx, pfx2 uint64
	valid     int64
	tx        int64
	off       uint32 // the key is keys[chunk][off : off+n]
	n         uint32
	chunk     uint32
	index     uint32 // position of the fact in the input
}

// batch is a batch of facts being resolved. Its input is cut into chunks, one
// per goroutine, whose keys are encoded side by side; a fact's probe is built
// from them when it is dealt into its key range, so that a batch holds each
// probe once: at 10M facts each copy is 480 MB of memory written.
type batch struct {
	s      *store.Snapshot
	t      *store.Table
	facts  []Fact
	starts []int      // chunk c holds facts[starts[c]:starts[c+1]]
	keys   [][]byte   // encoded keys, one buffer per chunk
	ends   [][]uint32 // ends[c][i] is where the key of the chunk's fact i ends in keys[c]
	mem    *batchMemory
}

// batchMemory is what a batch allocates in proportion to its facts, about 75
// bytes a fact on ten-byte keys: each chunk's encoded keys, their ends and the
// key range of each fact, the probes of every range, range after range, and
// each goroutine's merge buffers. A resolve takes it from batchPool and puts
// it back once its last row has been delivered, so that repeated batches
// write into the memory the last one used instead of allocating (and zeroing)
// it again: at 10M facts a batch is 750 MB, and the collections that
// allocation starts, meeting a resolve while it runs, made such runs
// 1.25-1.35x slower. The pool drops what no batch has taken for two
// collections, so a one-off large batch does not keep its memory for long.
type batchMemory struct {
	keys   [][]byte
	ends   [][]uint32
	where  [][]uint16
	probes []probe
	merges []mergeBuffers // one per goroutine
}

var batchPool = sync.Pool{New: func() any { return new(batchMemory) }}

// newBatch returns a batch of facts cut into the given number of chunks, in
// memory from batchPool; release returns it.
func newBatch(s *store.Snapshot, t *store.Table, facts []Fact, chunks int) *batch {
	mem := batchPool.Get().(*batchMemory)
	mem.keys, mem.ends, mem.where = resized(mem.keys, chunks), resized(mem.ends, chunks), resized(mem.where, chunks)
	if len(mem.merges) < chunks {
		mem.merges = append(mem.merges, make([]mergeBuffers, chunks-len(mem.merges))...)
	}
	bt := &batch{s: s, t: t, facts: facts, starts: make([]int, chunks+1), keys: mem.keys, ends: mem.ends, mem: mem}
	for c := range bt.starts {
		bt.starts[c] = c * len(facts) / chunks
	}
	return bt
}

// release hands the batch's memory to the next batch. Nothing may read the
// batch, its probes or the rows it delivered afterwards.
func (bt *batch) release() {
	mem := bt.mem
	bt.mem, bt.keys, bt.ends = nil, nil, nil
	batchPool.Put(mem)
}

// resized returns s with length n, keeping the buffers its first n elements
// held (their lengths are reset by their users).
func resized[T any](s [][]T, n int) [][]T {
	if cap(s) < n {
		return append(s[:cap(s)], make([][]T, n-cap(s))...)
	}
	return s[:n]
}

func (bt *batch) tuple(p *probe) []byte {
	end := p.off + p.n
	return bt.keys[p.chunk][p.off:end:end]
}

// shortKey is the longest key the prefixes of a probe hold whole.
const shortKey = 16

// compareKeys orders probes by key only.
func (bt *batch) compareKeys(a, b *probe) int {
	if a.pfx != b.pfx {
		return cmp.Compare(a.pfx, b.pfx)
	}
	if a.pfx2 != b.pfx2 {
		return cmp.Compare(a.pfx2, b.pfx2)
	}
	if a.n <= shortKey { // equal lengths: the prefixes are the whole keys
		return 0
	}
	return bytes.Compare(bt.tuple(a), bt.tuple(b))
}

// sameShortKey reports whether a and b are probes of one key that their
// prefixes hold whole (at most shortKey bytes), without reading the keys.
func sameShortKey(a, b *probe) bool {
	return a.pfx == b.pfx && a.pfx2 == b.pfx2 && a.n <= shortKey
}

// compare orders probes by key and, within a key, by descending valid time: a
// key's versions are stored newest first, so the merge moves forward only.
func (bt *batch) compare(a, b probe) int {
	if c := bt.compareKeys(&a, &b); c != 0 {
		return c
	}
	return cmp.Compare(b.valid, a.valid)
}

// prefixBefore reports whether a sorts before b by their prefixes and, when
// those are equal, by descending valid time. It is compare's order but for
// long keys that agree on their first 16 bytes, and small enough to inline.
func prefixBefore(a, b *probe) bool {
	if a.pfx != b.pfx {
		return a.pfx < b.pfx
	}
	if a.pfx2 != b.pfx2 {
		return a.pfx2 < b.pfx2
	}
	return a.valid > b.valid
}

// comparePrefixes is prefixBefore as a three-way comparison.
func comparePrefixes(a, b probe) int {
	switch {
	case prefixBefore(&a, &b):
		return -1
	case prefixBefore(&b, &a):
		return 1
	}
	return 0
}

// insertionMax is the longest run quicksortProbes leaves to insertion sort.
const insertionMax = 16

// sortProbes sorts ps into compare's order. It sorts by prefixBefore with a
// quicksort specialised to probes: slices.SortFunc calls its comparison
// through a function value and copies both 48-byte probes into each call,
// where prefixBefore inlines and reads them in place (BenchmarkProbeSort, a
// range of 65,536 probes: 2.5x faster). Probes whose prefixes agree then lie
// together; a run of them with keys longer than the prefixes is sorted again
// by its whole keys.
func (bt *batch) sortProbes(ps []probe) {
	quicksortProbes(ps, 2*bits.Len(uint(len(ps))))
	bt.sortLongRuns(ps)
}

// sortLongRuns sorts by compare each run of ps, sorted by prefixBefore, whose
// probes agree on their prefixes and hold keys longer than them.
func (bt *batch) sortLongRuns(ps []probe) {
	for i := 0; i < len(ps); {
		j := i + 1
		for j < len(ps) && ps[j].pfx == ps[i].pfx && ps[j].pfx2 == ps[i].pfx2 {
			j++
		}
		if j-i > 1 && ps[i].n > shortKey {
			slices.SortFunc(ps[i:j], bt.compare)
		}
		i = j
	}
}

// quicksortProbes sorts ps by prefixBefore. A median of three picks each
// pivot; below depth levels of partitions the rest goes to slices.SortFunc,
// so no input costs more than n·log(n) comparisons.
func quicksortProbes(ps []probe, depth int) {
	for len(ps) > insertionMax {
		if depth == 0 {
			slices.SortFunc(ps, comparePrefixes)
			return
		}
		depth--
		// Sort the smaller part by recursion and loop on the larger, so the
		// stack holds at most log2(n) frames.
		if p := partitionProbes(ps); p < len(ps)-p {
			quicksortProbes(ps[:p], depth)
			ps = ps[p:]
		} else {
			quicksortProbes(ps[p:], depth)
			ps = ps[:p]
		}
	}
	for i := 1; i < len(ps); i++ {
		for j := i; j > 0 && prefixBefore(&ps[j], &ps[j-1]); j-- {
			ps[j], ps[j-1] = ps[j-1], ps[j]
		}
	}
}

// partitionProbes reorders ps (at least 3 probes) around the median of its
// first, middle and last probes and returns p, 0 < p < len(ps), such that no
// probe of ps[:p] sorts after one of ps[p:]. Scans stop on probes equal to the
// pivot, so runs of equal probes (one key asked at one time, many times)
// split in the middle instead of degrading the sort.
func partitionProbes(ps []probe) int {
	lo, mid, hi := 0, len(ps)/2, len(ps)-1
	if prefixBefore(&ps[mid], &ps[lo]) {
		ps[mid], ps[lo] = ps[lo], ps[mid]
	}
	if prefixBefore(&ps[hi], &ps[mid]) {
		ps[hi], ps[mid] = ps[mid], ps[hi]
		if prefixBefore(&ps[mid], &ps[lo]) {
			ps[mid], ps[lo] = ps[lo], ps[mid]
		}
	}
	pivot := ps[mid]
	i, j := -1, len(ps)
	for {
		for i++; prefixBefore(&ps[i], &pivot); i++ {
		}
		for j--; prefixBefore(&pivot, &ps[j]); j-- {
		}
		if i >= j {
			return j + 1
		}
		ps[i], ps[j] = ps[j], ps[i]
	}
}

// resolveBatch resolves every fact on snapshot s, calling fn with the answer
// of each, misses included (with their reason). It encodes the facts' keys (a
// slice of the input per core), deals them into disjoint key ranges cut at
// sampled keys, so that every fact of a key lands in one range, then each core
// takes ranges one at a time, sorts each and merges it, on its own fork of s.
// fn runs on those goroutines, concurrently, each with a row of its own; with
// attrs, each row views the version's attributes (read through t, which may
// leave them encoded).
func resolveBatch(s *store.Snapshot, t *store.Table, facts []Fact, attrs bool, fn func(*ResolvedRow) error) error {
	if len(facts) > math.MaxUint32 {
		return fmt.Errorf("bitempo: resolve: %d facts in one batch, at most %d", len(facts), uint32(math.MaxUint32))
	}
	workers := max(1, min(runtime.GOMAXPROCS(0), maxWorkers, len(facts)/minPerWorker))
	return resolveEach(s, t, facts, attrs, workers, min(maxRanges, max(workers, (len(facts)+rangeSize-1)/rangeSize)), fn)
}

// resolveSplit is Resolve's batch join with its number of goroutines and key
// ranges, collecting the answers: attributes as t reads them (encoded, for a
// WithRawAttrs table; a copy, since rows are views).
func resolveSplit(s *store.Snapshot, t *store.Table, facts []Fact, attrs bool, workers, nranges int) ([]Resolution, error) {
	out := make([]Resolution, len(facts))
	err := resolveEach(s, t, facts, attrs, workers, nranges, func(row *ResolvedRow) error {
		return collect(&out[row.Index], row, attrs, true)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// collect sets res to the answer row; with attrs, the attributes as a map, or
// with raw a copy of them as stored when the row holds them so.
func collect(res *Resolution, row *ResolvedRow, attrs, raw bool) error {
	res.Index, res.Reason, res.SK, res.Inferred = row.Index, row.Reason, row.SK, row.Inferred
	if !attrs || !row.Found() {
		return nil
	}
	if raw && row.attrs == nil {
		res.raw = row.raw.Clone() // the row is a view
		return nil
	}
	var err error
	res.Attrs, err = row.Map()
	return err
}

// resolveEach is resolveBatch with its number of goroutines and key ranges.
func resolveEach(s *store.Snapshot, t *store.Table, facts []Fact, attrs bool, workers, nranges int, fn func(*ResolvedRow) error) error {
	bt := newBatch(s, t, facts, workers)
	defer bt.release()
	errs := make([]error, workers)
	parallel(workers, func(c int) { errs[c] = bt.encode(c) })
	if err := errors.Join(errs...); err != nil {
		return err
	}
	ranges := bt.deal(bt.splitters(nranges))
	var next atomic.Int64
	var stop atomic.Bool // a goroutine failed: the others stop at their next range
	parallel(workers, func(w int) {
		row := &ResolvedRow{AttrRow: newAttrRow()}
		if errs[w] = bt.mergeRanges(ranges, &next, &stop, attrs, row, fn, &bt.mem.merges[w], workers > 1); errs[w] != nil {
			stop.Store(true)
		}
	})
	return errors.Join(errs...)
}

// parallel runs fn(0..n-1), each on its own goroutine when n > 1.
func parallel(n int, fn func(i int)) {
	if n == 1 {
		fn(0)
		return
	}
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { fn(i) })
	}
	wg.Wait()
}

// sizingKeys is how many keys encode encodes before it sizes a chunk's key
// buffer for the rest from their mean length, counted as at most
// maxSizedKeyBytes a key: keys longer than that grow the buffer as appends do,
// so a few long keys at the start of a batch of short ones cannot make it
// reserve memory its keys will never fill.
const (
	sizingKeys       = 64
	maxSizedKeyBytes = 64
)

// encode encodes the keys of chunk c's facts.
func (bt *batch) encode(c int) error {
	lo, hi := bt.starts[c], bt.starts[c+1]
	buf := bt.keys[c][:0]
	ends := slices.Grow(bt.ends[c][:0], hi-lo)[:hi-lo]
	for i := lo; i < hi; i++ {
		if i-lo == sizingKeys {
			// Size the buffer for the rest from the first keys: growing it by
			// doubling copied it, and wrote its fresh pages, about twice over
			// (a tenth of a batch resolve's CPU on 10M facts).
			buf = slices.Grow(buf, min(len(buf)/sizingKeys, maxSizedKeyBytes)*(hi-i)*9/8)
		}
		var err error
		if buf, err = bt.t.AppendKey(buf, bt.facts[i].Key); err != nil {
			return fmt.Errorf("bitempo: resolve fact %d: %w", i, err)
		}
		if len(buf) > math.MaxUint32 {
			return fmt.Errorf("bitempo: resolve: the keys of one batch exceed %d bytes", uint32(math.MaxUint32))
		}
		ends[i-lo] = uint32(len(buf))
	}
	bt.keys[c], bt.ends[c] = buf, ends
	return nil
}

// probe returns the probe of chunk c's fact i.
func (bt *batch) probe(c, i int) probe {
	var start uint32
	if i > 0 {
		start = bt.ends[c][i-1]
	}
	end := bt.ends[c][i]
	key := bt.keys[c][start:end]
	var pfx [16]byte
	copy(pfx[:15], key[1:]) // an encoded key holds at least its type tag
	pfx[15] = byte(min(len(key), shortKey+1))
	index := bt.starts[c] + i
	return probe{pfx: binary.BigEndian.Uint64(pfx[:8]), pfx2: binary.BigEndian.Uint64(pfx[8:]), valid: bt.facts[index].At,
		tx: resolveTx(bt.s, bt.facts[index].Tx), off: start, n: end - start, chunk: uint32(c), index: uint32(index)}
}

// splitters returns n-1 probes whose keys cut the batch into n key ranges of
// about equal size, from a regular sample; none for an empty batch.
func (bt *batch) splitters(n int) []probe {
	var sample []probe
	for c, ends := range bt.ends {
		step := max(1, len(ends)/(64*n))
		for i := 0; n > 1 && i < len(ends); i += step {
			sample = append(sample, bt.probe(c, i))
		}
	}
	if len(sample) == 0 {
		return nil
	}
	slices.SortFunc(sample, func(a, b probe) int { return bt.compareKeys(&a, &b) })
	splitters := make([]probe, n-1)
	for i := range splitters {
		splitters[i] = sample[(i+1)*len(sample)/n]
	}
	return splitters
}

// deal builds the batch's probes into len(splitters)+1 key ranges: range r
// holds the keys from splitters[r-1] (inclusive) to splitters[r]. Each chunk
// first counts its facts per range, then writes their probes to its own slots
// of each range.
func (bt *batch) deal(splitters []probe) [][]probe {
	n := len(splitters) + 1
	where := bt.mem.where // the range of each fact (maxRanges); unused for one range
	counts := make([][]int, len(bt.ends))
	parallel(len(bt.ends), func(c int) {
		counts[c] = make([]int, n)
		if n == 1 {
			counts[c][0] = len(bt.ends[c])
			return
		}
		where[c] = slices.Grow(where[c][:0], len(bt.ends[c]))[:len(bt.ends[c])]
		for i := range bt.ends[c] {
			p := bt.probe(c, i)
			r, hi := 0, len(splitters) // r becomes the first splitter above p
			for r < hi {
				m := int(uint(r+hi) >> 1)
				if bt.compareKeys(&splitters[m], &p) <= 0 {
					r = m + 1
				} else {
					hi = m
				}
			}
			where[c][i] = uint16(r)
			counts[c][r]++
		}
	})
	ranges := make([][]probe, n)
	offsets := make([][]int, len(bt.ends))
	for c := range offsets {
		offsets[c] = make([]int, n)
	}
	bt.mem.probes = slices.Grow(bt.mem.probes[:0], len(bt.facts))[:len(bt.facts)]
	base := 0
	for r := range ranges {
		total := 0
		for c := range bt.ends {
			offsets[c][r] = total
			total += counts[c][r]
		}
		ranges[r] = bt.mem.probes[base : base+total : base+total]
		base += total
	}
	parallel(len(bt.ends), func(c int) {
		for i := range bt.ends[c] {
			r := 0
			if n > 1 {
				r = int(where[c][i])
			}
			ranges[r][offsets[c][r]] = bt.probe(c, i)
			offsets[c][r]++
		}
	})
	return ranges
}

// mergeRanges sorts and merges key ranges, taking the next range not yet taken
// until none is left or stop is set, on a fork of the snapshot when other
// goroutines do the same. row is the goroutine's row, passed to fn; bufs are
// its merge buffers.
func (bt *batch) mergeRanges(ranges [][]probe, next *atomic.Int64, stop *atomic.Bool, attrs bool, row *ResolvedRow,
	fn func(*ResolvedRow) error, bufs *mergeBuffers, fork bool) (err error) {
	s := bt.s
	if fork {
		if s, err = s.Fork(); err != nil {
			return err
		}
		defer func() { err = errors.Join(err, s.Close()) }()
	}
	for r := next.Add(1) - 1; r < int64(len(ranges)) && !stop.Load(); r = next.Add(1) - 1 {
		if err = bt.merge(s, ranges[r], bufs, attrs, row, fn); err != nil {
			return err
		}
	}
	return nil
}

// mergeBuffers are the lookups and their gathered keys of one merge, reused by
// a goroutine's next one.
type mergeBuffers struct {
	lookups []store.Probe
	tuples  []byte
}

// merge sorts one key range and resolves it with one forward pass of one
// iterator, in bufs, calling fn with row set to each answer. An error from fn,
// or a malformed record a typed accessor met during fn, stops the merge: fn is
// not called again.
func (bt *batch) merge(s *store.Snapshot, probes []probe, bufs *mergeBuffers, attrs bool, row *ResolvedRow,
	fn func(*ResolvedRow) error) error {
	if len(probes) == 0 {
		return nil
	}
	bt.sortProbes(probes)
	bufs.lookups = slices.Grow(bufs.lookups[:0], len(probes))[:len(probes)]
	lookups := bufs.lookups
	// The keys are gathered in merge order, each once: the encoded keys lie
	// in input order, so reading them in merge order (LookupSorted compares
	// each probe's key with the one before) would miss the cache per probe
	// more than once. Probes of one key share one slice, and a probe whose
	// prefixes hold its whole key and equal the last probe's is of the same
	// key without reading its bytes: only the first probe of a short key
	// reads them, a cache miss per key rather than per fact.
	n := 0
	for i := range probes {
		n += int(probes[i].n)
	}
	bufs.tuples = slices.Grow(bufs.tuples[:0], n)
	tuples := bufs.tuples
	var prev []byte
	for i := range probes {
		p := &probes[i]
		switch {
		case i > 0 && sameShortKey(p, &probes[i-1]):
			lookups[i].Tuple = lookups[i-1].Tuple
		case i > 0 && bytes.Equal(bt.tuple(p), prev):
			lookups[i].Tuple = lookups[i-1].Tuple
		default:
			prev = bt.tuple(p)
			start := len(tuples)
			tuples = append(tuples, prev...)
			lookups[i].Tuple = tuples[start:len(tuples):len(tuples)]
		}
		lookups[i].Valid, lookups[i].Tx = p.valid, p.tx
	}
	var fnErr error
	view := row.AttrRow
	err := s.LookupSorted(bt.t, lookups, attrs, func(i int, v *store.Version, reason store.MissReason) {
		if fnErr != nil {
			return
		}
		*row = ResolvedRow{Index: int(probes[i].index), Reason: reason, AttrRow: view}
		view.reset(store.RawAttrs{}, nil)
		if reason == store.Found {
			row.SK, row.Inferred, row.ValidFrom, row.ValidTo = v.SK, v.Inferred, v.ValidFrom, v.ValidTo
			if attrs {
				view.reset(v.RawAttrs(), v.Attrs)
			}
		}
		fnErr = cmp.Or(fn(row), view.err)
	})
	return cmp.Or(err, fnErr)
}
