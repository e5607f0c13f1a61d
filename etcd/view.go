package etcd

import (
	"bytes"
	"errors"
	"slices"
	"sort"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/engine"
	"github.com/bitempo/bitempo/layout"
)

// view is a engine.View at one etcd revision. It implements
// engine.GenerationView.
type view struct {
	e   *Engine
	rev int64
	gen int64
}

func (v *view) Generation() int64 { return v.gen }

func (v *view) Close() error { return nil }

// Get implements engine.View with one read at the view's revision, or none
// when the engine's point cache holds the key at the view's generation.
func (v *view) Get(key []byte) ([]byte, bool, error) {
	if p, ok := v.e.cachedPoint(v.gen, key); ok {
		return bytes.Clone(p.value), p.found, nil
	}
	resp, err := v.read(v.e.etcdKey(key))
	if err != nil {
		return nil, false, v.e.rpcErr("read", err)
	}
	var p point
	if len(resp.Kvs) > 0 {
		p = point{value: resp.Kvs[0].Value, found: true}
	}
	v.e.rememberPoint(v.gen, key, p)
	return p.value, p.found, nil
}

// read runs one range request at the view's revision, serializable first: the
// member the client talks to answers from the state it has applied, without a
// round to the leader. That is safe because the state at a fixed revision
// never changes, and a member that has not yet applied v.rev refuses with
// ErrFutureRev instead of answering from older state; the request is then
// repeated linearizably, which waits until the member has caught up. The
// view's own first read (Engine.View) stays linearizable: it is what makes the
// revision the newest committed one (docs/design/etcd-serializable-reads.md).
func (v *view) read(key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	ctx, cancel := v.e.ctx()
	defer cancel()
	opts = append(opts, clientv3.WithRev(v.rev))
	serializable := append(slices.Clip(opts), clientv3.WithSerializable())
	resp, err := v.e.cli.Get(ctx, key, serializable...)
	if errors.Is(err, rpctypes.ErrFutureRev) {
		resp, err = v.e.cli.Get(ctx, key, opts...)
	}
	return resp, err
}

// NewIter implements engine.View.
func (v *view) NewIter(lower, upper []byte) (engine.Iter, error) {
	it := &iter{v: v}
	it.SetBounds(lower, upper)
	return it, nil
}

// iter is a engine.Iter that reads its range a page at a time at the view's
// revision. page holds a contiguous run of the range's keys in ascending
// order: every key of the range between page[0] and page[len-1] is in it, so
// a seek to a key inside that run needs no request. loDone and hiDone say the
// run reaches the range's lower or upper end.
type iter struct {
	v            *view
	lower, upper []byte
	page         []*mvccpb.KeyValue
	loDone       bool
	hiDone       bool
	pos          int // index into page; -1 or len(page): not positioned
	err          error
	// limit is how many keys the next continuation page reads: a seek reads
	// firstPage keys (a point read wants one or two), and each page that
	// continues in the same direction reads twice as many as the last, up to
	// Config.PageSize, so a point lookup never transfers a whole page.
	limit int
	// prefixEnd, when set, confines the page and the moves after it to the
	// keys below it: SeekPrefixGE sets it to the end of its key's engine
	// prefix (layout.Split), which every positioning call but Next clears.
	prefixEnd []byte
	// st streams the pages after the current one to a Next or a forward
	// seek that leaves it (stream.go); every request for a page of its own
	// ends it. scanning says the page was read by a forward seek past the
	// page before it.
	st       *stream
	scanning bool
}

// firstPage is how many keys a seek reads: a balance between point lookups,
// which want few, and scans, which skip to the next key within the page
// (docs/design/etcd-iterator-pages.md).
const firstPage = 64

func (it *iter) SetBounds(lower, upper []byte) {
	it.dropStream()
	it.lower, it.upper = bytes.Clone(lower), bytes.Clone(upper)
	it.page, it.pos = nil, -1
	it.loDone, it.hiDone = false, false
	it.prefixEnd = nil
}

// widen drops a page read confined to one engine prefix: its run ends at the
// prefix's end, not at the range's.
func (it *iter) widen() {
	if it.prefixEnd != nil {
		it.dropStream()
		it.prefixEnd, it.page, it.pos = nil, nil, -1
		it.loDone, it.hiDone = false, false
	}
}

