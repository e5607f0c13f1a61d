package etcd

import (
	"bytes"
	"context"
	"errors"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// stream is the rest of an iterator's range, read forwards by one RangeStream
// request at the view's revision (etcd v3.7 and later): the member sends the
// range in chunks, each read without counting the keys after it (a unary
// range request counts every key to its end), and gRPC's flow control holds
// it while the iterator has not taken the chunks it sent. An iterator whose
// Next, or forward seek, leaves a page it did not reach by a seek of one
// engine prefix takes the next page from its stream
// (docs/design/etcd-scan-streams.md).
type stream struct {
	ch     clientv3.GetStreamChan
	cancel context.CancelFunc
	// from is the store key the stream's next chunk starts at or after: the
	// key after the last one it delivered.
	from []byte
	// got says a chunk arrived: a stream that fails before its first chunk
	// may be replaced by unary pages.
	got bool
}

// close ends the stream's request and lets its receiving goroutine finish.
func (s *stream) close() {
	s.cancel()
	go func(ch clientv3.GetStreamChan) {
		for range ch {
		}
	}(s.ch)
}

// errStreamEnd says a stream delivered its last chunk.
var errStreamEnd = errors.New("end of stream")

// recv returns the next chunk that holds keys, errStreamEnd after the last,
// or the stream's error. It waits at most timeout for each chunk.
func (s *stream) recv(timeout time.Duration) (*clientv3.RangeStreamResponse, error) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		select {
		case r, open := <-s.ch:
			switch {
			case !open:
				return nil, errStreamEnd
			case r.Err() != nil:
				return nil, r.Err()
			case len(r.Kvs) > 0:
				s.got = true
				return &r, nil
			}
		case <-timer.C:
			return nil, context.DeadlineExceeded
		}
	}
}

// unsupported reports whether err says the member cannot serve the stream as
// asked: a cluster older than RangeStream, or a member that has not applied
// the view's revision yet (a serializable read; unary pages then retry it
// linearizably).
func unsupported(err error) bool {
	return status.Code(err) == codes.Unimplemented || errors.Is(err, rpctypes.ErrFutureRev)
}

// dropStream ends the iterator's stream, if it has one.
func (it *iter) dropStream() {
	if it.st != nil {
		it.st.close()
		it.st = nil
	}
}

// streamNext makes the next page the stream's next chunk, opening the stream
// at after (the key after the page's last) if the iterator has none there. It
// returns handled false when the cluster cannot stream, for Next to read a
// unary page instead.
func (it *iter) streamNext(after []byte) (ok, handled bool) {
	if it.st != nil && !bytes.Equal(it.st.from, after) {
		it.dropStream()
	}
	return it.streamTo(after)
}

// streamSeek moves a forward seek past the page to key through the stream: it
// takes the stream's chunks until one reaches key, skipping at most
// maxSkippedChunks, and otherwise streams again from key. Without a stream it
// opens one at key when the page it leaves was itself reached by a forward
// seek past a page (it.scanning): a scan that seeks from key to key; a first
// such seek reads a unary page, as a lookup does.
func (it *iter) streamSeek(key []byte) (ok, handled bool) {
	if it.st == nil && !it.scanning {
		return false, false
	}
	return it.streamTo(key)
}

// maxSkippedChunks is how many chunks a seek through the stream passes over
// before it streams again from its key: a chunk is up to the member's
// --max-request-bytes, and a new stream costs one request.
const maxSkippedChunks = 1

// streamTo positions the iterator at the first key >= key (which lies past
// the page) through the stream, opening one at key if it has none.
func (it *iter) streamTo(key []byte) (ok, handled bool) {
	e := it.v.e
	if e.noStreams.Load() {
		return false, false
	}
	for skipped := 0; ; skipped++ {
		if it.st != nil && skipped > maxSkippedChunks {
			it.dropStream()
		}
		if it.st == nil && !it.openStream(key) {
			return false, false
		}
		r, err := it.st.recv(e.cfg.RequestTimeout)
		switch {
		case errors.Is(err, errStreamEnd):
			// Nothing from key to the upper bound. The page's run reaches
			// the bound only if the stream began right after the page.
			if len(it.page) > 0 && bytes.Equal(it.st.from, append(bytes.Clone(it.page[len(it.page)-1].Key[len(e.data):]), 0)) {
				it.hiDone, it.pos = true, len(it.page)
			} else {
				it.page, it.pos = nil, -1
				it.loDone, it.hiDone = false, false
			}
			it.dropStream()
			return false, true
		case err != nil && !it.st.got && unsupported(err):
			if status.Code(err) == codes.Unimplemented {
				e.noStreams.Store(true)
			}
			it.dropStream()
			return false, false
		case err != nil:
			it.dropStream()
			it.err = e.rpcErr("read", err)
			return false, true
		}
		it.page = r.Kvs
		it.loDone, it.hiDone = false, false
		last := it.page[len(it.page)-1].Key[len(e.data):]
		it.st.from = append(bytes.Clone(last), 0)
		if bytes.Compare(last, key) >= 0 {
			it.pos = it.search(key)
			return true, true
		}
	}
}

// openStream opens a stream of the range from key to the upper bound. It
// returns false if the range is empty or the request could not be made.
func (it *iter) openStream(key []byte) bool {
	e := it.v.e
	lo, hi := e.etcdKey(key), e.rangeEnd(it.upper)
	if lo >= hi {
		return false
	}
	ctx, cancel := context.WithCancel(context.Background())
	ch, err := e.cli.GetStream(ctx, lo, clientv3.WithRange(hi), clientv3.WithRev(it.v.rev), clientv3.WithSerializable())
	if err != nil {
		cancel()
		if status.Code(err) == codes.Unimplemented {
			e.noStreams.Store(true)
		}
		return false
	}
	it.st = &stream{ch: ch, cancel: cancel, from: bytes.Clone(key)}
	return true
}
