package store

import (
	"fmt"
	"maps"

	"github.com/bitempo/bitempo/encoding"
	"github.com/vmihailenco/msgpack/v5"
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
	retires  []kvWrite // applied before asserts: a retire and an assert may share a key
	asserts  []kvWrite
	other    []kvWrite
	nextSK   map[uint32]uint64
	ordinals map[uint32]uint32
	newAttrs map[uint32][]string
	done     bool
	bulk     *bulkState // spilling to disk, if EnableSpill was called (bulk.go)
}

// BeginWrite starts a write transaction, waiting for the previous one to finish.
func (db *DB) BeginWrite() (*Writer, error) {
	if db.opts.ReadOnly {
		return nil, ErrReadOnly
	}
	db.writer.Lock()
	snap, err := db.Snapshot()
	if err != nil {
		db.writer.Unlock()
		return nil, err
	}
	db.mu.RLock()
	nextSK := maps.Clone(db.nextSK)
	db.mu.RUnlock()
	return &Writer{db: db, snap: snap, nextSK: nextSK, ordinals: map[uint32]uint32{}, newAttrs: map[uint32][]string{}}, nil
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
		return fmt.Errorf("bitempo: retire of a record that is not current: %s", v.String())
	}
	w.retires = append(w.retires, kvWrite{key: currentKey(nil, t.ID, v.tuple, v.ValidFrom), del: true})
	v.TxTo = tx
	value, err := encoding.AppendRecord(nil, v.recordValue())
	if err != nil {
		return err
	}
	w.retires = append(w.retires, kvWrite{key: historyKey(nil, t.ID, v.tuple, v.ValidFrom, v.TxFrom), value: value})
	if err := w.groupRetire(t, &v, value); err != nil {
		return err
	}
	return w.logChange(t, txOpRetire, &v)
}

// Assert makes v a current record as of this commit. v.Attrs must be encodable;
// callers validate them before any write so that errors leave nothing behind.
func (w *Writer) Assert(t *Table, v Version) error {
	v.TxFrom, v.TxTo = w.Tx(), Infinity
	value, err := encoding.AppendRecord(nil, v.recordValue())
	if err != nil {
		return err
	}
	w.asserts = append(w.asserts, kvWrite{key: currentKey(nil, t.ID, v.tuple, v.ValidFrom), value: value})
	if err := w.groupAssert(t, &v, value); err != nil {
		return err
	}
	ptr := encoding.AppendTimeAsc(append([]byte(nil), v.tuple...), v.ValidFrom)
	w.asserts = append(w.asserts, kvWrite{key: skIndexKey(nil, t.ID, v.SK, v.TxFrom), value: ptr})
	w.noteAttrs(t, v.Attrs)
	return w.logChange(t, txOpAssert, &v)
}

// Set writes a raw key of a keyspace owned by a higher layer's structure (event
// log, batch ids, group index). The key must have been built by this package.
func (w *Writer) set(key, value []byte) { w.other = append(w.other, kvWrite{key: key, value: value}) }
func (w *Writer) del(key []byte)        { w.other = append(w.other, kvWrite{key: key, del: true}) }

// Transaction log operations.
const (
	txOpAssert = 0
	txOpRetire = 1
)

// txLogEntry is the value of a transaction-log key.
type txLogEntry struct {
	//lint:ignore U1000 msgpack reads this field's tag: encode the entry as an array
	_msgpack  struct{} `msgpack:",as_array"`
	Op        int
	Tuple     []byte
	ValidFrom int64
	TxFrom    int64
}

func (w *Writer) logChange(t *Table, op int, v *Version) error {
	ord := w.ordinals[t.ID]
	w.ordinals[t.ID] = ord + 1
	value, err := msgpack.Marshal(&txLogEntry{Op: op, Tuple: v.tuple, ValidFrom: v.ValidFrom, TxFrom: v.TxFrom})
	if err != nil {
		return err
	}
	w.asserts = append(w.asserts, kvWrite{key: txLogKey(nil, t.ID, w.Tx(), ord), value: value})
	return nil
}

func (w *Writer) noteAttrs(t *Table, attrs Attrs) {
	w.db.mu.RLock()
	seen := w.db.attrSeen[t.ID]
	w.db.mu.RUnlock()
	for _, name := range attrs.Names() {
		if !seen[name] && !containsString(w.newAttrs[t.ID], name) {
			w.newAttrs[t.ID] = append(w.newAttrs[t.ID], name)
		}
	}
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Commit writes everything atomically (synced unless the store was opened with
// NoSync) and publishes the new transaction time. After Commit, successful or
// not, the Writer is finished. An empty transaction commits nothing and consumes
// no transaction time.
func (w *Writer) Commit() error {
	if w.done {
		return fmt.Errorf("bitempo: transaction already finished")
	}
	defer w.finish()
	if w.Empty() {
		return nil
	}
	tx := w.Tx()
	writes := make([]kvWrite, 0, len(w.retires)+len(w.asserts)+len(w.other)+8)
	writes = append(writes, w.retires...)
	writes = append(writes, w.asserts...)
	writes = append(writes, w.other...)
	writes = append(writes, kvWrite{key: metaLastTx, value: mustMarshal(tx)})
	for tid, next := range w.nextSK {
		if next != w.db.nextSK[tid] {
			writes = append(writes, kvWrite{key: skCounterKey(tid), value: encoding.AppendUint64(nil, next)})
		}
	}
	w.db.mu.RLock()
	for tid, names := range w.newAttrs {
		base := uint32(len(w.db.attrList[tid]))
		for i, name := range names {
			writes = append(writes, kvWrite{key: attrNameKey(tid, base+uint32(i)), value: []byte(name)})
		}
	}
	w.db.mu.RUnlock()
	commit := func() error { return w.db.engine.commit(writes, !w.db.opts.NoSync) }
	if w.bulk.spilled() {
		commit = func() error { return w.commitSpilled(writes) }
	}
	if err := commit(); err != nil {
		return fmt.Errorf("bitempo: commit: %w", err)
	}
	w.db.mu.Lock()
	w.db.lastTx = tx
	w.db.nextSK = w.nextSK
	for tid, names := range w.newAttrs {
		for _, name := range names {
			w.db.attrSeen[tid][name] = true
		}
		w.db.attrList[tid] = append(w.db.attrList[tid], names...)
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
	w.db.writer.Unlock()
}
