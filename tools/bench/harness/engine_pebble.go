package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/cockroachdb/pebble/v2"
)

// pebbleEngine is the floor: raw Pebble with the minimal hand-written layout for
// each workload and no bitemporal bookkeeping (no transaction time where a
// workload does not need it, no surrogate keys, no change log, no secondary
// index). It has the same options as bitempo's store: the same format version,
// 64 MiB block cache, 16 MiB memtable, synced commits.
//
// Layouts, one database per workload family (times are 8-byte big-endian with
// the sign bit flipped; desc is that, inverted, so newer sorts first):
//
//	SCD2 table:    key | 0x00 | desc(from)               -> to | tier | city
//	bitemporal:    key | 0x00 | desc(from) | desc(txFrom) -> to | txTo | tier | city
//	CDC events:    'e' | key | 0x00 | asc(at) | asc(seq)  -> op | tier | city
//	CDC versions:  'v' | key | 0x00 | desc(from)          -> to | tier | city
//	grouped:       user | 0x00 | desc(from) | contract     -> to | amount | status
type pebbleEngine struct {
	db    *pebble.DB
	it    *pebble.Iterator // reads of workloads 3-6 and 8
	facts []probe
	rows  []leftRow
	buf   []byte
}

func openPebble(dir string) (engine, error) {
	opts := &pebble.Options{
		FormatMajorVersion: pebble.FormatFlushableIngestExcises,
		CacheSize:          pebbleSetup.cache(),
		MemTableSize:       memTableBytes,
		Logger:             quietLogger{},
	}
	opts.EnsureDefaults()
	pebbleSetup.apply(opts)
	db, err := pebble.Open(dir, opts)
	if err != nil {
		return nil, err
	}
	return &pebbleEngine{db: db}, nil
}

// blockCacheCounts reports the block cache's lookups so far (blockCacheCounter).
func (e *pebbleEngine) blockCacheCounts() (hits, misses int64) {
	m := e.db.Metrics().BlockCache
	return m.Hits, m.Misses
}

func pebbleVersion() string {
	return moduleVersion("github.com/cockroachdb/pebble/v2") + " (synced commits, " + pebbleSetup.describe() + ")"
}

// quietLogger drops Pebble's informational lines.
type quietLogger struct{}

func (quietLogger) Infof(string, ...any)         {}
func (quietLogger) Errorf(string, ...any)        {}
func (quietLogger) Fatalf(f string, args ...any) { panic(fmt.Sprintf(f, args...)) }

const signBit = 1 << 63

func appendAsc(dst []byte, t int64) []byte {
	return binary.BigEndian.AppendUint64(dst, uint64(t)^signBit)
}

func appendDesc(dst []byte, t int64) []byte {
	return binary.BigEndian.AppendUint64(dst, ^(uint64(t) ^ signBit))
}

func decodeDesc(b []byte) int64 { return int64(^binary.BigEndian.Uint64(b) ^ signBit) }

func decodeAsc(b []byte) int64 { return int64(binary.BigEndian.Uint64(b) ^ signBit) }

// keyPrefix appends ks (0 for none), key and the 0x00 terminator.
func keyPrefix(dst []byte, ks byte, key string) []byte {
	if ks != 0 {
		dst = append(dst, ks)
	}
	return append(append(dst, key...), 0)
}

func appendVersionValue(dst []byte, v version) []byte {
	dst = binary.BigEndian.AppendUint64(dst, uint64(v.to))
	dst = binary.BigEndian.AppendUint64(dst, uint64(v.tier))
	return append(dst, v.city...)
}

func decodeVersionValue(from int64, val []byte) version {
	return version{from: from, to: int64(binary.BigEndian.Uint64(val)),
		attrs: attrs{tier: int64(binary.BigEndian.Uint64(val[8:])), city: string(val[16:])}}
}

func (e *pebbleEngine) createDim() error { return nil }

