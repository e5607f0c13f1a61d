package store

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/bitempo/bitempo/engine"
	"github.com/bitempo/bitempo/layout"
)

// This file keeps the newest-version keyspace (layout's 0x14): for every key
// with current records, a copy of the one with the greatest valid_from, so
// that a snapshot at a valid time at or after a key's newest version reads one
// entry per key instead of stepping over the key's older versions in the
// current index (scanCurrentAt).
//
// Invariant: after every commit, the entry of a key is exactly the first
// record of the key in the current index (its valid_from and its value, byte
// for byte), and a key without current records has no entry. Verify checks it.
//
// No write path maintains the keyspace by itself. A commit derives the
// entries from its own current-index writes (newestDeriver): for each key it
// wrote there, it takes the first record of what the writes and the key's
// committed records leave, and writes it as the entry, or deletes the entry. So every path that changes
// the current index through a Writer (assert, retire, erase, the change
// feed's derivation) keeps the keyspace without knowing of it; a commit
// spilled to disk derives it from the merged stream it ingests; an import,
// which writes records without a Writer, writes each key's entry itself
// (Importer.finishKey); dropping a table removes the table's range of every
// keyspace.

// newestDeriver turns a transaction's current-index writes, given in key
// order with one write per key (the last the transaction made), into the
// writes of the newest-version keyspace that leave its invariant true. It
// reads the committed state from snap.
type newestDeriver struct {
	snap *Snapshot
	it   engine.Iter // over the snapshot's current index, made on first use
	pfx  []byte      // the current-index key prefix (0x10 | tid | tuple) of ops
	ops  []engine.Write
	// entry and newest are buffers: the key's entry key, and the
	// current-index key of the record it names.
	entry, newest []byte
	// known holds, by current-index key prefix, the valid_from of keys'
	// newest committed records that the transaction's reads met (nil: none).
	known map[string]knownNewest
	emit  func(engine.Write) error
}

// add takes the next current-index write.
func (d *newestDeriver) add(x engine.Write) error {
	n := layout.TableIDEnd(x.Key)
	if n == 0 {
		return fmt.Errorf("%w: current-index key %x has no table id", engine.ErrCorrupt, x.Key)
	}
	pfx, _, err := layout.CurrentKeys.Split(x.Key, n)
	if err != nil {
		return err
	}
	if !bytes.Equal(pfx, d.pfx) {
		if err := d.flush(); err != nil {
			return err
		}
		d.pfx = append(d.pfx[:0], pfx...)
	}
	d.ops = append(d.ops, x)
	return nil
}

// flush writes the entry of the key gathered so far. The key's records after
// the commit are the merge, in key order (newest valid_from first), of its
// committed records and the commit's writes, a write replacing or deleting the
// committed record of its key; the first record the merge keeps is the entry.
//
// The key's newest committed record decides most keys. The transaction's own
// reads of the key through the Writer noted it (known), or one point read of
// the key's committed entry names it. A write at or after that record's
// valid_from is the new entry (nothing committed is newer), and when no write
// touches that record or comes before it, the entry stays. Only a commit that
// deletes the newest record without writing a newer one merges with the
// current index.
func (d *newestDeriver) flush() (err error) {
	if len(d.ops) == 0 {
		return nil
	}
	ops := d.ops
	d.ops = d.ops[:0]
	k, noted := d.known[string(d.pfx)]
	if !noted {
		d.entry = layout.NewestKeys.KeyOf(d.entry[:0], d.pfx)
		value, ok, err := d.snap.view.Get(d.entry)
		if err != nil {
			return err
		}
		if k.exists = ok; ok {
			if k.from, _, err = layout.NewestKeys.DecodeValue(value); err != nil {
				return err
			}
		}
	}
	has := k.exists
	var newest []byte // the current-index key of the newest committed record
	if has {
		newest = layout.CurrentKeys.AppendValid(append(d.newest[:0], d.pfx...), k.from)
		d.newest = newest
	}
	switch first := slices.IndexFunc(ops, func(x engine.Write) bool { return !x.Delete }); {
	case first >= 0 && (!has || bytes.Compare(ops[first].Key, newest) <= 0):
		return d.emitEntry(ops[first].Key, ops[first].Value)
	case has && !slices.ContainsFunc(ops, func(x engine.Write) bool { return bytes.Equal(x.Key, newest) }):
		return nil // the newest committed record stays the newest
	}
	return d.merge(ops)
}

