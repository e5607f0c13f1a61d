package store

import (
	"bytes"
	"fmt"
	"maps"

	"github.com/bitempo/bitempo/internal/sealed"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/engine"
	"github.com/bitempo/bitempo/layout"
)

// Writer accumulates one transaction's writes and commits them as one atomic batch.
// Only one Writer exists at a time: BeginWrite blocks until the previous one has
// committed or aborted. Package txn drives it; it validates semantics, the Writer
// only lays records out.
//
// Retire and Assert take versions whose content is final. The commit's
// transaction time is fixed on the first call to Tx (or at Commit), as
// max(clock, last+1), so it is strictly increasing across commits and restarts.
type Writer struct {
	db       *DB
	snap     *Snapshot
	tx       int64
	number   uint64         // the commit's number (commits.go): the last one's plus one
	retires  []engine.Write // applied before asserts: a retire and an assert may share a key
	asserts  []engine.Write
	other    []engine.Write
	nextSK   map[uint32]uint64
	ordinals map[uint32]uint32 // the next transaction-log ordinal of each table
	logs     map[uint32]*openLogEntry
	// retired holds the records this transaction retired, by sk, key and
	// valid_from: re-asserting one of them (an SCD2 close) needs no sk-index
	// entry, and with the same attributes, no second copy of them.
	retired map[skRef]retiredRecord
	// attrs holds the attribute names this transaction numbers and the
	// types it establishes (attrtypes.go); redeclared the tables whose
	// declaration it changes (declare.go). Both are published at commit.
	attrs      newAttrs
	redeclared map[uint32]*Table
	// entryTypes holds the types attributes take from this transaction's
	// first values of them, before any is asserted (Conform).
	entryTypes map[uint32]map[string]ColumnType
	bulk       *bulkState // spilling to disk, if EnableSpill was called (bulk.go)
	// known holds what the transaction's reads of keys' current versions
	// said of their newest (newest.go); Spill drops it.
	known map[string]knownNewest
	// bound counts the writes against the engine's bound of one commit, if
	// it has one (writer_limit.go).
	bound *commitBound
	// newSecret is the erase secret this commit creates (erase.go); purge the
	// key ranges its erasures emptied (purge.go).
	newSecret []byte
	purge     []span
	done      bool
}

// BeginWrite starts a write transaction, waiting for the previous one to finish.
// It is the door package txn builds every write on; it takes a sealed.Key, which
// only this module's packages can name, so a program writes through txn.
func (db *DB) BeginWrite(sealed.Key) (*Writer, error) {
	if db.opts.ReadOnly {
		return nil, ErrReadOnly
	}
	if err := db.lockWriter("a write transaction"); err != nil {
		return nil, err
	}
	snap, err := db.Snapshot()
	if err != nil {
		db.unlockWriter()
		return nil, err
	}
	last, err := readLastCommit(snap.view)
	if err != nil {
		_ = snap.Close()
		db.unlockWriter()
		return nil, err
	}
	db.mu.RLock()
	nextSK := maps.Clone(db.nextSK)
	db.mu.RUnlock()
	return &Writer{db: db, snap: snap, number: last + 1, nextSK: nextSK, ordinals: map[uint32]uint32{}, logs: map[uint32]*openLogEntry{}, retired: map[skRef]retiredRecord{}, attrs: makeNewAttrs(),
		bound: newCommitBound(db)}, nil
}

// Snapshot returns the view the transaction reads committed state from: it holds
// every earlier commit, since no commit can happen while the Writer exists.
func (w *Writer) Snapshot() *Snapshot { return w.snap }

// Tx returns the transaction time this commit will carry.
func (w *Writer) Tx() int64 {
	if w.tx == 0 {
		w.tx = max(w.db.opts.Clock(), w.snap.lastTx+1)
	}
	return w.tx
}

// AllocSK returns a fresh surrogate key of table t. It is persisted with the
// commit; an aborted transaction's keys were never visible and are handed out again.
func (w *Writer) AllocSK(t *Table) uint64 {
	sk := w.nextSK[t.ID]
	w.nextSK[t.ID] = sk + 1
	return sk
}

