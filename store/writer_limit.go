package store

import (
	"fmt"

	"github.com/bitempo/bitempo/engine"
)

// This file makes a transaction on an engine that bounds one commit (etcd,
// engine.CommitLimiter) fail as soon as its writes pass the bound, rather than
// at Commit after the whole transaction was built in memory: a transaction
// that cannot commit then costs at most the bound's memory, and a streamed
// load stops at the first key past it. Nothing is written either way.
//
// The Writer counts what the engine will send at least: one operation per
// distinct key (the engine keeps the last write of a key) and the bytes of
// that write's key and value. The engine adds its own framing and meta keys,
// so a transaction just under the count can still be refused at Commit by the
// engine's exact check (the same ErrCommitTooLarge); the count never refuses
// one the engine would take.

// commitBound is a Writer's count of its writes against the engine's bound.
type commitBound struct {
	engine              string
	source              string // " (where the bound comes from)" (engine.LimitSource), or ""
	maxWrites, maxBytes int
	// sizes holds the bytes of the last write of each distinct key counted.
	sizes   map[string]int
	bytes   int
	checked [3]int // writes of retires, asserts and other counted so far
	err     error  // set once the bound is passed: the transaction cannot commit
}

// newCommitBound returns the bound of db's engine, or nil if it has none.
func newCommitBound(db *DB) *commitBound {
	cl, ok := db.engine.(engine.CommitLimiter)
	if !ok {
		return nil
	}
	maxWrites, maxBytes := cl.CommitLimits()
	b := &commitBound{engine: db.engine.Name(), maxWrites: maxWrites, maxBytes: maxBytes, sizes: map[string]int{}}
	if ls, ok := db.engine.(engine.LimitSource); ok {
		b.source = " (" + ls.SourceOfLimits() + ")"
	}
	return b
}

// checkBound counts the writes added since the last call and fails with an
// error wrapping ErrCommitTooLarge once they pass the engine's bound; after
// that every call fails with the same error. Without a bound it does nothing.
func (w *Writer) checkBound() error {
	b := w.bound
	if b == nil || b.err != nil {
		return b.errOrNil()
	}
	for i, ws := range [3][]engine.Write{w.retires, w.asserts, w.other} {
		for _, x := range ws[b.checked[i]:] {
			b.count(x.Key, len(x.Key)+len(x.Value)+len(x.RangeEnd))
		}
		b.checked[i] = len(ws)
	}
	if len(b.sizes) > b.maxWrites || b.bytes > b.maxBytes {
		b.err = fmt.Errorf("%w: the transaction has passed %d writes of %d bytes, and one commit of the %s engine holds at most %d writes and %d bytes%s; "+
			"nothing was written: commit it as several smaller transactions (bitempo load: --batch-size N)",
			ErrCommitTooLarge, len(b.sizes), b.bytes, b.engine, b.maxWrites, b.maxBytes, b.source)
	}
	return b.err
}

// count records size bytes as the last write of key.
func (b *commitBound) count(key []byte, size int) {
	b.bytes += size - b.sizes[string(key)]
	b.sizes[string(key)] = size
}

// recount corrects the count of retire write i, whose value the transaction
// replaced in place (shareAttrs), if it was counted already. (A retire's
// history key is written once per transaction, so it is still that key's last
// write.)
func (b *commitBound) recount(w engine.Write, i int) {
	if b != nil && i < b.checked[0] && b.err == nil {
		b.count(w.Key, len(w.Key)+len(w.Value))
	}
}

func (b *commitBound) errOrNil() error {
	if b == nil {
		return nil
	}
	return b.err
}