// merge is flush's way for a key whose newest committed record the commit
// deleted: the merge of the key's writes with its records in the current
// index.
func (d *newestDeriver) merge(ops []engine.Write) (err error) {
	if d.it == nil {
		if d.it, err = d.snap.newIter([]byte{layout.Current}, []byte{layout.Current + 1}); err != nil {
			return err
		}
	}
	// The key's records are within its engine prefix (layout.Split), so the
	// bloom filters skip every table file without them.
	ok := d.it.SeekPrefixGE(d.pfx)
	committed := ok && bytes.HasPrefix(d.it.Key(), d.pfx)
	first := true // the committed record under the iterator is the key's first
	for i := 0; ; {
		stored := ok && bytes.HasPrefix(d.it.Key(), d.pfx)
		switch {
		case i == len(ops) && !stored:
			if committed { // every record of the key is gone
				return d.emit(engine.Write{Key: layout.NewestKeys.KeyOf(nil, d.pfx), Delete: true})
			}
			return d.it.Error()
		case i < len(ops) && (!stored || bytes.Compare(ops[i].Key, d.it.Key()) <= 0):
			if stored && bytes.Equal(ops[i].Key, d.it.Key()) {
				ok, first = d.it.Next(), false // replaced or deleted
			}
			if !ops[i].Delete {
				return d.emitEntry(ops[i].Key, ops[i].Value)
			}
			i++
		default: // a committed record no write of the commit touches
			if first {
				return nil // the entry stays as it is
			}
			return d.emitEntry(d.it.Key(), d.it.Value())
		}
	}
}

// emitEntry writes the entry of the current record key, value.
func (d *newestDeriver) emitEntry(key, value []byte) error {
	from, err := layout.CurrentKeys.ValidFrom(key, len(d.pfx))
	if err != nil {
		return err
	}
	return d.emit(engine.Write{Key: layout.NewestKeys.KeyOf(nil, d.pfx), Value: layout.NewestKeys.Value(nil, from, value)})
}

// finish writes the last key's entry and releases the iterator.
func (d *newestDeriver) finish() error {
	err := d.flush()
	if d.it != nil {
		err = firstError(err, d.it.Close())
		d.it = nil
	}
	return err
}

// knownNewest is what a read of a key's committed current records says of
// its newest: whether it has one, and its valid_from.
type knownNewest struct {
	from   int64
	exists bool
}

// noteNewest records what versions, every current version of the key tuple
// of t or its tail in ascending valid order as the Writer's snapshot holds
// them, say of the key's newest record, so that the commit derives the key's
// entry without reading it (newestDeriver.flush).
func (w *Writer) noteNewest(t *Table, tuple []byte, versions []Version) {
	if w.known == nil {
		w.known = map[string]knownNewest{}
	}
	var k knownNewest
	if n := len(versions); n > 0 {
		k = knownNewest{from: versions[n-1].ValidFrom, exists: true}
	}
	w.known[string(layout.CurrentKeys.KeyPrefix(nil, t.ID, tuple))] = k
}

// KeyVersionsTail is Snapshot.KeyVersionsTail on the Writer's snapshot. The
// versions read end with the key's newest (the scan starts there), which the
// commit's derivation of the key's newest-version entry then knows.
func (w *Writer) KeyVersionsTail(t *Table, tuple []byte, from int64, before int) ([]Version, bool, error) {
	vs, complete, err := w.snap.KeyVersionsTail(t, tuple, from, before)
	if err == nil {
		w.noteNewest(t, tuple, vs)
	}
	return vs, complete, err
}

