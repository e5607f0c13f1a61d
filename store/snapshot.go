package store

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"slices"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/engine"
	"github.com/bitempo/bitempo/layout"
)

// Snapshot is a consistent, read-only view of the store as of the moment it was
// taken. Reads through it never block the writer and see no later commit. It caches
// iterators, so it is meant for one goroutine; Close releases it.
type Snapshot struct {
	db     *DB
	view   engine.View
	lastTx int64
	iters  map[byte]engine.Iter // one reusable iterator per keyspace
	names  map[uint32]*attrNames
	buf    []byte
	kbuf   []byte   // the tuple of KeyVersionAt and KeyRowAt
	point  pointRow // the row KeyRowAt fills (lookuprow.go)
	closed bool
	// horizons caches each table's retention horizon in this view (vacuum.go).
	horizons map[uint32]int64
	walk     historyWalk // reused by every read at a past transaction time
	// commitPage holds the times of commit numbers from commitBase on, the
	// page of the store's cache (commits.go) this snapshot read last.
	commitBase uint64
	commitPage []int64
}

// Reader is what read paths run on: a *DB, where each call takes and releases a
// fresh snapshot, or a *Snapshot, where calls share one view and its iterators.
type Reader interface {
	// AcquireSnapshot returns a snapshot and the function that releases it.
	AcquireSnapshot() (*Snapshot, func(), error)
}

// Snapshot takes a consistent snapshot of the store.
func (db *DB) Snapshot() (*Snapshot, error) {
	s, err := db.snapshot()
	if err != nil {
		return nil, err
	}
	// On a engine.SharedEngine another process may have committed tables, attribute
	// names or surrogate keys this view shows: the caches follow the view.
	if err := db.refreshFrom(s.view); err != nil {
		return nil, errors.Join(err, s.Close())
	}
	return s, nil
}

func (db *DB) snapshot() (*Snapshot, error) {
	db.mu.RLock() // keeps Close from closing the engine under us; commits never wait on it
	defer db.mu.RUnlock()
	if db.closed {
		return nil, ErrClosed
	}
	v, err := db.engine.View()
	if err != nil {
		return nil, err
	}
	// The last transaction time is read from the view itself, not from memory: a
	// commit publishes its batch before the DB learns it succeeded, and the view
	// and its LastTx must describe the same commit. It is one point read of a key
	// that stays in the memtable or the block cache.
	var lastTx int64
	if err := getMeta(v, layout.MetaLastTx, &lastTx); err != nil {
		_ = v.Close()
		return nil, err
	}
	db.snapshots.Add(1)
	return &Snapshot{db: db, view: v, lastTx: lastTx, iters: map[byte]engine.Iter{}}, nil
}

// AcquireSnapshot implements Reader with a fresh snapshot.
func (db *DB) AcquireSnapshot() (*Snapshot, func(), error) {
	s, err := db.Snapshot()
	if err != nil {
		return nil, nil, err
	}
	return s, func() { _ = s.Close() }, nil
}

// AcquireSnapshot implements Reader with the snapshot itself.
func (s *Snapshot) AcquireSnapshot() (*Snapshot, func(), error) {
	if s.closed {
		return nil, nil, ErrClosed
	}
	return s, func() {}, nil
}

// Close releases the snapshot and its iterators.
func (s *Snapshot) Close() error {
	if s.closed {
		return ErrClosed
	}
	s.closed = true
	s.db.snapshots.Add(-1)
	var errs []error
	for _, it := range s.iters {
		errs = append(errs, it.Close())
	}
	errs = append(errs, s.view.Close())
	return errors.Join(errs...)
}

// DB returns the store the snapshot was taken from.
func (s *Snapshot) DB() *DB { return s.db }

// LastTx returns the transaction time of the newest commit visible in the snapshot.
func (s *Snapshot) LastTx() int64 { return s.lastTx }

// Table returns the named table (the catalog only grows, so the DB's is valid).
func (s *Snapshot) Table(name string) (*Table, error) { return s.db.Table(name) }

// iter returns the snapshot's iterator over keyspace ks, creating it on first use.
func (s *Snapshot) iter(ks byte) (engine.Iter, error) {
	if it, ok := s.iters[ks]; ok {
		return it, nil
	}
	it, err := s.view.NewIter([]byte{ks}, []byte{ks + 1})
	if err != nil {
		return nil, err
	}
	s.iters[ks] = it
	return it, nil
}