// Empty reports whether the transaction has written nothing.
func (w *Writer) Empty() bool {
	return len(w.retires) == 0 && len(w.asserts) == 0 && len(w.other) == 0 && !w.bulk.spilled()
}

// Retire ends the current record v (as read from the current index) at this
// commit: it leaves the current index and enters history with tx_to set.
func (w *Writer) Retire(t *Table, v Version) error {
	tx := w.Tx()
	if v.TxTo != Infinity || v.TxFrom >= tx {
		return fmt.Errorf("%w: retire of a record that is not current: %s", ErrInvalidUse, v.String())
	}
	w.retires = append(w.retires, engine.Write{Key: layout.CurrentKeys.Key(nil, t.ID, v.tuple, v.ValidFrom, 0), Delete: true})
	v.TxTo = tx
	value, err := w.encodeRecord(t, &v)
	if err != nil {
		return err
	}
	w.retires = append(w.retires, engine.Write{Key: layout.HistoryKeys.Key(nil, t.ID, v.tuple, v.ValidFrom, v.TxFrom), Value: value})
	rec := retiredRecord{v: v, writes: []int{len(w.retires) - 1}}
	n := len(w.retires)
	if err := w.groupRetire(t, &v, value); err != nil {
		return err
	}
	if len(w.retires) > n { // the group index's history copy
		rec.writes = append(rec.writes, len(w.retires)-1)
	}
	w.retired[skRef{t.ID, v.SK, string(v.tuple), v.ValidFrom}] = rec
	w.logChange(t, LogRetire, &v)
	return w.checkBound()
}

// Assert makes v a current record as of this commit. v.Attrs must be encodable;
// callers validate them before any write so that errors leave nothing behind.
//
// A version of a table that declares columns must fit the declaration in
// effect for this transaction (Table.Conform, with every column that is not
// nullable present); its values are converted where that is exact, and a
// misfit is a *SchemaError. Callers conform their input first, so that change
// detection compares converted values.
func (w *Writer) Assert(t *Table, v Version) error {
	v.TxFrom, v.TxTo = w.Tx(), Infinity
	if nt, ok := w.redeclared[t.ID]; ok {
		t = nt
	}
	attrs, err := t.conformVersion(v.Attrs)
	if err != nil {
		return err
	}
	v.Attrs = attrs
	w.attrs.note(w.db, t, v.Attrs)
	value, err := w.encodeRecord(t, &v)
	if err != nil {
		return err
	}
	w.asserts = append(w.asserts, engine.Write{Key: layout.CurrentKeys.Key(nil, t.ID, v.tuple, v.ValidFrom, 0), Value: value})
	if err := w.groupAssert(t, &v, value); err != nil {
		return err
	}
	if rec, ok := w.retired[skRef{t.ID, v.SK, string(v.tuple), v.ValidFrom}]; !ok {
		w.asserts = append(w.asserts, engine.Write{Key: layout.SKIndexKeys.Key(nil, t.ID, v.SK, v.TxFrom), Value: layout.SKIndexKeys.Value(nil, v.tuple, v.ValidFrom)})
	} else if err := w.shareAttrs(rec, value); err != nil {
		return err
	}
	w.logChange(t, LogAssert, &v)
	return w.checkBound()
}

// retiredRecord is a record retired by the transaction and the indexes in
// w.retires of its history copies (the record's, and the group index's).
type retiredRecord struct {
	v      Version
	writes []int
}

// shareAttrs rewrites the history copies of a retired record without its
// attributes when value, the record re-asserted in its place with the same sk,
// key and valid_from (an SCD2 close), holds exactly the same attribute bytes:
// the retired record then reads them from its successor, the record of its key
// and valid_from asserted at its tx_to. The later record holds the
// attributes, not the retired one, so that reads at the latest transaction
// time never follow a reference; reads of history pay one point read per
// shared record. A diff against the successor would also save bytes on type-1
// overwrites, but make every history read rebuild records.
func (w *Writer) shareAttrs(rec retiredRecord, value []byte) error {
	old, err := encoding.PositionalAttrs(w.retires[rec.writes[0]].Value)
	if err != nil {
		return err
	}
	cur, err := encoding.PositionalAttrs(value)
	if err != nil || !bytes.Equal(old, cur) {
		return err
	}
	shared, err := encoding.AppendRecordSharedAt(nil, rec.v.recordValue(), rec.v.ValidFrom)
	if err != nil {
		return err
	}
	for _, i := range rec.writes {
		w.retires[i].Value = shared
		w.bound.recount(w.retires[i], i)
	}
	return nil
}

