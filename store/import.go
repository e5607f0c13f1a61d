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

// This file imports history recorded elsewhere: records with the transaction
// periods they already had, a changes table's events, checkpoints and applied
// batch ids. It is the one place where a caller sets transaction times, and it
// exists to rebuild a store from a full-fidelity export (another format version,
// another machine, another engine). Everything is laid out with the same key
// and value functions the Writer uses, so an imported record is stored exactly
// as a committed one; the transaction log gets an assert entry at each record's
// tx_from and a retire entry at its tx_to, in import order within one
// transaction time (the order of changes inside one original transaction is not
// part of an export).
//
// Decided here: an import only fills tables that hold nothing yet (no record,
// event, checkpoint or batch id when the table is first touched). The rejected
// alternative, merging imported history into a table with history of its own,
// could interleave two unrelated transaction timelines of one key, which no
// commit could have produced.

// ErrImport: imported data that cannot be stored as it is (a table that already
// holds data, an invalid period, a transaction period that is not ordered).
var ErrImport = errors.New("bitempo: invalid import")

// importFlushWrites is the number of pending writes after which an import
// commits them, so memory stays bounded whatever the size of the import.
const importFlushWrites = 16 << 10

// Importer writes imported history into empty tables. It holds the store's
// writer lock from BeginImport to Commit or Abort, and commits in batches as it
// goes: readers see the import grow, and an import that fails midway leaves the
// batches before the failure in place (bitempo import writes into a new store
// and removes it on failure). Verify the store after Commit: an import is
// checked record by record, but invariants across records (disjoint valid
// periods, unique surrogate keys) are Verify's.
type Importer struct {
	db       *DB
	pending  []engine.Write
	lastTx   int64
	checked  map[uint32]bool
	nextSK   map[uint32]uint64
	ordinals map[txOrdinal]uint32
	attrs    newAttrs // names and types first used by the import (attrtypes.go)
	// decls holds each table's declarations, oldest first, and the tables
	// that hold their records to them (Declarations, checkDeclared).
	decls   map[uint32][]declared
	key     *importKey        // the records of the key being imported
	lastKey map[uint32][]byte // per table, the tuple of the last key finished
	// commits holds the numbers given to the transaction times at which
	// imported current records were asserted (commits.go), after
	// lastCommit, the store's last number when the import began or numbered
	// last; at most importCommitMemo of them (commitOf).
	commits    map[int64]uint64
	lastCommit uint64
	done       bool
}

// importKey buffers the records of one key: its sk-index entries and its
// transaction-log entries depend on all of them (see finishKey).
type importKey struct {
	t       *Table
	tuple   []byte
	records []Version
}

// txOrdinal names the transaction-log entries of one table at one transaction.
type txOrdinal struct {
	tid uint32
	tx  int64
}

// BeginImport starts an import, waiting for the running write transaction, if
// any, to finish.
func (db *DB) BeginImport() (*Importer, error) {
	if db.opts.ReadOnly {
		return nil, ErrReadOnly
	}
	if err := db.lockWriter("BeginImport"); err != nil {
		return nil, err
	}
	db.mu.RLock()
	closed, lastTx := db.closed, db.lastTx
	db.mu.RUnlock()
	if closed {
		db.unlockWriter()
		return nil, ErrClosed
	}
	s, err := db.Snapshot()
	if err != nil {
		db.unlockWriter()
		return nil, err
	}
	lastCommit, err := readLastCommit(s.view)
	if err = errors.Join(err, s.Close()); err != nil {
		db.unlockWriter()
		return nil, err
	}
	return &Importer{db: db, lastTx: lastTx, checked: map[uint32]bool{}, nextSK: map[uint32]uint64{},
		ordinals: map[txOrdinal]uint32{}, attrs: makeNewAttrs(), decls: map[uint32][]declared{}, lastKey: map[uint32][]byte{},
		commits: map[int64]uint64{}, lastCommit: lastCommit}, nil
}

// importCommitMemo bounds the transaction times an import remembers the
// numbers of, so that its memory stays bounded whatever the export.
var importCommitMemo = 1 << 16

// commitOf returns the commit number of imported transaction time tx,
// numbering it (with its entry in keyspace 0x07) the first time a current
// record asserted at tx is imported. Records of one time share a number while
// the import remembers it: all of a bulk load's, which share one time. Once
// it has forgotten (after importCommitMemo other times), a time gets a second
// number mapped to the same time, which reads the same: nothing compares two
// numbers, only the times they map to.
func (im *Importer) commitOf(tx int64) uint64 {
	if n, ok := im.commits[tx]; ok {
		return n
	}
	if len(im.commits) >= importCommitMemo {
		clear(im.commits)
	}
	im.lastCommit++
	im.commits[tx] = im.lastCommit
	im.pending = append(im.pending, engine.Write{Key: layout.CommitKey(im.lastCommit), Value: layout.CommitValue(tx)})
	return im.lastCommit
}