// NewIter returns a fresh iterator over [lower, upper) that the caller must close;
// for scans that outlive one call (iter.Seq2 results).
func (s *Snapshot) newIter(lower, upper []byte) (engine.Iter, error) {
	if s.closed {
		return nil, ErrClosed
	}
	return s.view.NewIter(lower, upper)
}

// MissReason says why a read found no version.
type MissReason uint8

// Reasons for a miss.
const (
	// Found: not a miss.
	Found MissReason = iota
	// UnknownKey: the key has no version at the transaction time of the read.
	UnknownKey
	// BeforeFirst: the valid time is before the key's first version.
	BeforeFirst
	// InGap: the valid time falls between two versions (a deletion, or a load bug).
	InGap
	// AfterLast: the valid time is at or after the end of the key's last version.
	AfterLast
)

// ClassifyMiss explains why no version of a key covers a valid time V, from
// two facts about the key's versions (at the read's transaction time):
// endedBefore, some version starts at or before V (and so ended at or before
// it), and startsAfter, some version starts after V. Every read path, and a
// transaction's own reads, classify their misses with it.
func ClassifyMiss(endedBefore, startsAfter bool) MissReason {
	switch {
	case endedBefore && startsAfter:
		return InGap
	case endedBefore:
		return AfterLast
	case startsAfter:
		return BeforeFirst
	}
	return UnknownKey
}

func (r MissReason) String() string {
	switch r {
	case Found:
		return "found"
	case UnknownKey:
		return "unknown key"
	case BeforeFirst:
		return "before the first version"
	case InGap:
		return "in a gap"
	case AfterLast:
		return "after the last version"
	}
	return fmt.Sprintf("MissReason(%d)", uint8(r))
}

// VersionAt returns the version of the key (encoded as tuple) in effect at valid
// time valid as known at transaction time tx, or the reason there is none. A tx at
// or after the snapshot's LastTx reads the current-state index: one seek.
func (s *Snapshot) VersionAt(t *Table, tuple []byte, valid, tx int64) (Version, MissReason, error) {
	if s.closed {
		return Version{}, 0, ErrClosed
	}
	if tx >= s.lastTx {
		return s.currentAt(t, tuple, valid)
	}
	if err := s.checkHorizon(t, tx); err != nil {
		return Version{}, 0, err
	}
	return s.pastAt(t, tuple, valid, tx)
}

// KeyVersionAt is VersionAt for key, which it encodes into a buffer the
// snapshot reuses, so a point read pays no allocation for its tuple. A key
// that does not fit the table's is a *KeyError.
func (s *Snapshot) KeyVersionAt(t *Table, key Key, valid, tx int64) (Version, MissReason, error) {
	tuple, err := t.AppendKey(s.kbuf[:0], key)
	if err != nil {
		return Version{}, 0, err
	}
	s.kbuf = tuple
	return s.VersionAt(t, tuple, valid, tx)
}

func (s *Snapshot) currentAt(t *Table, tuple []byte, valid int64) (Version, MissReason, error) {
	it, prefix, from, ok, err := s.seekCurrent(t, tuple, valid)
	if err != nil {
		return Version{}, 0, err
	}
	if ok {
		v, err := s.decodeVersion(t, tuple, from, 0, it.Value())
		if err != nil {
			return Version{}, 0, err
		}
		if valid < v.ValidTo {
			return v, Found, nil
		}
	}
	r, err := s.currentMiss(it, prefix, ok)
	return Version{}, r, err
}

// pastAt answers a read at a transaction time older than the newest commit. The
// record alive at tx that covers valid, if any, is the alive record with the
// greatest valid_from <= valid (alive records are disjoint). Candidates come from
// the current index (records with tx_from <= tx) and from history, where each
// distinct valid_from costs a step, or a seek when it holds many records: at
// most one record per (key, valid_from) is alive at any instant, and it is the
// newest one asserted at or before tx.
func (s *Snapshot) pastAt(t *Table, tuple []byte, valid, tx int64) (Version, MissReason, error) {
	best, found, err := s.pastCandidate(t, tuple, valid, tx, true)
	if err != nil {
		return Version{}, 0, err
	}
	if found && valid < best.ValidTo {
		return best, Found, nil
	}
	// A miss is explained by whether a version alive at tx starts after valid:
	// the alive record with the greatest valid_from of all says so, found like
	// the candidate (record heads and a step per valid_from), without decoding
	// the key's whole timeline or that record's attributes.
	last, any, err := s.pastCandidate(t, tuple, Infinity, tx, false)
	if err != nil {
		return Version{}, 0, err
	}
	later := any && last.ValidFrom > valid
	return Version{}, ClassifyMiss(found, later), nil
}

