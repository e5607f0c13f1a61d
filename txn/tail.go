package txn

import (
	"bytes"
	"slices"

	"github.com/bitempo/bitempo/store"
)

// Partial key states. Apply changes only the tail of a key's timeline (the
// versions from a batch's earliest granule on, and the two before it that the
// resume point looks at), so it loads only that tail: an event's cost does not
// grow with the key's history, neither in reads nor in the commit's diff, which
// compares only loaded versions. A partial state is completed before any other
// use of the key in the transaction (Tx.state), so reads see the whole timeline.

// tailBefore is how many versions before the batch's earliest granule Apply
// needs: the last one starting before it and the one that may end where it
// starts (see resume).
const tailBefore = 2

// stateTail returns the key's state holding at least every current version with
// ValidFrom >= from and tailBefore versions before from (or all of them).
func (tx *Tx) stateTail(t *store.Table, key store.Key, from int64) (*keyState, error) {
	if err := tx.encodeKey(t, key); err != nil {
		return nil, err
	}
	if err := tx.checkNotFlushed(string(tx.buf), t); err != nil {
		return nil, err
	}
	if ks, ok := tx.keys[string(tx.buf)]; ok {
		if ks.partial && countBefore(ks.cur, from) < tailBefore {
			return ks, tx.completeState(ks)
		}
		return ks, nil
	}
	tuple := bytes.Clone(tx.buf[4:])
	versions, complete, err := tx.w.KeyVersionsTail(t, tuple, from, tailBefore)
	if err != nil {
		return nil, err
	}
	ks := &keyState{table: t, key: slices.Clone(key), tuple: tuple, orig: versions, cur: slices.Clone(versions), partial: !complete}
	tx.keys[string(tx.buf)] = ks
	tx.order = append(tx.order, ks)
	return ks, nil
}

// countBefore returns how many of the sorted versions start before from.
func countBefore(vs []store.Version, from int64) int {
	n := 0
	for n < len(vs) && vs[n].ValidFrom < from {
		n++
	}
	return n
}

// completeState loads the versions a partial state lacks: those starting before
// its first loaded version, which no write of the transaction has touched.
func (tx *Tx) completeState(ks *keyState) error {
	if !ks.partial {
		return nil
	}
	all, err := tx.w.KeyVersions(ks.table, ks.tuple)
	if err != nil {
		return err
	}
	n := len(all)
	if len(ks.orig) > 0 {
		n = countBefore(all, ks.orig[0].ValidFrom)
	}
	ks.orig = append(slices.Clip(all[:n]), ks.orig...)
	ks.cur = append(slices.Clone(all[:n]), ks.cur...)
	ks.partial = false
	return nil
}
