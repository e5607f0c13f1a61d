package store

import (
	"bufio"
	"bytes"
	"cmp"
	"container/heap"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/bitempo/bitempo/engine"
	"github.com/bitempo/bitempo/layout"
)

// This file lets one transaction grow beyond memory. A Writer with spilling on
// (Writer.EnableSpill) moves its writes, whenever they pass a byte budget, to a
// sorted run file on disk; Commit then merges the runs and the writes still in
// memory into one sorted sstable and adds it to the engine in one atomic step
// (for Pebble, DB.Ingest: all of the file or none of it, and durable when it
// returns). The store's meta keys (last transaction time, surrogate-key
// counters, attribute names) are written into the same file, so they land in
// the same atomic step as the records.
//
// What Pebble's ingestion allows decides the shape (pebble v2 ingest.go): an
// ingested sstable may hold point deletions, which a retire needs (it deletes
// the record's current-index key), but several local sstables of one ingestion
// must not overlap each other, and one sstable cannot hold two entries for the
// same user key (every entry of an ingested file gets the same sequence
// number). So the runs are merged, the last write of a key wins (the order of
// a batch: runs in the order they were spilled, and within a run retires, then
// asserts, then other writes), and exactly one file is ingested. The rejected
// alternative, one sstable per run, fails on overlapping runs.
//
// An engine that cannot ingest refuses spilling with ErrBulkUnsupported, and
// the caller keeps the transaction in memory (or splits it).

// ErrBulkUnsupported is returned by Writer.EnableSpill when the storage engine
// cannot add a spilled transaction atomically.
var ErrBulkUnsupported = fmt.Errorf("%w: a transaction spilled to disk", ErrUnsupported)

// bulkState is a Writer's spill: its directory, budget and runs.
type bulkState struct {
	dir     string
	budget  int64
	size    int64 // bytes of the writes in memory, counted up to checked
	checked [3]int
	runs    []string
}

// EnableSpill lets the transaction move its writes to sorted runs in a new
// directory under dir whenever they pass budget bytes (Writer.Spill). dir must
// be on the store's file system for the commit to link rather than copy.
func (w *Writer) EnableSpill(dir string, budget int64) error {
	bi, ok := w.db.engine.(engine.BulkIngester)
	if !ok {
		return ErrBulkUnsupported
	}
	if err := bi.CanIngestFrom(dir); err != nil {
		return fmt.Errorf("%w: %w", ErrBulkUnsupported, err)
	}
	d, err := os.MkdirTemp(dir, "bitempo-spill-")
	if err != nil {
		return fmt.Errorf("bitempo: spill directory: %w", err)
	}
	w.bulk = &bulkState{dir: d, budget: budget}
	w.bound = nil // a spilled transaction is ingested, not committed
	return nil
}

// Spill moves the writes held in memory to a sorted run on disk when they pass
// the budget given to EnableSpill. Without EnableSpill it only checks the
// writes against the engine's bound of one commit (writer_limit.go), failing
// with ErrCommitTooLarge once they pass it. The caller (txn.Tx.Flush) calls it
// between keys.
func (w *Writer) Spill() error {
	b := w.bulk
	if b == nil {
		return w.checkBound()
	}
	for i, ws := range [][]engine.Write{w.retires, w.asserts, w.other} {
		for _, x := range ws[b.checked[i]:] {
			b.size += int64(len(x.Key) + len(x.Value) + 16)
		}
		b.checked[i] = len(ws)
	}
	if b.size < b.budget {
		return nil
	}
	writes := sortedWrites(append(append(append([]engine.Write(nil), w.retires...), w.asserts...), w.other...))
	path := filepath.Join(b.dir, fmt.Sprintf("run-%06d", len(b.runs)))
	if err := writeRun(path, writes); err != nil {
		return fmt.Errorf("bitempo: spill: %w", err)
	}
	b.runs = append(b.runs, path)
	w.retires, w.asserts, w.other = nil, nil, nil
	w.known = nil // a spilled commit's derivation reads each key's entry
	b.size, b.checked = 0, [3]int{}
	return nil
}