// pastCandidate returns the record alive at tx with the greatest valid_from <=
// valid, from the current index or history, without explaining a miss. Without
// full, the version holds only the record's head (periods, surrogate key, flags):
// no key and no attributes, which a caller that needs only the periods would
// otherwise pay a map per candidate for.
func (s *Snapshot) pastCandidate(t *Table, tuple []byte, valid, tx int64, full bool) (Version, bool, error) {
	r, found, err := s.pastRecord(t, tuple, valid, tx, 0)
	if !found || err != nil {
		return Version{}, found, err
	}
	return s.candidate(t, tuple, r.from, r.keyTx, r.head, r.value, full)
}

// pastHit is a stored record pastRecord found: its valid_from, the tx_from
// its key holds (0 for a current record, whose value holds it), its decoded
// head and its value, which belongs to the snapshot's iterator and is valid
// until the snapshot's next read.
type pastHit struct {
	from, keyTx int64
	head        encoding.RecordValue
	value       []byte
}

// pastRecord finds the record alive at tx with the greatest valid_from <=
// valid, from the current index or history. With limit above zero it gives up
// with errOverBudget after limit steps (a current record or a valid_from of
// history looked at), each a step or a seek.
//
// It walks the key's current records down from valid and, before it takes or
// steps past each, looks in history at the valid_froms above it (and at its
// own, when the current record is not alive at tx): the first record alive at
// tx met in that order is the answer. A current record asserted after tx that
// a later transaction rewrote (a correction) has its predecessor in history
// at the same valid_from, so the walk ends there without stepping past the
// current record, which until a flush is one iterator step over every
// overwrite of it the memtable keeps.
//
// The first current record, when it is alive at tx and covers valid, is the
// answer without a look in history: records alive at one instant are
// disjoint, so no record alive at tx starts between its valid_from and valid.
// A key unchanged since tx so costs one seek, as a read at the latest does.
func (s *Snapshot) pastRecord(t *Table, tuple []byte, valid, tx int64, limit int) (pastHit, bool, error) {
	it, err := s.iter(layout.Current)
	if err != nil {
		return pastHit{}, false, err
	}
	var h *historyWalk // started when the first current record is not the answer
	prefix := layout.CurrentKeys.KeyPrefix(s.buf[:0], t.ID, tuple)
	s.buf = layout.CurrentKeys.AppendValid(prefix, valid)
	for ok := it.SeekPrefixGE(s.buf); ok && bytes.HasPrefix(it.Key(), prefix); ok = it.Next() {
		from, err := layout.CurrentKeys.ValidFrom(it.Key(), len(prefix))
		if err != nil {
			return pastHit{}, false, err
		}
		head, err := s.decodeHead(t, it.Value(), from, 0)
		if err != nil {
			return pastHit{}, false, err
		}
		alive := head.TxFrom <= tx // a current record is retired at no tx
		if h == nil {
			if alive && valid < head.ValidTo {
				return pastHit{from: from, head: head, value: it.Value()}, true, nil
			}
			if h, err = s.startHistoryWalk(t, tuple, valid, tx, limit); err != nil {
				return pastHit{}, false, err
			}
		}
		if err := h.step(); err != nil {
			return pastHit{}, false, err
		}
		if r, found, err := h.above(from, !alive); found || err != nil {
			return r, found, err
		}
		if alive {
			return pastHit{from: from, head: head, value: it.Value()}, true, nil
		}
	}
	if err := it.Error(); err != nil {
		return pastHit{}, false, err
	}
	if h == nil {
		if h, err = s.startHistoryWalk(t, tuple, valid, tx, limit); err != nil {
			return pastHit{}, false, err
		}
	}
	return h.above(NegInfinity, true)
}

