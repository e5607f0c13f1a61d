package store

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/bitempo/bitempo/internal/sealed"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/layout"
)

// changesKeysListed is ChangesKeys as it was before ScanChangesKeys: every
// keyspace scanned in turn into a set, then sorted. The reference the scan
// must equal.
func changesKeysListed(s *Snapshot, t *Table) ([][]byte, error) {
	seen := map[string]bool{}
	var out [][]byte
	for _, ks := range []byte{layout.Events, layout.Checkpoints, layout.Current} {
		prefix := layout.AppendTablePrefix(nil, ks, t.ID)
		for kv, err := range s.RawScan(prefix, encoding.PrefixEnd(prefix)) {
			if err != nil {
				return nil, err
			}
			tuple, _, err := t.splitTuple(kv.Key[len(prefix):])
			if err != nil {
				return nil, err
			}
			if !seen[string(tuple)] {
				seen[string(tuple)] = true
				out = append(out, bytes.Clone(tuple))
			}
		}
	}
	slices.SortFunc(out, bytes.Compare)
	return out, nil
}

// TestScanChangesKeys checks that the streaming scan of a changes table's keys
// yields exactly the keys a listing of its three keyspaces finds, in order,
// over 400 keys that have events, a checkpoint, current versions or any mix of
// them (several entries each); that it stops when the loop does; and that a
// key that does not parse is its last pair, after the keys before it.
func TestScanChangesKeys(t *testing.T) {
	db, tbl := openEventsDB(t)
	commitEvents(t, db, func(w *Writer) error {
		for i := range 400 {
			tuple := eventsTuple(t, tbl, fmt.Sprintf("k%03d", i))
			if i%2 == 0 {
				for at := range int64(3) {
					if err := w.PutEvent(tbl, tuple, LogEvent{At: at, Op: EventUpsert, Attrs: Attrs{"x": at}}); err != nil {
						return err
					}
				}
			}
			if i%3 == 0 {
				if err := w.PutCheckpoint(tbl, tuple, Checkpoint{Through: -1}); err != nil {
					return err
				}
			}
			if i%5 == 0 {
				key := Key{fmt.Sprintf("k%03d", i)}
				for from := range int64(2) {
					if err := w.Assert(tbl, tbl.NewVersion(key, tuple, from*10, from*10+10, w.AllocSK(tbl), Attrs{"x": from})); err != nil {
						return err
					}
				}
			}
		}
		return nil
	})
	s, err := db.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	want, err := changesKeysListed(s, tbl)
	if err != nil {
		t.Fatal(err)
	}
	// Keys with none of the three (i % 2, 3 and 5 all non-zero) are absent.
	held := 0
	for i := range 400 {
		if i%2 == 0 || i%3 == 0 || i%5 == 0 {
			held++
		}
	}
	if len(want) != held {
		t.Fatalf("the listing finds %d keys, want %d", len(want), held)
	}
	var got [][]byte
	for tuple, err := range s.ScanChangesKeys(tbl) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, bytes.Clone(tuple))
	}
	if !slices.EqualFunc(got, want, bytes.Equal) {
		t.Fatalf("scan yields %d keys, the listing %d: %x\nwant %x", len(got), len(want), got, want)
	}
	if listed, err := s.ChangesKeys(tbl); err != nil || !slices.EqualFunc(listed, want, bytes.Equal) {
		t.Fatalf("ChangesKeys: %d keys, %v", len(listed), err)
	}
	// What the scan holds does not grow with the keys: its allocations are
	// those of its three iterators and its two buffers, whatever the count.
	scan := func() {
		for _, err := range s.ScanChangesKeys(tbl) {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	allocs, listed := testing.AllocsPerRun(5, scan), testing.AllocsPerRun(5, func() { _, _ = s.ChangesKeys(tbl) })
	t.Logf("allocations of a scan of %d keys: %v; of ChangesKeys: %v", len(want), allocs, listed)
	if allocs > 32 && !raceEnabled {
		t.Fatalf("a scan of %d keys allocates %v times, more than its iterators' 32", len(want), allocs)
	}
	n := 0
	for range s.ScanChangesKeys(tbl) {
		if n++; n == 10 {
			break
		}
	}

	// A malformed key in the checkpoints, after every valid tuple.
	bad := append(layout.AppendTablePrefix(nil, layout.Checkpoints, tbl.ID), 0xfe, 0x01)
	if err := db.RawSet(sealed.Key{}, bad, []byte{0}); err != nil {
		t.Fatal(err)
	}
	s2, err := db.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	got, err = nil, nil
	for tuple, e := range s2.ScanChangesKeys(tbl) {
		if err != nil {
			t.Fatalf("a pair after the error %v", err)
		}
		if err = e; e == nil {
			got = append(got, bytes.Clone(tuple))
		}
	}
	if !errors.Is(err, ErrCorrupt) || !slices.EqualFunc(got, want, bytes.Equal) {
		t.Fatalf("with a malformed key: %d keys, then %v", len(got), err)
	}
	if _, err := s2.ChangesKeys(tbl); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("ChangesKeys with a malformed key: %v", err)
	}
}