// spilled reports whether any write is on disk.
func (b *bulkState) spilled() bool { return b != nil && len(b.runs) > 0 }

// close removes the spill directory.
func (b *bulkState) close() {
	if b != nil {
		_ = os.RemoveAll(b.dir)
	}
}

// sortedWrites returns writes in key order, each key once, with its last
// write in ws (what a batch applying ws in order leaves), in ws's own array:
// ws is reordered in place, as a sort would. It sorts the writes' positions
// by (key, position) rather than the writes themselves (a Write is ten words,
// and Go's stable sort, merging by rotations in place, makes O(n log² n)
// swaps of them), then moves each write once
// to its place, following the permutation's cycles, and keeps the last of
// each run of equal keys. Besides ws it holds only the positions, 4 bytes a
// write: a spilling transaction sorts a budget's worth of writes at once.
func sortedWrites(ws []engine.Write) []engine.Write {
	order := make([]int32, len(ws))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int {
		if c := bytes.Compare(ws[a].Key, ws[b].Key); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	// ws[k] is to hold the write now at order[k]; a placed position is
	// marked -1.
	for start := range order {
		if order[start] < 0 {
			continue
		}
		first := ws[start]
		k := start
		for {
			from := order[k]
			order[k] = -1
			if int(from) == start {
				ws[k] = first
				break
			}
			ws[k] = ws[from]
			k = int(from)
		}
	}
	out := ws[:0]
	for i := range ws {
		if n := len(out); n > 0 && bytes.Equal(out[n-1].Key, ws[i].Key) {
			out[n-1] = ws[i]
			continue
		}
		out = append(out, ws[i])
	}
	return out
}

// A run file is a sequence of entries: uvarint key length, key, one byte (1 for
// a deletion), uvarint value length, value.
func writeRun(path string, ws []engine.Write) error {
	rw, err := createRun(path)
	if err != nil {
		return err
	}
	for _, x := range ws {
		if err := rw.add(x); err != nil {
			_ = rw.f.Close()
			return err
		}
	}
	return rw.close()
}

// runWriter writes a run file, one entry at a time, in key order.
type runWriter struct {
	f  *os.File
	bw *bufio.Writer
}

func createRun(path string) (*runWriter, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	return &runWriter{f: f, bw: bufio.NewWriterSize(f, 1<<20)}, nil
}

func (rw *runWriter) add(x engine.Write) error {
	if x.RangeEnd != nil {
		return fmt.Errorf("a range deletion cannot be spilled")
	}
	var hdr [binary.MaxVarintLen64]byte
	bw := rw.bw
	bw.Write(hdr[:binary.PutUvarint(hdr[:], uint64(len(x.Key)))])
	bw.Write(x.Key)
	del := byte(0)
	if x.Delete {
		del = 1
	}
	bw.WriteByte(del)
	bw.Write(hdr[:binary.PutUvarint(hdr[:], uint64(len(x.Value)))])
	_, err := bw.Write(x.Value) // a bufio.Writer keeps its first error
	return err
}

func (rw *runWriter) close() error {
	if err := rw.bw.Flush(); err != nil {
		_ = rw.f.Close()
		return err
	}
	return rw.f.Close()
}

// runReader reads a run file in order.
type runReader struct {
	f    *os.File
	r    *bufio.Reader
	cur  engine.Write
	rank int // later runs win ties
}

func (rr *runReader) next() (bool, error) {
	n, err := binary.ReadUvarint(rr.r)
	if err == io.EOF {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	key := make([]byte, n)
	if _, err := io.ReadFull(rr.r, key); err != nil {
		return false, err
	}
	del, err := rr.r.ReadByte()
	if err != nil {
		return false, err
	}
	n, err = binary.ReadUvarint(rr.r)
	if err != nil {
		return false, err
	}
	value := make([]byte, n)
	if _, err := io.ReadFull(rr.r, value); err != nil {
		return false, err
	}
	rr.cur = engine.Write{Key: key, Value: value, Delete: del == 1}
	return true, nil
}

// mergeHeap orders run readers by current key, the latest run first on ties.
type mergeHeap []*runReader

func (h mergeHeap) Len() int { return len(h) }
func (h mergeHeap) Less(i, j int) bool {
	if c := bytes.Compare(h[i].cur.Key, h[j].cur.Key); c != 0 {
		return c < 0
	}
	return h[i].rank > h[j].rank
}
func (h mergeHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *mergeHeap) Push(x any)   { *h = append(*h, x.(*runReader)) }
func (h *mergeHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// commitSpilled commits a spilled transaction: the last run is the writes
// still in memory (tail, in batch order), and all runs are merged into the
// engine's atomic ingestion. The newest-version entries (newest.go) are
// derived from the merged current-index writes as they pass, into a run of
// their own, which joins the merge before its first key: every current-index
// key sorts before every newest-version key, and no other write has one.
func (w *Writer) commitSpilled(tail []engine.Write) error {
	b := w.bulk
	path := filepath.Join(b.dir, fmt.Sprintf("run-%06d", len(b.runs)))
	if err := writeRun(path, sortedWrites(tail)); err != nil {
		return fmt.Errorf("bitempo: spill: %w", err)
	}
	b.runs = append(b.runs, path)
	var h mergeHeap
	defer func() {
		for _, rr := range h {
			_ = rr.f.Close()
		}
	}()
	push := func(path string, rank int) error {
		rr, ok, err := openRun(path, rank)
		if ok {
			h = append(h, rr)
		}
		return err
	}
	for i, p := range b.runs {
		if err := push(p, i); err != nil {
			return err
		}
	}
	heap.Init(&h)
	merged := func() (engine.Write, bool, error) {
		if len(h) == 0 {
			return engine.Write{}, false, nil
		}
		out := h[0].cur
		for len(h) > 0 && bytes.Equal(h[0].cur.Key, out.Key) {
			rr := h[0]
			ok, err := rr.next()
			if err != nil {
				return engine.Write{}, false, err
			}
			if ok {
				heap.Fix(&h, 0)
			} else {
				_ = rr.f.Close()
				heap.Pop(&h)
			}
		}
		return out, true, nil
	}
	newestPath := filepath.Join(b.dir, "run-newest")
	nw, err := createRun(newestPath)
	if err != nil {
		return fmt.Errorf("bitempo: spill: %w", err)
	}
	d := &newestDeriver{snap: w.snap, emit: nw.add}
	joined := false
	join := func() error {
		joined = true
		if err := firstError(d.finish(), nw.close()); err != nil {
			return err
		}
		if err := push(newestPath, len(b.runs)); err != nil {
			return err
		}
		heap.Init(&h)
		return nil
	}
	next := func() (engine.Write, bool, error) {
		if !joined && (len(h) == 0 || h[0].cur.Key[0] >= layout.Newest) {
			if err := join(); err != nil {
				return engine.Write{}, false, err
			}
		}
		x, ok, err := merged()
		if ok && err == nil && x.Key[0] == layout.Current {
			err = d.add(x)
		}
		return x, ok, err
	}
	err = w.db.engine.(engine.BulkIngester).IngestSorted(b.dir, next)
	if !joined {
		_ = d.finish()
		_ = nw.f.Close()
	}
	return err
}

// openRun opens the run file at path for a merge in which it has rank rank,
// positioned on its first entry; false if it has none (and is closed).
func openRun(path string, rank int) (*runReader, bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, false, err
	}
	rr := &runReader{f: f, r: bufio.NewReaderSize(f, 256<<10), rank: rank}
	ok, err := rr.next()
	if err != nil || !ok {
		_ = f.Close()
		return nil, false, err
	}
	return rr, true, nil
}