// historyWalk is pastCandidate's walk down one key's history, from the read's
// valid time, by valid_from (historysteps.go: a step per valid_from of one
// record, a seek for one of many). A snapshot keeps one walk, whose buffers
// its reads reuse.
type historyWalk struct {
	s      *Snapshot
	t      *Table
	tuple  []byte
	tx     int64
	it     engine.Iter
	on     bool  // the iterator is at the newest record of valid_from from
	from   int64 // valid_from of the records the iterator is on
	prefix []byte
	group  []byte // prefix | desc(from): the key prefix of from's records
	seek   []byte
	// limited: pastRecord was given a limit, of which left steps are left.
	limited bool
	left    int
}

// errOverBudget stops a read that went over the steps it was given: a
// timeline of a past-time merge, or pastRecord with a limit.
var errOverBudget = errors.New("bitempo: read longer than its budget")

// step counts one step of pastRecord against its limit.
func (w *historyWalk) step() error {
	if !w.limited {
		return nil
	}
	if w.left == 0 {
		return errOverBudget
	}
	w.left--
	return nil
}

// startHistoryWalk positions the snapshot's history walk at the key's
// greatest valid_from <= valid, with limit steps (none: no limit).
func (s *Snapshot) startHistoryWalk(t *Table, tuple []byte, valid, tx int64, limit int) (*historyWalk, error) {
	it, err := s.iter(layout.History)
	if err != nil {
		return nil, err
	}
	w := &s.walk
	w.s, w.t, w.tuple, w.tx, w.it, w.limited, w.left = s, t, tuple, tx, it, limit > 0, limit
	w.prefix = layout.HistoryKeys.KeyPrefix(w.prefix[:0], t.ID, tuple)
	return w, w.seekAtOrBelow(valid)
}

// seekAtOrBelow moves the walk to the greatest valid_from <= valid.
func (w *historyWalk) seekAtOrBelow(valid int64) error {
	w.seek = layout.HistoryKeys.AppendValid(append(w.seek[:0], w.prefix...), valid)
	return w.land(w.it.SeekPrefixGE(w.seek))
}

// land sets the walk's valid_from from the record the iterator is at (ok is
// what its last positioning call returned): the newest record of the next
// valid_from the walk looks at, or none when the iterator left the key.
func (w *historyWalk) land(ok bool) error {
	w.on = ok && bytes.HasPrefix(w.it.Key(), w.prefix)
	if !w.on {
		return w.it.Error()
	}
	kp, from, err := layout.HistoryKeys.Split(w.it.Key(), len(w.prefix)-len(w.tuple))
	if err != nil {
		w.on = false
		return err
	}
	if !bytes.Equal(kp, w.prefix) {
		// A key of another length under the key's prefix: its valid_from
		// is not where the next seek assumes, which would find it again.
		w.on = false
		return fmt.Errorf("%w: table %q: history key %x is not a record key of key %x", ErrCorrupt, w.t.Name, w.it.Key(), w.tuple)
	}
	w.from = from
	w.group = layout.HistoryKeys.AppendValid(append(w.group[:0], w.prefix...), from)
	return nil
}

// above returns the retired record alive at tx with the greatest valid_from
// above floor (or at it, with orAt) among the valid_froms the walk has not
// passed. A walk that found one is done.
func (w *historyWalk) above(floor int64, orAt bool) (pastHit, bool, error) {
	for w.on && (w.from > floor || orAt && w.from == floor) {
		if err := w.step(); err != nil {
			return pastHit{}, false, err
		}
		r, found, err := w.inGroup()
		if found || err != nil {
			w.on = false
			return r, found, err
		}
	}
	return pastHit{}, false, w.it.Error()
}

// inGroup returns the record of the walk's valid_from alive at tx, if there
// is one, and otherwise moves the walk to the next valid_from below. The
// iterator is at the valid_from's newest record.
func (w *historyWalk) inGroup() (pastHit, bool, error) {
	keyTx, found, ok, _, err := toAssertedBy(w.it, true, w.group, w.tx, &w.seek)
	if err != nil {
		return pastHit{}, false, fmt.Errorf("table %q: %w", w.t.Name, err)
	}
	if !found {
		return pastHit{}, false, w.land(ok) // the newest record of the next valid_from
	}
	// The newest record of the valid_from asserted at or before tx: the one
	// alive then, unless it was retired by then.
	head, err := w.s.decodeHead(w.t, w.it.Value(), w.from, keyTx)
	if err != nil {
		return pastHit{}, false, err
	}
	if head.TxFrom <= w.tx && w.tx < head.TxTo {
		return pastHit{from: w.from, keyTx: keyTx, head: head, value: w.it.Value()}, true, nil
	}
	return pastHit{}, false, w.land(pastValidFrom(w.it, true, w.prefix, w.group, w.from, &w.seek))
}

