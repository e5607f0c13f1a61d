package etcd_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/engine"
	"github.com/bitempo/bitempo/etcd"
	"github.com/bitempo/bitempo/layout"
	"github.com/bitempo/bitempo/store"
)

// newEngine returns an engine on testCluster under a prefix of the test's own.
func newEngine(t *testing.T, page int) *etcd.Engine {
	t.Helper()
	e, err := etcd.NewEngine(context.Background(), etcd.Config{
		Endpoints: testCluster.Endpoints(), Prefix: "/test/" + t.Name(), PageSize: page,
		MaxTxnOps: testMaxTxnOps, MaxRequestBytes: testMaxRequestBytes,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	return e
}

func commit(t *testing.T, e *etcd.Engine, ws ...engine.Write) {
	t.Helper()
	unlock, err := e.LockWrites(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	if err := e.Commit(ws, true); err != nil {
		t.Fatal(err)
	}
}

// TestIterMatchesModel drives the paging iterator with random positioning
// calls over a random key set, with pages of 2 and 3 keys so that every move
// crosses pages, and compares every step with a sorted slice.
func TestIterMatchesModel(t *testing.T) {
	for _, page := range []int{2, 3, 1000} {
		t.Run(fmt.Sprint("page", page), func(t *testing.T) {
			e := newEngine(t, page)
			rng := rand.New(rand.NewPCG(uint64(page), 1))
			var keys [][]byte
			var ws []engine.Write
			for i := range 40 {
				k := []byte{byte(rng.IntN(4)), byte(rng.IntN(256)), byte(i)}
				keys = append(keys, k)
				ws = append(ws, engine.Write{Key: k, Value: append([]byte("v"), k...)})
			}
			commit(t, e, ws...)
			sort.Slice(keys, func(i, j int) bool { return bytes.Compare(keys[i], keys[j]) < 0 })
			v, err := e.View()
			if err != nil {
				t.Fatal(err)
			}
			defer v.Close()
			// A later commit must not show in the view.
			commit(t, e, engine.Write{Key: []byte{1, 1, 200}, Value: []byte("later")}, engine.Write{Key: keys[0], Delete: true})
			lower, upper := []byte{1}, []byte{3}
			var in [][]byte
			for _, k := range keys {
				if bytes.Compare(k, lower) >= 0 && bytes.Compare(k, upper) < 0 {
					in = append(in, k)
				}
			}
			it, err := v.NewIter(lower, upper)
			if err != nil {
				t.Fatal(err)
			}
			defer it.Close()
			pos := -1 // model position in in; -1 or len: invalid
			// confined is the end of the engine prefix the last SeekPrefixGE
			// sought, nil after any other positioning call: the engine may
			// stop at it (Pebble does), so a move that would land at or past
			// it may also end the iteration; and no Prev follows.
			var confined []byte
			for step := range 400 {
				var ok bool
				var what string
				prefixOp := false
				switch op := rng.IntN(7); op {
				case 0:
					ok, what, pos = it.First(), "First", 0
				case 1:
					ok, what, pos = it.Last(), "Last", len(in)-1
				case 2, 3:
					if pos < 0 || pos >= len(in) || (op == 3 && confined != nil) {
						continue
					}
					if op == 2 {
						ok, what, pos = it.Next(), "Next", pos+1
						prefixOp = confined != nil
					} else {
						ok, what, pos = it.Prev(), "Prev", pos-1
					}
				case 4, 5:
					k := []byte{byte(rng.IntN(5)), byte(rng.IntN(256))}
					i := sort.Search(len(in), func(i int) bool { return bytes.Compare(in[i], k) >= 0 })
					if op == 4 {
						ok, what, pos = it.SeekGE(k), fmt.Sprintf("SeekGE(%x)", k), i
					} else {
						ok, what, pos = it.SeekLT(k), fmt.Sprintf("SeekLT(%x)", k), i-1
					}
				case 6:
					k := []byte{byte(rng.IntN(5)), byte(rng.IntN(256)), byte(rng.IntN(256))}[:1+rng.IntN(3)]
					i := sort.Search(len(in), func(i int) bool { return bytes.Compare(in[i], k) >= 0 })
					ok, what, pos = it.SeekPrefixGE(k), fmt.Sprintf("SeekPrefixGE(%x)", k), i
					confined, prefixOp = encoding.PrefixEnd(k[:layout.Split(k)]), true
				}
				if !prefixOp {
					confined = nil
				}
				want := pos >= 0 && pos < len(in)
				if prefixOp && !ok && want && (confined == nil || bytes.Compare(in[pos], confined) < 0) {
					t.Fatalf("step %d %s: ended inside the sought prefix, before %x", step, what, in[pos])
				}
				if prefixOp && !ok {
					pos = -1 // stopped at the prefix's end
					continue
				}
				if ok != want || it.Valid() != want {
					t.Fatalf("step %d %s: ok %v valid %v, want %v", step, what, ok, it.Valid(), want)
				}
				if want && (!bytes.Equal(it.Key(), in[pos]) || !bytes.Equal(it.Value(), append([]byte("v"), in[pos]...))) {
					t.Fatalf("step %d %s: at %x=%q, want %x", step, what, it.Key(), it.Value(), in[pos])
				}
			}
			if err := it.Error(); err != nil {
				t.Fatal(err)
			}
			if _, ok, err := v.Get([]byte{1, 1, 200}); ok || err != nil {
				t.Fatalf("view shows a later commit: %v %v", ok, err)
			}
			if got, ok, err := v.Get(keys[0]); !ok || err != nil || !bytes.Equal(got, append([]byte("v"), keys[0]...)) {
				t.Fatalf("view lost a key deleted later: %q %v %v", got, ok, err)
			}
		})
	}
}

// TestSeekPastTheEndKeepsTheGap: a scan's forward seek that streams from its
// key and finds nothing after it says nothing of the keys between the page it
// left and that key; a seek back into them finds them.
func TestSeekPastTheEndKeepsTheGap(t *testing.T) {
	e := newEngine(t, 2)
	var ws []engine.Write
	for i := range 10 {
		ws = append(ws, engine.Write{Key: []byte{1, byte(10 * i)}, Value: []byte{byte(i)}})
	}
	commit(t, e, ws...)
	v, err := e.View()
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	it, err := v.NewIter([]byte{1}, []byte{2})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	for _, seek := range []struct {
		key  []byte
		want []byte // nil: no key at or after it
	}{
		{[]byte{1, 0}, []byte{1, 0}},
		{[]byte{1, 50}, []byte{1, 50}}, // past the page: a page of its own
		{[]byte{1, 255}, nil},          // past it again: a stream from 1,255 on
		{[]byte{1, 70}, []byte{1, 70}}, // between that page and the stream's start
	} {
		ok := it.SeekGE(seek.key)
		var at []byte
		if ok {
			at = it.Key()
		}
		if ok != (seek.want != nil) || !bytes.Equal(at, seek.want) {
			t.Fatalf("SeekGE(%x): ok %v at %x, want %x", seek.key, ok, at, seek.want)
		}
	}
	if err := it.Error(); err != nil {
		t.Fatal(err)
	}
}

// TestCommitTooLarge: a commit over the cluster's limits fails before writing,
// naming both limits; one exactly at them commits.
func TestCommitTooLarge(t *testing.T) {
	e := newEngine(t, 0)
	maxW, maxB := e.CommitLimits()
	if maxW != testMaxTxnOps-1 || maxB >= testMaxRequestBytes {
		t.Fatalf("limits %d %d", maxW, maxB)
	}
	var ws []engine.Write
	for i := range maxW + 1 {
		ws = append(ws, engine.Write{Key: fmt.Appendf(nil, "k%05d", i), Value: []byte("x")})
	}
	unlock, err := e.LockWrites(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	err = e.Commit(ws, true)
	if !errors.Is(err, store.ErrCommitTooLarge) || !bytes.Contains([]byte(err.Error()), fmt.Appendf(nil, "--max-txn-ops %d", testMaxTxnOps)) ||
		!bytes.Contains([]byte(err.Error()), fmt.Appendf(nil, "--max-request-bytes %d", testMaxRequestBytes)) {
		t.Fatalf("commit of %d writes: %v", len(ws), err)
	}
	big := []engine.Write{{Key: []byte("big"), Value: make([]byte, testMaxRequestBytes)}}
	if err := e.Commit(big, true); !errors.Is(err, store.ErrCommitTooLarge) {
		t.Fatalf("commit of %d bytes: %v", testMaxRequestBytes, err)
	}
	if err := e.Commit(ws[:maxW], true); err != nil {
		t.Fatalf("commit of %d writes: %v", maxW, err)
	}
	unlock()
	v, err := e.View()
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	if _, ok, _ := v.Get(ws[maxW].Key); ok {
		t.Fatal("the refused commit wrote")
	}
	if _, ok, _ := v.Get([]byte("big")); ok {
		t.Fatal("the refused commit wrote")
	}
}

// TestCommitDedupes: a commit that writes one key twice, or deletes and sets
// it, or range-deletes, keeps the last write as Pebble's batch does.
func TestCommitDedupes(t *testing.T) {
	e := newEngine(t, 0)
	commit(t, e, engine.Write{Key: []byte("a"), Value: []byte("1")}, engine.Write{Key: []byte("b"), Value: []byte("1")},
		engine.Write{Key: []byte("c1"), Value: []byte("1")}, engine.Write{Key: []byte("c2"), Value: []byte("1")})
	commit(t, e, engine.Write{Key: []byte("a"), Delete: true}, engine.Write{Key: []byte("a"), Value: []byte("2")},
		engine.Write{Key: []byte("b"), Value: []byte("2")}, engine.Write{Key: []byte("b"), Delete: true},
		engine.Write{Key: []byte("c1"), Value: []byte("3")}, engine.Write{Key: []byte("c"), RangeEnd: []byte("d")})
	v, err := e.View()
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	it, _ := v.NewIter(nil, nil)
	defer it.Close()
	var got []string
	for ok := it.First(); ok; ok = it.Next() {
		got = append(got, string(it.Key())+"="+string(it.Value()))
	}
	if want := []string{"a=2"}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

// TestFutureRevisionRefused reads at a revision no member has applied. The
// view's reads are serializable first, answered by one member from its own
// state; a member must refuse a revision it has not reached rather than answer
// from older state, so the read fails (after the linearizable retry) instead of
// returning nothing.
func TestFutureRevisionRefused(t *testing.T) {
	e := newEngine(t, 4)
	commit(t, e, engine.Write{Key: []byte("k1"), Value: []byte("v1")})
	v, err := e.View()
	if err != nil {
		t.Fatal(err)
	}
	if got, ok, err := v.Get([]byte("k1")); err != nil || !ok || string(got) != "v1" {
		t.Fatalf("Get at the view's revision: %q %v %v", got, ok, err)
	}
	future := etcd.ViewAtRevision(e, etcd.Revision(v)+1_000_000)
	if got, ok, err := future.Get([]byte("k1")); err == nil || !strings.Contains(err.Error(), "future revision") {
		t.Fatalf("Get at a future revision answered %q %v %v, want the members' refusal", got, ok, err)
	}
	it, err := future.NewIter(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if it.First() || it.Error() == nil {
		t.Fatalf("First at a future revision: positioned or no error (%v)", it.Error())
	}
	_ = it.Close()
}