func (it *iter) Valid() bool { return it.err == nil && it.pos >= 0 && it.pos < len(it.page) }
func (it *iter) Key() []byte { return it.page[it.pos].Key[len(it.v.e.data):] }
func (it *iter) Value() []byte {
	return it.page[it.pos].Value
}
func (it *iter) Error() error { return it.err }
func (it *iter) Close() error { it.dropStream(); it.page = nil; return it.err }

// fetch reads one page: ascending from from (inclusive), or descending below
// to (exclusive), within the bounds.
func (it *iter) fetch(from, to []byte, descend bool) bool {
	return it.fetchN(from, to, descend, min(firstPage, it.v.e.cfg.PageSize))
}

// next reads the page that continues the current one, twice as large.
func (it *iter) next(from, to []byte, descend bool) bool {
	return it.fetchN(from, to, descend, min(2*it.limit, it.v.e.cfg.PageSize))
}

func (it *iter) fetchN(from, to []byte, descend bool, limit int) bool {
	it.dropStream()
	it.scanning = false
	it.limit = limit
	e := it.v.e
	lo := e.etcdKey(it.lower)
	if it.lower == nil {
		lo = e.data
	}
	hi := e.rangeEnd(it.upper)
	if from != nil && (it.lower == nil || bytes.Compare(from, it.lower) > 0) {
		lo = e.etcdKey(from)
	}
	if to != nil && (it.upper == nil || bytes.Compare(to, it.upper) < 0) {
		hi = e.etcdKey(to)
	}
	if it.prefixEnd != nil && hi > e.etcdKey(it.prefixEnd) {
		hi = e.etcdKey(it.prefixEnd)
	}
	it.page, it.pos = nil, -1
	if lo >= hi {
		it.loDone, it.hiDone = true, true
		return false
	}
	if !descend {
		resp, err := it.v.read(lo, clientv3.WithRange(hi), clientv3.WithLimit(int64(limit)), clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend))
		if err != nil {
			it.err = e.rpcErr("read", err)
			return false
		}
		it.page = resp.Kvs
		it.loDone, it.hiDone = from == nil, !resp.More
		return len(it.page) > 0
	}
	// etcd reads a descending range whole, whatever the limit, before it
	// sorts and cuts it (only ascending key order stops at the limit). So a
	// descending page reads first below to within to's engine prefix, where
	// a store's backward step almost always lands (the version before, of
	// the same key), or, for a to that is all prefix (the end of one key's
	// versions, encoding.PrefixEnd), within the keys that share all of to
	// but its last byte; and the whole range below only if that holds
	// nothing. Any start below to is correct: the keys of [start, to) are
	// the greatest below to if there are any.
	if to != nil {
		n := layout.Split(to)
		if n == len(to) && n > 0 {
			n--
		}
		if start := e.etcdKey(to[:n]); start > lo && start < hi {
			if !it.fetchDesc(start, hi, limit, false) {
				return false
			}
			if len(it.page) > 0 {
				return true
			}
			hi = start
		}
	}
	if !it.fetchDesc(lo, hi, limit, true) {
		return false
	}
	it.hiDone = to == nil
	return len(it.page) > 0
}

// fetchDesc reads the page of the last limit keys of [lo, hi), in ascending
// order; whole says lo is the range's lower end. It returns false on an error.
func (it *iter) fetchDesc(lo, hi string, limit int, whole bool) bool {
	resp, err := it.v.read(lo, clientv3.WithRange(hi), clientv3.WithLimit(int64(limit)), clientv3.WithSort(clientv3.SortByKey, clientv3.SortDescend))
	if err != nil {
		it.err = it.v.e.rpcErr("read", err)
		return false
	}
	it.page = resp.Kvs
	for i, j := 0, len(it.page)-1; i < j; i, j = i+1, j-1 {
		it.page[i], it.page[j] = it.page[j], it.page[i]
	}
	it.loDone, it.hiDone = whole && !resp.More, false
	return true
}

func (it *iter) First() bool {
	it.widen()
	if !it.fetch(nil, nil, false) {
		return false
	}
	it.pos = 0
	return true
}

func (it *iter) Last() bool {
	it.widen()
	if !it.fetch(nil, nil, true) {
		return false
	}
	it.pos = len(it.page) - 1
	return true
}