// candidate is a found candidate record: the whole version with full, else the
// periods, surrogate key and flags of head (already decoded from value).
func (s *Snapshot) candidate(t *Table, tuple []byte, from, keyTxFrom int64, head encoding.RecordValue, value []byte, full bool) (Version, bool, error) {
	if !full {
		return Version{
			ValidFrom: from, ValidTo: head.ValidTo, TxFrom: head.TxFrom, TxTo: head.TxTo,
			SK: head.SK, Inferred: head.Flags&encoding.FlagInferred != 0,
		}, true, nil
	}
	v, err := s.decodeVersion(t, tuple, from, keyTxFrom, value)
	return v, err == nil, err
}

// KeyVersions returns the versions of a key alive at transaction time tx, in
// ascending valid order. At or after LastTx it reads only the current index.
func (s *Snapshot) KeyVersions(t *Table, tuple []byte, tx int64) ([]Version, error) {
	if s.closed {
		return nil, ErrClosed
	}
	if tx < s.lastTx {
		if err := s.checkHorizon(t, tx); err != nil {
			return nil, err
		}
	}
	var out []Version
	err := s.keyRecords(t, tuple, layout.CurrentKeys, func(v Version) bool {
		if v.TxFrom <= tx {
			out = append(out, v)
		}
		return true
	})
	if err != nil || tx >= s.lastTx {
		slices.Reverse(out)
		return out, err
	}
	err = s.keyRecords(t, tuple, layout.HistoryKeys, func(v Version) bool {
		if v.AliveAt(tx) {
			out = append(out, v)
		}
		return true
	})
	slices.SortFunc(out, func(a, b Version) int { return cmp.Compare(a.ValidFrom, b.ValidFrom) })
	return out, err
}

// KeyRecords returns every record of a key, current and retired, ordered by
// tx_from and then valid_from: the key's audit trail.
func (s *Snapshot) KeyRecords(t *Table, tuple []byte) ([]Version, error) {
	if s.closed {
		return nil, ErrClosed
	}
	out, err := s.appendKeyRecords(nil, t, tuple)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b Version) int {
		if c := cmp.Compare(a.TxFrom, b.TxFrom); c != 0 {
			return c
		}
		return cmp.Compare(a.ValidFrom, b.ValidFrom)
	})
	return out, nil
}

// appendKeyRecords appends every record of a key to out, those of the current
// index and then those of history, each in key order.
func (s *Snapshot) appendKeyRecords(out []Version, t *Table, tuple []byte) ([]Version, error) {
	collect := func(v Version) bool { out = append(out, v); return true }
	if err := s.keyRecords(t, tuple, layout.CurrentKeys, collect); err != nil {
		return out, err
	}
	err := s.keyRecords(t, tuple, layout.HistoryKeys, collect)
	return out, err
}

// keyRecords calls fn for every record of a key in record keyspace keys
// (current or history), in key order, until fn returns false.
func (s *Snapshot) keyRecords(t *Table, tuple []byte, keys layout.RecordCodec, fn func(Version) bool) error {
	prefix := keys.KeyPrefix(nil, t.ID, tuple)
	it, err := s.iter(keys.Keyspace())
	if err != nil {
		return err
	}
	for ok := it.SeekPrefixGE(prefix); ok && bytes.HasPrefix(it.Key(), prefix); ok = it.Next() {
		_, from, err := keys.Split(it.Key(), len(prefix)-len(tuple))
		var keyTx int64
		if err == nil {
			keyTx, err = keys.TxFrom(it.Key())
		}
		if err != nil {
			return err
		}
		v, err := s.decodeVersion(t, tuple, from, keyTx, it.Value())
		if err != nil {
			return err
		}
		if !fn(v) {
			break
		}
	}
	return it.Error()
}