// skRef names the records of one surrogate key, key and valid_from: what an sk
// index entry points at.
type skRef struct {
	tid       uint32
	sk        uint64
	tuple     string
	validFrom int64
}

// Set writes a raw key of a keyspace owned by a higher layer's structure (event
// log, batch ids, group index). The key must have been built by this package.
func (w *Writer) set(key, value []byte) {
	w.other = append(w.other, engine.Write{Key: key, Value: value})
}
func (w *Writer) del(key []byte) { w.other = append(w.other, engine.Write{Key: key, Delete: true}) }

// Commit writes everything atomically (synced unless the store was opened with
// NoSync) and publishes the new transaction time. After Commit, successful or
// not, the Writer is finished. An empty transaction commits nothing and consumes
// no transaction time.
func (w *Writer) Commit() error {
	if w.done {
		return fmt.Errorf("%w: transaction already finished", ErrInvalidUse)
	}
	defer w.finish()
	if w.Empty() {
		return nil
	}
	if !w.bulk.spilled() { // a spilled commit derives them as it ingests
		newest, err := w.newestWrites()
		if err != nil {
			return fmt.Errorf("bitempo: commit: %w", err)
		}
		w.other = append(w.other, newest...)
	}
	if err := w.checkBound(); err != nil {
		return fmt.Errorf("bitempo: commit: %w", err)
	}
	tx := w.Tx()
	for tid := range w.logs {
		w.flushLog(tid)
	}
	writes := make([]engine.Write, 0, len(w.retires)+len(w.asserts)+len(w.other)+8)
	writes = append(writes, w.retires...)
	writes = append(writes, w.asserts...)
	writes = append(writes, w.other...)
	writes = append(writes, engine.Write{Key: layout.MetaLastTx, Value: mustMarshal(tx)},
		engine.Write{Key: layout.CommitKey(w.number), Value: layout.CommitValue(tx)},
		engine.Write{Key: layout.MetaLastCommit, Value: mustMarshal(w.number)})
	for tid, next := range w.nextSK {
		if next != w.db.nextSK[tid] {
			writes = append(writes, engine.Write{Key: layout.SKCounterKey(tid), Value: encoding.AppendUint64(nil, next)})
		}
	}
	w.db.mu.RLock()
	writes = append(writes, w.attrs.writes(w.db)...)
	w.db.mu.RUnlock()
	if w.newSecret != nil {
		writes = append(writes, engine.Write{Key: layout.MetaEraseSecret, Value: mustMarshal(w.newSecret)})
	}
	if _, ok := w.db.engine.(engine.Purger); ok && len(w.purge) > 0 {
		writes = append(writes, engine.Write{Key: layout.MetaPurgePending, Value: mustMarshal(true)})
	}
	commit := func() error { return w.db.commit(writes, !w.db.opts.NoSync) }
	if w.bulk.spilled() {
		commit = func() error { return w.commitSpilled(writes) }
	}
	if err := commit(); err != nil {
		return fmt.Errorf("bitempo: commit: %w", err)
	}
	w.db.notePurge(w.purge)
	w.db.mu.Lock()
	if w.newSecret != nil {
		w.db.eraseSecret = w.newSecret
	}
	w.db.lastTx = tx
	w.db.nextSK = w.nextSK
	w.attrs.publish(w.db)
	for id, t := range w.redeclared {
		w.db.tables[t.Name], w.db.byID[id] = t, t
	}
	w.db.mu.Unlock()
	return nil
}

// Abort discards the transaction.
func (w *Writer) Abort() {
	if !w.done {
		w.finish()
	}
}

func (w *Writer) finish() {
	w.done = true
	w.bulk.close()
	_ = w.snap.Close()
	w.db.unlockWriter()
}
