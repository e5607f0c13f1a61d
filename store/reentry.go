package store

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/bitempo/bitempo/internal/callstack"
)

// writerLock serialises a store's writers (a write transaction, CreateTable,
// DeclareAttrNames, RawWrite, Close) and refuses a re-entrant call: one made
// from inside a write transaction's function (Writer.Run, which txn.Update uses)
// while this store's writer is held. Such a call would wait for the transaction
// it is part of, for ever, and block every later writer and Close.
//
// Detection costs nothing on the uncontended path: a call that finds the lock
// free takes it. A call that finds it held, by a transaction whose function is
// running, looks at its own call stack (runtime.Callers, only on this path)
// for Writer.Run's frame: if it is there, the call comes from inside a
// transaction function, so it is re-entrant and fails with ErrReentrant;
// otherwise it is another goroutine and waits.
//
// The one imprecision: a goroutine inside a transaction function of store A that
// writes to store B while another goroutine's transaction function holds B gets
// ErrReentrant rather than waiting (nested transactions on two stores, the shape
// of a lock-order deadlock); goroutine ids would be exact but cost too much
// per write transaction (docs/design/writer-reentry.md). A caller of
// BeginWrite that calls a writing method before Commit on the same goroutine,
// outside Writer.Run, still deadlocks.
type writerLock struct {
	mu   sync.Mutex
	inFn atomic.Bool // the holder is running a transaction function (Writer.Run)
}

// lock takes the writer lock, or returns an error wrapping ErrReentrant for a
// call from inside a transaction function while the lock is held. op names the
// call for the message.
func (l *writerLock) lock(op string) error {
	if l.mu.TryLock() {
		return nil
	}
	if l.inFn.Load() && inTransactionFunction() {
		return fmt.Errorf("%w: %s called inside a write transaction of the same store", ErrReentrant, op)
	}
	l.mu.Lock()
	return nil
}

func (l *writerLock) unlock() {
	l.inFn.Store(false)
	l.mu.Unlock()
}

// Run calls fn, a transaction's function, and returns its error. Writes and
// Close on the same store from inside fn fail with ErrReentrant instead of
// deadlocking (see writerLock). txn.Update runs its function through Run.
//
//go:noinline
func (w *Writer) Run(fn func() error) error {
	w.db.writer.inFn.Store(true)
	defer w.db.writer.inFn.Store(false)
	return fn()
}

// runName is the function name runtime.Callers reports for Writer.Run.
var runName = callstack.NameOf(func(inner func() error) { _ = (*Writer).Run(&Writer{db: &DB{}}, inner) })

// inTransactionFunction reports whether the calling goroutine is inside
// Writer.Run.
func inTransactionFunction() bool { return callstack.Has(runName()) }