// timeline is one key's versions as loaded and as rewritten by a batch.
type timeline struct {
	key       string
	orig, cur []version
}

// ingest groups each batch by key, loads each touched key's versions with one
// seek, applies the batch's upserts in memory and writes the difference.
func (e *pebbleEngine) ingest(changes []change, batch int) error {
	for lo := 0; lo < len(changes); lo += batch {
		part := changes[lo:min(lo+batch, len(changes))]
		it, err := e.db.NewIter(nil)
		if err != nil {
			return err
		}
		byKey := map[string]*timeline{}
		var order []*timeline
		for _, c := range part {
			tl := byKey[c.key]
			if tl == nil {
				tl = &timeline{key: c.key, orig: e.loadVersions(it, 0, c.key)}
				tl.cur = slices.Clone(tl.orig)
				byKey[c.key] = tl
				order = append(order, tl)
			}
			tl.cur = upsert(tl.cur, c.at, c.attrs)
		}
		if err := errors.Join(it.Error(), it.Close()); err != nil {
			return err
		}
		b := e.db.NewBatch()
		for _, tl := range order {
			e.writeRewrite(b, 0, tl.key, diff(tl.orig, tl.cur))
		}
		if err := b.Commit(pebble.Sync); err != nil {
			return err
		}
	}
	return nil
}

// loadVersions returns the versions of key in keyspace ks, ascending.
func (e *pebbleEngine) loadVersions(it *pebble.Iterator, ks byte, key string) []version {
	e.buf = keyPrefix(e.buf[:0], ks, key)
	var out []version
	for ok := it.SeekGE(e.buf); ok && bytes.HasPrefix(it.Key(), e.buf); ok = it.Next() {
		out = append(out, decodeVersionValue(decodeDesc(it.Key()[len(e.buf):]), it.Value()))
	}
	slices.Reverse(out)
	return out
}

func (e *pebbleEngine) writeRewrite(b *pebble.Batch, ks byte, key string, r rewrite) {
	for _, from := range r.deletes {
		_ = b.Delete(appendDesc(keyPrefix(nil, ks, key), from), nil)
	}
	for _, v := range append(r.updates, r.inserts...) {
		_ = b.Set(appendDesc(keyPrefix(nil, ks, key), v.from), appendVersionValue(nil, v), nil)
	}
}

func (e *pebbleEngine) dimVersions(fn func(string, version)) error { return e.scanVersions(0, fn) }

func (e *pebbleEngine) scanVersions(ks byte, fn func(string, version)) error {
	opts := &pebble.IterOptions{}
	if ks != 0 {
		opts = &pebble.IterOptions{LowerBound: []byte{ks}, UpperBound: []byte{ks + 1}}
	}
	it, err := e.db.NewIter(opts)
	if err != nil {
		return err
	}
	for ok := it.First(); ok; ok = it.Next() {
		k := it.Key()
		if ks != 0 {
			k = k[1:]
		}
		sep := bytes.IndexByte(k, 0)
		fn(string(k[:sep]), decodeVersionValue(decodeDesc(k[sep+1:]), it.Value()))
	}
	return errors.Join(it.Error(), it.Close())
}

func (e *pebbleEngine) startReads() error {
	it, err := e.db.NewIter(nil)
	if err != nil {
		return err
	}
	e.it = it
	return nil
}

// lookup is one SeekGE(key | 0x00 | desc(valid)) on a long-lived iterator, a
// prefix check and valid < to.
func (e *pebbleEngine) lookup(key string, valid int64) (version, bool, error) {
	e.buf = keyPrefix(e.buf[:0], 0, key)
	n := len(e.buf)
	e.buf = appendDesc(e.buf, valid)
	if !e.it.SeekGE(e.buf) || !bytes.HasPrefix(e.it.Key(), e.buf[:n]) {
		return version{}, false, e.it.Error()
	}
	v := decodeVersionValue(decodeDesc(e.it.Key()[n:]), e.it.Value())
	return v, valid < v.to, nil
}

