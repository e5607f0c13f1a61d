package store_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// A Get at any transaction time, of keys written by random transactions and
// then corrected many times over the same periods, answers what the key's
// audit trail says was alive then: the same record, or a miss for the same
// reason. It is checked while the corrections are still in the memtable and
// again after a compaction.
func TestVersionAtPastMatchesAuditTrail(t *testing.T) {
	for seed := range uint64(3) {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			w := newScanWorld(t, seed, 40)
			rng := rand.New(rand.NewPCG(seed, 11))
			for range 60 { // corrections: the same few periods of a few keys, rewritten
				k := w.keys[rng.IntN(3)]
				from := int64(5 * rng.IntN(4))
				c, err := txn.Update(w.db, func(tx *txn.Tx) error {
					if rng.IntN(8) == 0 {
						return tx.Delete("pairs", k, from, from+5)
					}
					return tx.Put("pairs", k, store.Attrs{"v": int64(rng.IntN(1000))}, from, from+5)
				})
				if err != nil {
					t.Fatal(err)
				}
				if c.Tx != 0 {
					w.txs = append(w.txs, c.Tx)
				}
			}
			w.checkVersionAt(t)
			if err := w.db.Compact(context.Background()); err != nil {
				t.Fatal(err)
			}
			w.checkVersionAt(t)
		})
	}
}

// A Get at a past transaction time finds its record past a valid_from whose
// history holds many records: a period corrected more times than the walk
// steps over before it seeks, read before, during and after the corrections;
// one corrected and then deleted, whose newest record asserted before the
// read was retired by then, so the walk leaves the valid_from past its older
// records; and one asserted once and deleted. An SCD2 chain above and below
// them puts versions asserted after early reads between those reads' valid
// times and their records.
func TestVersionAtPastThroughLongCorrectionRuns(t *testing.T) {
	w := newScanWorld(t, 0, 0)
	k := w.keys[0]
	write := func(fn func(tx *txn.Tx) error) {
		t.Helper()
		c, err := txn.Update(w.db, fn)
		if err != nil {
			t.Fatal(err)
		}
		w.txs = append(w.txs, c.Tx)
	}
	upsert := func(at int64) {
		write(func(tx *txn.Tx) error {
			_, err := tx.Upsert("pairs", k, store.Attrs{"v": at}, at)
			return err
		})
	}
	put := func(from int64, v int) {
		write(func(tx *txn.Tx) error { return tx.Put("pairs", k, store.Attrs{"v": int64(v)}, from, from+5) })
	}
	for at := int64(0); at <= 20; at += 2 {
		upsert(at)
	}
	for c := range 13 {
		put(30, c)
	}
	for c := range 10 {
		put(40, c)
	}
	write(func(tx *txn.Tx) error { return tx.Delete("pairs", k, 40, 45) })
	put(46, 0) // a period asserted once and deleted: its one record is retired
	write(func(tx *txn.Tx) error { return tx.Delete("pairs", k, 46, 51) })
	for _, at := range []int64{50, 52, 54} {
		upsert(at)
	}
	for c := range 7 {
		put(30, 100+c)
	}
	w.checkVersionAt(t)
	if err := w.db.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	w.checkVersionAt(t)
}

// checkVersionAt compares VersionAt with the audit trail at every commit's
// transaction time and the instant before it, for every key and valid time.
func (w *scanWorld) checkVersionAt(t *testing.T) {
	t.Helper()
	s, err := w.db.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	recs := w.records(t, s)
	for ki, k := range w.keys {
		tuple := w.tuple(t, k)
		for _, commit := range w.txs {
			for _, tx := range []int64{commit - 1, commit} {
				live := alive(recs[ki], tx)
				for valid := int64(-1); valid <= 56; valid++ {
					want, wantReason := coveringAt(live, valid)
					got, reason, err := s.VersionAt(w.tb, tuple, valid, tx)
					if err != nil {
						t.Fatalf("%v valid %d tx %d: %v", k, valid, tx, err)
					}
					if reason != wantReason || reason == store.Found && !sameRecord(&got, &want) {
						t.Fatalf("%v valid %d tx %d: got %v %s, want %v %s\nalive: %s", k, valid, tx, reason, &got, wantReason, &want, render(live))
					}
				}
			}
		}
	}
}

// coveringAt is the version among live (a key's records alive at one
// transaction time) that covers valid, or the reason none does.
func coveringAt(live []store.Version, valid int64) (store.Version, store.MissReason) {
	var endedBefore, startsAfter bool
	for _, v := range live {
		if v.Covers(valid) {
			return v, store.Found
		}
		endedBefore = endedBefore || v.ValidFrom <= valid
		startsAfter = startsAfter || v.ValidFrom > valid
	}
	return store.Version{}, store.ClassifyMiss(endedBefore, startsAfter)
}

// sameRecord reports whether two versions are the same record: content and
// transaction period.
func sameRecord(a, b *store.Version) bool {
	return a.SameContent(b) && a.TxFrom == b.TxFrom && a.TxTo == b.TxTo && a.Key.String() == b.Key.String()
}

// KeyVersionAt reads what VersionAt reads for the key's encoding; the version
// it returns keeps its key and tuple when a later read reuses the snapshot's
// key buffer; a key of the wrong shape is ErrKeyShape.
func TestKeyVersionAtMatchesVersionAt(t *testing.T) {
	w := newScanWorld(t, 3, 40)
	s, err := w.db.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	type read struct {
		v     store.Version
		tuple []byte
	}
	var found []read
	for _, k := range w.keys {
		for _, tx := range []int64{w.txs[len(w.txs)/2], store.Infinity} {
			for valid := int64(-1); valid <= 56; valid += 3 {
				want, wantReason, err := s.VersionAt(w.tb, w.tuple(t, k), valid, tx)
				if err != nil {
					t.Fatal(err)
				}
				got, reason, err := s.KeyVersionAt(w.tb, k, valid, tx)
				if err != nil {
					t.Fatal(err)
				}
				if reason != wantReason || reason == store.Found && !sameRecord(&got, &want) {
					t.Fatalf("%v valid %d tx %d: got %v %s, want %v %s", k, valid, tx, reason, &got, wantReason, &want)
				}
				if reason == store.Found {
					found = append(found, read{got, w.tuple(t, k)})
				}
			}
		}
	}
	if len(found) == 0 {
		t.Fatal("no read found a version")
	}
	for _, r := range found {
		if !bytes.Equal(r.v.Tuple(), r.tuple) {
			t.Fatalf("version %v: tuple %x after later reads, want %x", &r.v, r.v.Tuple(), r.tuple)
		}
	}
	for _, bad := range []store.Key{{"g0"}, {"g0", "x"}, {int64(1), int64(1)}} {
		if _, _, err := s.KeyVersionAt(w.tb, bad, 0, store.Infinity); !errors.Is(err, store.ErrKeyShape) {
			t.Errorf("key %v: err %v, want ErrKeyShape", bad, err)
		}
	}
}
