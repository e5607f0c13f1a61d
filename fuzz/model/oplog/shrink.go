package oplog

import (
	"errors"
	"slices"
	"time"

	"github.com/bitempo/bitempo/store"
)

// RunFresh runs l on a fresh in-memory store with every check, and returns the
// first mismatch (a *Mismatch) or failure. Check points are drawn from seed.
func RunFresh(l Log, seed uint64, full bool) error {
	r := NewRunner(l.Tables, l.Keys, seed)
	r.Full = full
	db, err := store.Open("oplog", store.Options{InMemory: true, NoSync: true, Clock: r.Clock})
	if err != nil {
		return err
	}
	defer db.Close()
	if err := r.Attach(db, true); err != nil {
		return err
	}
	return r.Run(l)
}

// Shrink returns a shorter log on which fails still reports an error, found by
// greedy deletion within the time budget: first the transactions after the
// failing one, then runs of transactions of halving length, then single
// operations, then failure endings and attributes.
func Shrink(l Log, fails func(Log) error, budget time.Duration) Log {
	deadline := time.Now().Add(budget)
	try := func(c Log) bool {
		return time.Now().Before(deadline) && fails(c) != nil
	}
	var m *Mismatch
	if errors.As(fails(l), &m) && m.Txn+1 < len(l.Txns) {
		l.Txns = l.Txns[:m.Txn+1]
	}
	for n := len(l.Txns) / 2; n >= 1; n /= 2 {
		for i := 0; i+n <= len(l.Txns); {
			c := l
			c.Txns = slices.Concat(l.Txns[:i], l.Txns[i+n:])
			if try(c) {
				l = c
			} else {
				i += n
			}
		}
	}
	for i := 0; i < len(l.Txns); i++ {
		for j := 0; j < len(l.Txns[i].Ops); {
			c := l.withTxn(i, func(t *Txn) { t.Ops = slices.Delete(slices.Clone(t.Ops), j, j+1) })
			if len(c.Txns[i].Ops) > 0 && try(c) {
				l = c
			} else {
				j++
			}
		}
		if l.Txns[i].End != Commit {
			if c := l.withTxn(i, func(t *Txn) { t.End = Commit }); try(c) {
				l = c
			}
		}
	}
	for i := range l.Txns {
		for j := range l.Txns[i].Ops {
			for _, name := range attrNames {
				if _, ok := l.Txns[i].Ops[j].Attrs[name]; !ok {
					continue
				}
				c := l.withTxn(i, func(t *Txn) {
					t.Ops = slices.Clone(t.Ops)
					attrs := map[string]any{}
					for k, v := range t.Ops[j].Attrs {
						if k != name {
							attrs[k] = v
						}
					}
					t.Ops[j].Attrs = attrs
				})
				if try(c) {
					l = c
				}
			}
		}
	}
	return l
}

// withTxn returns a copy of l whose transaction i was changed by edit.
func (l Log) withTxn(i int, edit func(*Txn)) Log {
	l.Txns = slices.Clone(l.Txns)
	edit(&l.Txns[i])
	return l
}