func importErr(t *Table, format string, args ...any) error {
	return fmt.Errorf("%w: table %q: %s", ErrImport, t.Name, fmt.Sprintf(format, args...))
}

// begin checks, the first time the import touches table t, that it holds
// nothing yet.
func (im *Importer) begin(t *Table) error {
	if im.done {
		return fmt.Errorf("bitempo: import already finished")
	}
	if im.checked[t.ID] {
		return nil
	}
	s, err := im.db.Snapshot()
	if err != nil {
		return err
	}
	defer s.Close()
	for _, ks := range []byte{layout.Current, layout.History, layout.Events, layout.Batches, layout.Checkpoints} {
		prefix := layout.AppendTablePrefix(nil, ks, t.ID)
		it, err := s.newIter(prefix, encoding.PrefixEnd(prefix))
		if err != nil {
			return err
		}
		found := it.First()
		if err := errors.Join(it.Error(), it.Close()); err != nil {
			return err
		}
		if found {
			return importErr(t, "the table already holds %s; an import fills empty tables only", layout.KeyspaceName(ks))
		}
	}
	im.db.mu.RLock()
	im.nextSK[t.ID] = im.db.nextSK[t.ID]
	im.db.mu.RUnlock()
	im.checked[t.ID] = true
	return nil
}

// tuple encodes key for table t.
func (im *Importer) tuple(t *Table, key Key) ([]byte, error) {
	if err := im.begin(t); err != nil {
		return nil, err
	}
	return t.AppendKey(nil, key)
}

// Record imports one record of table t: its key, valid period, transaction
// period (txTo Infinity while current), surrogate key, inferred flag and
// attributes. Periods must be non-empty and transaction times positive. The
// records of a table must come in key order (a full-fidelity export writes
// them so), all records of one key together: a key's sk-index and
// transaction-log entries are laid out from all its records at once.
func (im *Importer) Record(t *Table, key Key, validFrom, validTo, txFrom, txTo int64, sk uint64, inferred bool, attrs Attrs) error {
	tuple, err := im.tuple(t, key)
	if err != nil {
		return err
	}
	if err := CheckPeriod(validFrom, validTo); err != nil {
		return importErr(t, "key %s: valid period: %v", Key(key), err)
	}
	if txFrom <= 0 || txFrom == Infinity || txFrom >= txTo {
		return importErr(t, "key %s: transaction period [%d, %d) is empty, inverted or not positive", Key(key), txFrom, txTo)
	}
	if err := t.CheckGroupAttrs(attrs); err != nil {
		return err
	}
	if err := im.checkDeclared(t, txFrom, attrs); err != nil {
		return err
	}
	if im.key == nil || im.key.t.ID != t.ID || !bytes.Equal(im.key.tuple, tuple) {
		if err := im.finishKey(); err != nil {
			return err
		}
		if last, ok := im.lastKey[t.ID]; ok && bytes.Compare(tuple, last) <= 0 {
			return importErr(t, "key %s: records must come in key order, each key's together", Key(key))
		}
		im.key = &importKey{t: t, tuple: tuple}
	}
	v := t.NewVersion(key, tuple, validFrom, validTo, sk, attrs)
	v.TxFrom, v.TxTo, v.Inferred = txFrom, txTo, inferred
	im.key.records = append(im.key.records, v)
	im.attrs.note(im.db, t, attrs)
	im.lastTx = max(im.lastTx, txFrom)
	if txTo != Infinity {
		im.lastTx = max(im.lastTx, txTo)
	}
	im.nextSK[t.ID] = max(im.nextSK[t.ID], sk+1)
	return nil
}