// flushBatch commits b, a bulk load's batch, once it holds more than 1 MiB
// or last is set, and returns the batch to go on with.
func (e *pebbleEngine) flushBatch(b *pebble.Batch, last bool) (*pebble.Batch, error) {
	if b.Len() <= 1<<20 && !last {
		return b, nil
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return nil, err
	}
	return e.db.NewBatch(), nil
}

func (e *pebbleEngine) loadCorrections(c *corrections) error {
	b := e.db.NewBatch()
	for k, key := range c.keys {
		for _, r := range c.records(k) {
			kb := appendDesc(appendDesc(keyPrefix(nil, 0, key), r.from), r.txFrom)
			val := binary.BigEndian.AppendUint64(nil, uint64(r.to))
			val = binary.BigEndian.AppendUint64(val, uint64(r.txTo))
			val = binary.BigEndian.AppendUint64(val, uint64(r.tier))
			_ = b.Set(kb, append(val, r.city...), nil)
		}
		var err error
		if b, err = e.flushBatch(b, k == len(c.keys)-1); err != nil {
			return err
		}
	}
	return e.startReads()
}

// lookupAsOf finds the record alive at round with the greatest from <= valid:
// per version (from), the newest record asserted at or before round is the one
// alive then, if any; a version whose record there is retired was removed.
func (e *pebbleEngine) lookupAsOf(key string, valid int64, round int) (version, bool, error) {
	tx := int64(round)
	e.buf = keyPrefix(e.buf[:0], 0, key)
	n := len(e.buf)
	target := valid
	for {
		e.buf = appendDesc(appendDesc(e.buf[:n], target), tx)
		if !e.it.SeekGE(e.buf) || !bytes.HasPrefix(e.it.Key(), e.buf[:n]) {
			return version{}, false, e.it.Error()
		}
		k := e.it.Key()
		from, txFrom := decodeDesc(k[n:]), decodeDesc(k[n+8:])
		if txFrom > tx { // landed on the newest record of an older version
			target = from
			continue
		}
		val := e.it.Value()
		if txTo := int64(binary.BigEndian.Uint64(val[8:])); txTo > tx {
			v := version{from: from, to: int64(binary.BigEndian.Uint64(val)),
				attrs: attrs{tier: int64(binary.BigEndian.Uint64(val[16:])), city: string(val[24:])}}
			return v, valid < v.to, nil
		}
		if from == math.MinInt64 {
			return version{}, false, nil
		}
		target = from - 1
	}
}

func (e *pebbleEngine) stageFacts(facts []probe) error {
	e.facts = facts
	return nil
}

// sortedProbe is a fact in merge order.
type sortedProbe struct {
	key   string
	valid int64
	index int
}