func (it *iter) Next() bool {
	if !it.Valid() {
		return false
	}
	if it.pos+1 < len(it.page) {
		it.pos++
		return true
	}
	if it.hiDone {
		it.pos = len(it.page)
		return false
	}
	after := append(bytes.Clone(it.Key()), 0)
	if it.prefixEnd == nil {
		if ok, handled := it.streamNext(after); handled {
			return ok
		}
	}
	if !it.next(after, nil, false) {
		return false
	}
	it.pos = 0
	return true
}

func (it *iter) Prev() bool {
	if !it.Valid() {
		return false
	}
	if it.pos > 0 {
		it.pos--
		return true
	}
	if it.loDone {
		it.pos = -1
		return false
	}
	if !it.next(nil, bytes.Clone(it.Key()), true) {
		return false
	}
	it.pos = len(it.page) - 1
	return true
}

// search returns the index of the first key of the page >= key.
func (it *iter) search(key []byte) int {
	n := len(it.v.e.data)
	return sort.Search(len(it.page), func(i int) bool { return bytes.Compare(it.page[i].Key[n:], key) >= 0 })
}

// SeekGE seeks within the page when the page's run holds key's place.
func (it *iter) SeekGE(key []byte) bool {
	if it.err != nil {
		return false
	}
	it.widen()
	return it.seekGE(key)
}

func (it *iter) seekGE(key []byte) bool {
	if it.lower != nil && bytes.Compare(key, it.lower) < 0 {
		key = it.lower
	}
	forward := false // key lies past the page
	if len(it.page) > 0 {
		n := len(it.v.e.data)
		first, last := it.page[0].Key[n:], it.page[len(it.page)-1].Key[n:]
		if (bytes.Compare(key, first) >= 0 || it.loDone) && bytes.Compare(key, last) <= 0 {
			it.pos = it.search(key)
			return true
		}
		if it.hiDone && bytes.Compare(key, last) > 0 {
			it.pos = len(it.page)
			return false
		}
		forward = bytes.Compare(key, last) > 0 && it.prefixEnd == nil
	}
	if forward {
		if ok, handled := it.streamSeek(key); handled {
			return ok
		}
	}
	if !it.fetch(key, nil, false) {
		return false
	}
	it.scanning = forward
	it.pos = 0
	return true
}

// SeekPrefixGE implements engine.Iter as a SeekGE confined to key's engine
// prefix (layout.Split): etcd counts every key from a range request's start to
// its end, so a seek bounded only by the keyspace costs as many steps as the
// keyspace has keys after it. A page the iterator holds that already covers
// key answers without a request.
func (it *iter) SeekPrefixGE(key []byte) bool {
	if it.err != nil {
		return false
	}
	end := encoding.PrefixEnd(key[:layout.Split(key)])
	if it.prefixEnd != nil && !bytes.Equal(end, it.prefixEnd) {
		it.widen()
	}
	if it.prefixEnd == nil && len(it.page) > 0 && it.covers(key) {
		return it.seekGE(key)
	}
	if end != nil {
		if it.prefixEnd == nil {
			it.page, it.pos = nil, -1
		}
		it.prefixEnd = end
	}
	return it.seekGE(key)
}

// covers reports whether the page's run holds key's place in the range.
func (it *iter) covers(key []byte) bool {
	n := len(it.v.e.data)
	first, last := it.page[0].Key[n:], it.page[len(it.page)-1].Key[n:]
	return (bytes.Compare(key, first) >= 0 || it.loDone) && bytes.Compare(key, last) <= 0
}

func (it *iter) SeekLT(key []byte) bool {
	if it.err != nil {
		return false
	}
	it.widen()
	if it.upper != nil && bytes.Compare(key, it.upper) > 0 {
		key = it.upper
	}
	if len(it.page) > 0 {
		n := len(it.v.e.data)
		first, last := it.page[0].Key[n:], it.page[len(it.page)-1].Key[n:]
		if bytes.Compare(key, first) > 0 && (bytes.Compare(key, last) <= 0 || it.hiDone) {
			it.pos = it.search(key) - 1
			return true
		}
		if it.loDone && bytes.Compare(key, first) <= 0 {
			it.pos = -1
			return false
		}
	}
	if !it.fetch(nil, key, true) {
		return false
	}
	it.pos = len(it.page) - 1
	return true
}
