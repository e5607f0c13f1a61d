package store

import (
	"bytes"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
)

// writerLock serialises a store's writers (a write transaction, CreateTable,
// DeclareAttrNames, RawWrite, Close) and refuses a re-entrant call: one made
// from inside a write transaction of the same store on the goroutine that holds
// the transaction. Such a call waits for its own transaction to end, which
// never happens; it used to deadlock and block every later writer and Close.
//
// It remembers the holder's goroutine id, read from runtime.Stack's header
// ("goroutine N [running]"), which costs about a microsecond per acquisition,
// nothing next to a commit. Rejected: a "writer held" flag on the DB (it cannot
// tell the holder from a concurrent goroutine that must simply wait), and a
// context value marking the transaction (every call on the DB would need a
// context parameter to carry it). A transaction that starts a goroutine which
// writes to the same store, and waits for it, still deadlocks: that goroutine
// is a genuine second writer.
type writerLock struct {
	mu     sync.Mutex
	holder atomic.Int64 // goroutine id of the holder; 0 while free
}

// lock takes the writer lock, or returns an error wrapping ErrReentrant if the
// calling goroutine holds it already. op names the call for the message.
func (l *writerLock) lock(op string) error {
	g := goroutineID()
	if l.holder.Load() == g {
		return fmt.Errorf("%w: %s called inside a write transaction of the same store", ErrReentrant, op)
	}
	l.mu.Lock()
	l.holder.Store(g)
	return nil
}

func (l *writerLock) unlock() {
	l.holder.Store(0)
	l.mu.Unlock()
}

// goroutineID returns the id of the calling goroutine (never 0).
func goroutineID() int64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	if i := bytes.IndexByte(b, ' '); i > 0 {
		if id, err := strconv.ParseInt(string(b[:i]), 10, 64); err == nil {
			return id
		}
	}
	return -1 // unreachable; -1 never matches a holder, so no false refusal
}