// finishKey lays out the buffered records of one key as commits would have:
// each record in the current index or history (and the group index), an
// sk-index entry for each record that does not continue a record of the same
// sk and valid_from retired at its tx_from (the SCD2 close), and one
// transaction-log entry per transaction that changed the key, its retirements
// before its assertions (a commit writes them in that order); a retired record
// shares its successor's attributes where a commit would have (importShared).
func (im *Importer) finishKey() error {
	k := im.key
	if k == nil {
		return nil
	}
	im.key = nil
	im.lastKey[k.t.ID] = k.tuple
	t, tid := k.t, k.t.ID
	im.db.mu.RLock()
	ordinal := ordinalsOf(im.db.attrOrd[tid], len(im.db.attrList[tid]), im.attrs.names[tid])
	im.db.mu.RUnlock()
	type change struct {
		tx int64
		c  logChange
	}
	values := make([][]byte, len(k.records))
	for i := range k.records {
		var commit uint64
		if v := &k.records[i]; v.TxTo == Infinity {
			commit = im.commitOf(v.TxFrom)
		}
		var err error
		if values[i], err = encodeRecordOrdinals(&k.records[i], commit, ordinal); err != nil {
			return importErr(t, "key %s: %v", k.records[i].Key, err)
		}
	}
	var changes []change
	newest := -1 // the current record with the greatest valid_from (newest.go)
	for i := range k.records {
		v := &k.records[i]
		value := values[i]
		if v.TxTo == Infinity && (newest < 0 || v.ValidFrom > k.records[newest].ValidFrom) {
			newest = i
		}
		if v.TxTo == Infinity {
			im.pending = append(im.pending, engine.Write{Key: layout.CurrentKeys.Key(nil, tid, k.tuple, v.ValidFrom, 0), Value: value})
		} else {
			var err error
			if value, err = importShared(k.records, values, i); err != nil {
				return importErr(t, "key %s: %v", v.Key, err)
			}
			im.pending = append(im.pending, engine.Write{Key: layout.HistoryKeys.Key(nil, tid, k.tuple, v.ValidFrom, v.TxFrom), Value: value})
			changes = append(changes, change{v.TxTo, logChange{op: LogRetire, validFrom: v.ValidFrom, txFrom: v.TxFrom}})
		}
		changes = append(changes, change{v.TxFrom, logChange{op: LogAssert, validFrom: v.ValidFrom, txFrom: v.TxFrom}})
		if len(t.GroupBy) > 0 {
			gkey, gvalue, ok, err := groupEntry(t, v, value, ordinal)
			if err != nil {
				return err
			}
			if ok {
				im.pending = append(im.pending, engine.Write{Key: gkey, Value: gvalue})
			}
		}
		continues := slices.ContainsFunc(k.records, func(p Version) bool {
			return p.SK == v.SK && p.ValidFrom == v.ValidFrom && p.TxTo == v.TxFrom
		})
		if !continues {
			im.pending = append(im.pending, engine.Write{Key: layout.SKIndexKeys.Key(nil, tid, v.SK, v.TxFrom), Value: layout.SKIndexKeys.Value(nil, k.tuple, v.ValidFrom)})
		}
	}
	if newest >= 0 {
		im.pending = append(im.pending, engine.Write{Key: layout.NewestKeys.Key(nil, tid, k.tuple),
			Value: layout.NewestKeys.Value(nil, k.records[newest].ValidFrom, values[newest])})
	}
	slices.SortStableFunc(changes, func(a, b change) int {
		return cmp.Or(cmp.Compare(a.tx, b.tx), cmp.Compare(b.c.op, a.c.op), cmp.Compare(a.c.validFrom, b.c.validFrom))
	})
	for i := 0; i < len(changes); {
		tx := changes[i].tx
		value := newLogEntryValue(tx, k.tuple)
		j := i
		for ; j < len(changes) && changes[j].tx == tx; j++ {
			value.add(changes[j].c)
		}
		o := txOrdinal{tid, tx}
		im.pending = append(im.pending, engine.Write{Key: layout.TxLogKeys.Key(nil, tid, tx, im.ordinals[o]), Value: value.b})
		im.ordinals[o] += uint32(j - i)
		i = j
	}
	return im.maybeFlush()
}

// importShared returns the stored value of retired record i: without its
// attributes when its successor (the record of its sk and valid_from asserted
// at its tx_to) holds the same attribute bytes, as Writer.shareAttrs stores it,
// else values[i].
func importShared(records []Version, values [][]byte, i int) ([]byte, error) {
	r := &records[i]
	j := slices.IndexFunc(records, func(s Version) bool {
		return s.SK == r.SK && s.ValidFrom == r.ValidFrom && s.TxFrom == r.TxTo
	})
	if j < 0 {
		return values[i], nil
	}
	mine, err := encoding.PositionalAttrs(values[i])
	if err != nil {
		return nil, err
	}
	theirs, err := encoding.PositionalAttrs(values[j])
	if err != nil || !bytes.Equal(mine, theirs) {
		return values[i], err
	}
	return encoding.AppendRecordSharedAt(nil, r.recordValue(), r.ValidFrom)
}

