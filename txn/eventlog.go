package txn

import (
	"cmp"
	"slices"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/store"
)

// changesLog is a transaction's view of the event logs, batch ids and
// checkpoints of changes tables: the committed state (the writer's snapshot)
// overlaid with what earlier Apply calls of the same transaction wrote, so that
// several batches in one transaction see each other.
type changesLog struct {
	batches map[string]int64   // table id | batch id -> tx
	keys    map[string]*keyLog // table id | tuple
}

// changesState returns the transaction's changes-table overlay.
func (tx *Tx) changesState() *changesLog {
	if tx.cdc == nil {
		tx.cdc = &changesLog{batches: map[string]int64{}, keys: map[string]*keyLog{}}
	}
	return tx.cdc
}

func logKey(t *store.Table, suffix []byte) string {
	return string(append(encoding.AppendUint32(nil, t.ID), suffix...))
}

// batchTx returns the transaction that applied batch id, in this transaction or
// before it.
func (c *changesLog) batchTx(s *store.Snapshot, t *store.Table, id string) (int64, bool, error) {
	if tx, ok := c.batches[logKey(t, []byte(id))]; ok {
		return tx, true, nil
	}
	return s.BatchTx(t, id)
}

// keyLog returns the overlay of one key's event log.
func (c *changesLog) keyLog(t *store.Table, tuple []byte) *keyLog {
	k := logKey(t, tuple)
	l := c.keys[k]
	if l == nil {
		l = &keyLog{}
		c.keys[k] = l
	}
	return l
}

type evPos struct{ at, seq int64 }

func (a evPos) less(b evPos) bool { return a.at < b.at || (a.at == b.at && a.seq < b.seq) }

// keyLog is what the transaction wrote to one key's event log and checkpoint
// (the maps are created on first write; reading a nil map is fine).
type keyLog struct {
	puts  map[evPos]store.LogEvent
	dels  map[evPos]bool
	cp    store.Checkpoint
	cpSet bool
}

func (l *keyLog) put(e store.LogEvent) {
	p := evPos{e.At, e.Seq}
	if l.puts == nil {
		l.puts = map[evPos]store.LogEvent{}
	}
	l.puts[p] = e
	delete(l.dels, p)
}

func (l *keyLog) del(at, seq int64) {
	p := evPos{at, seq}
	if l.dels == nil {
		l.dels = map[evPos]bool{}
	}
	delete(l.puts, p)
	l.dels[p] = true
}

func (l *keyLog) setCheckpoint(cp store.Checkpoint) { l.cp, l.cpSet = cp, true }

func (l *keyLog) checkpoint(s *store.Snapshot, t *store.Table, tuple []byte) (store.Checkpoint, bool, error) {
	if l.cpSet {
		return l.cp, true, nil
	}
	return s.Checkpoint(t, tuple)
}

// lastBefore returns the key's event with the greatest (At, Seq) before (at, seq).
func (l *keyLog) lastBefore(s *store.Snapshot, t *store.Table, tuple []byte, at, seq int64) (store.LogEvent, bool, error) {
	var best store.LogEvent
	found := false
	bound := evPos{at, seq}
	for {
		e, ok, err := s.EventBefore(t, tuple, bound.at, bound.seq)
		if err != nil {
			return store.LogEvent{}, false, err
		}
		if !ok {
			break
		}
		p := evPos{e.At, e.Seq}
		if l.dels[p] {
			bound = p
			continue
		}
		if pe, ok := l.puts[p]; ok {
			e = pe
		}
		best, found = e, true
		break
	}
	limit := evPos{at, seq}
	for p, e := range l.puts {
		if p.less(limit) && (!found || (evPos{best.At, best.Seq}).less(p)) {
			best, found = e, true
		}
	}
	return best, found, nil
}

// read returns the key's events with lo <= at < hi in (at, seq) order.
func (l *keyLog) read(s *store.Snapshot, t *store.Table, tuple []byte, lo, hi int64) ([]store.CDCEvent, error) {
	var out []store.CDCEvent
	var seen map[evPos]bool
	for e, err := range s.KeyEvents(t, tuple, lo, store.NegInfinity) {
		if err != nil {
			return nil, err
		}
		if e.At >= hi {
			break
		}
		p := evPos{e.At, e.Seq}
		if l.dels[p] {
			continue
		}
		if pe, ok := l.puts[p]; ok {
			e = pe
			if seen == nil {
				seen = map[evPos]bool{}
			}
			seen[p] = true
		}
		out = append(out, store.LoggedEvent(e))
	}
	added := false
	for p, e := range l.puts {
		if !seen[p] && lo <= p.at && p.at < hi {
			out = append(out, store.LoggedEvent(e))
			added = true
		}
	}
	if added {
		slices.SortFunc(out, func(a, b store.CDCEvent) int {
			if a.At != b.At {
				return cmp.Compare(a.At, b.At)
			}
			return cmp.Compare(a.Seq, b.Seq)
		})
	}
	return out, nil
}