// resolve is the batch join: facts are dealt into key ranges, one per core; each
// core sorts its range by (key, valid time descending) and merges it with one
// forward pass of an iterator over the versions (newest first per key).
func (e *pebbleEngine) resolve(out []answer) error {
	workers := runtime.GOMAXPROCS(0)
	splitters := pickSplitters(e.facts, workers)
	parts := make([][]sortedProbe, workers)
	for i, f := range e.facts {
		p, _ := slices.BinarySearch(splitters, f.key)
		parts[p] = append(parts[p], sortedProbe{key: f.key, valid: f.valid, index: i})
	}
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range parts {
		wg.Go(func() { errs[w] = e.mergeFacts(parts[w], out) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// pickSplitters returns n-1 keys that cut facts into n ranges of about equal
// size, from a sorted sample.
func pickSplitters(facts []probe, n int) []string {
	if n <= 1 || len(facts) == 0 {
		return nil
	}
	sample := make([]string, 0, 1024)
	for i := 0; i < 1024; i++ {
		sample = append(sample, facts[i*len(facts)/1024].key)
	}
	slices.Sort(sample)
	out := make([]string, n-1)
	for i := range out {
		out[i] = sample[(i+1)*len(sample)/n]
	}
	return out
}

func (e *pebbleEngine) mergeFacts(ps []sortedProbe, out []answer) error {
	slices.SortFunc(ps, func(a, b sortedProbe) int {
		if c := strings.Compare(a.key, b.key); c != 0 {
			return c
		}
		return cmp.Compare(b.valid, a.valid)
	})
	it, err := e.db.NewIter(nil)
	if err != nil {
		return err
	}
	var buf []byte
	positioned := false
	for _, p := range ps {
		buf = keyPrefix(buf[:0], 0, p.key)
		n := len(buf)
		buf = appendDesc(buf, p.valid)
		ok := seekForward(it, buf, positioned)
		positioned = true
		if !ok || !bytes.HasPrefix(it.Key(), buf[:n]) {
			continue
		}
		v := decodeVersionValue(decodeDesc(it.Key()[n:]), it.Value())
		if v.covers(p.valid) {
			out[p.index] = answer{found: true, v: v}
		}
	}
	return errors.Join(it.Error(), it.Close())
}

// seekForward positions it at the first key >= target, where targets only grow:
// it steps with Next while that is likely cheaper than a seek (the next fact's
// version is usually a few entries ahead) and seeks past longer stretches.
func seekForward(it *pebble.Iterator, target []byte, positioned bool) bool {
	if positioned {
		for range 8 {
			if !it.Valid() {
				return false
			}
			if bytes.Compare(it.Key(), target) >= 0 {
				return true
			}
			it.Next()
		}
	}
	return it.SeekGE(target)
}

// snapshot walks the whole table once: per key, the first version (newest
// first) starting at or before valid is the candidate. With ten versions per
// key, stepping is cheaper than seeking past the older ones.
func (e *pebbleEngine) snapshot(valid int64, fn func(string, version)) error {
	var cur []byte // key | 0x00 of the key already answered
	for ok := e.it.First(); ok; ok = e.it.Next() {
		k := e.it.Key()
		if cur != nil && bytes.HasPrefix(k, cur) {
			continue
		}
		sep := bytes.IndexByte(k, 0)
		from := decodeDesc(k[sep+1:])
		if from > valid {
			continue
		}
		cur = append(cur[:0], k[:sep+1]...)
		if v := decodeVersionValue(from, e.it.Value()); v.covers(valid) {
			fn(string(k[:sep]), v)
		}
	}
	return e.it.Error()
}

func (e *pebbleEngine) createChanges() error { return nil }

// applyCDC groups the batch by key; per key it merges the batch's events with
// the key's stored event log, derives the versions from scratch and writes the
// events and the difference to the stored versions.
func (e *pebbleEngine) applyCDC(_ string, events []cdcEvent) error {
	byKey := map[string][]cdcEvent{}
	var keys []string
	for _, ev := range events {
		if _, ok := byKey[ev.key]; !ok {
			keys = append(keys, ev.key)
		}
		byKey[ev.key] = append(byKey[ev.key], ev)
	}
	it, err := e.db.NewIter(nil)
	if err != nil {
		return err
	}
	b := e.db.NewBatch()
	for _, key := range keys {
		fresh := byKey[key]
		all := dedupeEvents(append(e.loadEvents(it, key), fresh...))
		orig := e.loadVersions(it, 'v', key)
		e.writeRewrite(b, 'v', key, diff(orig, derive(all)))
		for _, ev := range fresh {
			kb := appendAsc(appendAsc(keyPrefix(nil, 'e', key), ev.at), ev.seq)
			val := []byte{0}
			if ev.del {
				val[0] = 1
			}
			val = binary.BigEndian.AppendUint64(val, uint64(ev.tier))
			_ = b.Set(kb, append(val, ev.city...), nil)
		}
	}
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		return err
	}
	return b.Commit(pebble.Sync)
}

func (e *pebbleEngine) loadEvents(it *pebble.Iterator, key string) []cdcEvent {
	e.buf = keyPrefix(e.buf[:0], 'e', key)
	var out []cdcEvent
	for ok := it.SeekGE(e.buf); ok && bytes.HasPrefix(it.Key(), e.buf); ok = it.Next() {
		k, val := it.Key()[len(e.buf):], it.Value()
		out = append(out, cdcEvent{key: key, at: decodeAsc(k), seq: decodeAsc(k[8:]), del: val[0] == 1,
			attrs: attrs{tier: int64(binary.BigEndian.Uint64(val[1:])), city: string(val[9:])}})
	}
	return out
}

func (e *pebbleEngine) changesVersions(fn func(string, version)) error {
	return e.scanVersions('v', fn)
}

func (e *pebbleEngine) loadAggregates(a *aggData) error {
	b := e.db.NewBatch()
	for i, c := range a.contracts {
		for _, v := range c.versions {
			kb := append(appendDesc(keyPrefix(nil, 0, c.user), v.from), c.id...)
			val := binary.BigEndian.AppendUint64(nil, uint64(v.to))
			val = binary.BigEndian.AppendUint64(val, uint64(v.amount))
			_ = b.Set(kb, append(val, v.status...), nil)
		}
		var err error
		if b, err = e.flushBatch(b, i == len(a.contracts)-1); err != nil {
			return err
		}
	}
	e.rows = a.rows
	return e.startReads()
}

// backfill buckets the rows by user and deals the users, in key order, into
// one contiguous share per core (as bitempo computes its groups on every
// core); per user it reads the user's versions with one seek and aggregates
// them in Go for each of the user's rows.
func (e *pebbleEngine) backfill(out []features) error {
	byUser := map[string][]int{}
	var users []string
	for i, r := range e.rows {
		if _, ok := byUser[r.user]; !ok {
			users = append(users, r.user)
		}
		byUser[r.user] = append(byUser[r.user], i)
	}
	slices.Sort(users)
	workers := max(1, min(runtime.GOMAXPROCS(0), len(users)))
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		share := users[w*len(users)/workers : (w+1)*len(users)/workers]
		wg.Go(func() { errs[w] = e.backfillUsers(share, byUser, out) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// backfillUsers computes the rows of users, in order, with an iterator of
// its own.
func (e *pebbleEngine) backfillUsers(users []string, byUser map[string][]int, out []features) error {
	it, err := e.db.NewIter(nil)
	if err != nil {
		return err
	}
	var vs []contractVersion
	var buf []byte
	for _, user := range users {
		vs = vs[:0]
		buf = keyPrefix(buf[:0], 0, user)
		for ok := it.SeekGE(buf); ok && bytes.HasPrefix(it.Key(), buf); ok = it.Next() {
			val := it.Value()
			vs = append(vs, contractVersion{from: decodeDesc(it.Key()[len(buf):]), to: int64(binary.BigEndian.Uint64(val)),
				amount: int64(binary.BigEndian.Uint64(val[8:])), status: string(val[16:])})
		}
		for _, i := range byUser[user] {
			out[i] = aggregateVersions(vs, e.rows[i].ts)
		}
	}
	return errors.Join(it.Error(), it.Close())
}

func (e *pebbleEngine) settle() error {
	if err := e.db.Compact(context.Background(), []byte{0}, []byte{0xff}, true); err != nil {
		return err
	}
	if e.it == nil {
		return nil
	}
	err := e.it.Close() // it reads the files the compaction replaced
	e.it = nil
	return errors.Join(err, e.startReads())
}

func (e *pebbleEngine) close() error {
	var err error
	if e.it != nil {
		err = e.it.Close()
	}
	return errors.Join(err, e.db.Close())
}