// Event imports one event of changes table t's log.
func (im *Importer) Event(t *Table, key Key, e LogEvent) error {
	if err := checkChanges(t); err != nil {
		return err
	}
	tuple, err := im.tuple(t, key)
	if err != nil {
		return err
	}
	value, err := appendEventValue(nil, &e)
	if err != nil {
		return importErr(t, "key %s: %v", key, err)
	}
	im.pending = append(im.pending, engine.Write{Key: layout.EventKeys.Key(nil, t.ID, tuple, e.At, e.Seq), Value: value})
	im.attrs.note(im.db, t, e.Attrs)
	return im.maybeFlush()
}

// Checkpoint imports the checkpoint of one key of changes table t.
func (im *Importer) Checkpoint(t *Table, key Key, c Checkpoint) error {
	if err := checkChanges(t); err != nil {
		return err
	}
	tuple, err := im.tuple(t, key)
	if err != nil {
		return err
	}
	value, err := appendCheckpointValue(nil, &c)
	if err != nil {
		return importErr(t, "key %s: checkpoint: %v", key, err)
	}
	im.pending = append(im.pending, engine.Write{Key: layout.CheckpointKey(t.ID, tuple), Value: value})
	return im.maybeFlush()
}

// Batch imports an applied batch id of changes table t and the transaction that
// applied it.
func (im *Importer) Batch(t *Table, id string, tx int64) error {
	if err := checkChanges(t); err != nil {
		return err
	}
	if err := im.begin(t); err != nil {
		return err
	}
	if id == "" || len(id) > MaxBatchIDLen {
		return importErr(t, "batch id must be 1-%d bytes, got %d", MaxBatchIDLen, len(id))
	}
	if tx <= 0 || tx == Infinity {
		return importErr(t, "batch %q: transaction time %d", id, tx)
	}
	im.pending = append(im.pending, engine.Write{Key: layout.BatchKey(t.ID, id), Value: mustMarshal(tx)})
	im.lastTx = max(im.lastTx, tx)
	return im.maybeFlush()
}

// ReserveSK makes the next surrogate key table t hands out at least next (an
// export carries the original counter, which may exceed the largest sk kept).
func (im *Importer) ReserveSK(t *Table, next uint64) error {
	if err := im.begin(t); err != nil {
		return err
	}
	im.nextSK[t.ID] = max(im.nextSK[t.ID], next)
	return nil
}

// AdvanceTx makes the store's last transaction time at least tx, so that the
// next commit comes after the original store's last one (which may be newer
// than any record it kept).
func (im *Importer) AdvanceTx(tx int64) error {
	if tx < 0 || tx == Infinity {
		return fmt.Errorf("%w: last transaction time %d", ErrImport, tx)
	}
	im.lastTx = max(im.lastTx, tx)
	return nil
}

func (im *Importer) maybeFlush() error {
	if len(im.pending) < importFlushWrites {
		return nil
	}
	return im.flush()
}

// flush commits the pending writes with the store's counters.
func (im *Importer) flush() error {
	writes := im.pending
	writes = append(writes, engine.Write{Key: layout.MetaLastTx, Value: mustMarshal(im.lastTx)},
		engine.Write{Key: layout.MetaLastCommit, Value: mustMarshal(im.lastCommit)})
	im.db.mu.RLock()
	for tid, next := range im.nextSK {
		if next != im.db.nextSK[tid] {
			writes = append(writes, engine.Write{Key: layout.SKCounterKey(tid), Value: encoding.AppendUint64(nil, next)})
		}
	}
	writes = append(writes, im.attrs.writes(im.db)...)
	im.db.mu.RUnlock()
	if err := im.db.commit(writes, !im.db.opts.NoSync); err != nil {
		return fmt.Errorf("bitempo: import: %w", err)
	}
	im.pending = im.pending[:0]
	im.db.mu.Lock()
	im.db.lastTx = im.lastTx
	for tid, next := range im.nextSK {
		im.db.nextSK[tid] = next
	}
	im.attrs.publish(im.db)
	im.db.mu.Unlock()
	return nil
}

// Commit writes what is pending and ends the import. After Commit, successful
// or not, the Importer is finished.
func (im *Importer) Commit() error {
	if im.done {
		return fmt.Errorf("bitempo: import already finished")
	}
	defer im.finish()
	if err := im.finishKey(); err != nil {
		return err
	}
	return im.flush()
}

// Abort ends the import, discarding what is pending; batches already flushed
// stay.
func (im *Importer) Abort() {
	if !im.done {
		im.finish()
	}
}

func (im *Importer) finish() {
	im.done = true
	im.pending = nil
	im.db.unlockWriter()
}