// KeyVersions is Snapshot.KeyVersions on the Writer's snapshot at the latest
// transaction time, noting the key's newest version as KeyVersionsTail does.
func (w *Writer) KeyVersions(t *Table, tuple []byte) ([]Version, error) {
	vs, err := w.snap.KeyVersions(t, tuple, Infinity)
	if err == nil {
		w.noteNewest(t, tuple, vs)
	}
	return vs, err
}

// newestWrites returns the newest-version writes of the transaction's
// current-index writes held in memory (a transaction that did not spill).
func (w *Writer) newestWrites() ([]engine.Write, error) {
	var cur []engine.Write
	for _, ws := range [3][]engine.Write{w.retires, w.asserts, w.other} {
		for _, x := range ws {
			if len(x.Key) > 0 && x.Key[0] == layout.Current {
				cur = append(cur, x)
			}
		}
	}
	if len(cur) == 0 {
		return nil, nil
	}
	var out []engine.Write
	d := &newestDeriver{snap: w.snap, known: w.known, emit: func(x engine.Write) error { out = append(out, x); return nil }}
	for _, x := range sortedWrites(cur) {
		if err := d.add(x); err != nil {
			return nil, firstError(err, d.finish())
		}
	}
	return out, d.finish()
}

// verifyNewest checks the newest-version keyspace of t against the current
// index (the invariant in the file comment): every key's entry is its first
// current record, and no entry names a key without current records. It walks
// both keyspaces once, in key order, holding one key prefix. A current-index
// key that does not parse is reported and passed over.
func verifyNewest(s *Snapshot, t *Table, rep *Report) (err error) {
	curLower := layout.CurrentKeys.TablePrefix(nil, t.ID)
	cur, err := s.newIter(curLower, layout.CurrentKeys.TablePrefix(nil, t.ID+1))
	if err != nil {
		return err
	}
	defer func() { err = firstError(err, cur.Close()) }()
	nwLower := layout.NewestKeys.TablePrefix(nil, t.ID)
	nw, err := s.newIter(nwLower, layout.NewestKeys.TablePrefix(nil, t.ID+1))
	if err != nil {
		return err
	}
	defer func() { err = firstError(err, nw.Close()) }()
	var done, want []byte // the key prefix checked last; its entry's key
	okNw := nw.First()
	for ok := cur.First(); ok; ok = cur.Next() {
		kp, from, err := layout.CurrentKeys.Split(cur.Key(), len(curLower))
		if err != nil {
			rep.add(Problem{Invariant: 0, Table: t.Name, Detail: err.Error()})
			continue
		}
		if done != nil && bytes.Equal(kp, done) {
			continue // an older record of the key checked
		}
		done = append(done[:0], kp...)
		want = layout.NewestKeys.KeyOf(want[:0], kp)
		for ; okNw && bytes.Compare(nw.Key(), want) < 0; okNw = nw.Next() {
			newestProblem(t, nw.Key()[len(nwLower):], newestOrphan, rep)
		}
		if !okNw || !bytes.Equal(nw.Key(), want) {
			newestProblem(t, kp[len(curLower):], newestMissing, rep)
			continue
		}
		if nwFrom, record, err := layout.NewestKeys.DecodeValue(nw.Value()); err != nil || nwFrom != from || !bytes.Equal(record, cur.Value()) {
			newestProblem(t, kp[len(curLower):], fmt.Sprintf(newestStale, nwFrom, from), rep)
		}
		okNw = nw.Next()
	}
	for ; okNw; okNw = nw.Next() {
		newestProblem(t, nw.Key()[len(nwLower):], newestOrphan, rep)
	}
	return firstError(cur.Error(), nw.Error())
}

// What verifyNewest reports.
const (
	newestOrphan  = "newest-version entry of a key without current records"
	newestMissing = "key with current records has no newest-version entry"
	newestStale   = "newest-version entry (valid_from %d) is not the key's first current record (valid_from %d)"
)

func newestProblem(t *Table, tuple []byte, detail string, rep *Report) {
	key, _ := t.DecodeKey(tuple)
	rep.add(Problem{Invariant: 5, Table: t.Name, Key: key, Detail: detail})
}
