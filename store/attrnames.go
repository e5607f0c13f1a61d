package store

import (
	"fmt"
	"slices"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/engine"
	"github.com/bitempo/bitempo/layout"
)

// This file owns the attribute-name table of each table (keyspace 0x04) and the
// ordinals that records store instead of names:
//
//	0x04 | tid | ordinal (4 bytes BE) -> name
//
// A table's names are numbered 0, 1, 2... in the order its writes (or
// DeclareAttrNames) first used them; a record's attributes are stored by ordinal
// (encoding.AppendRecordPositionalAt). Ordinals are never reused or renumbered. A
// new name is persisted in the commit that first writes a record using it, so a
// reader that meets an ordinal finds its name in the same view. The DB keeps the
// names in memory and learns new ones after each commit; a snapshot that meets an
// ordinal the DB has not learned yet (a commit publishes its batch just before
// the DB learns of it) reads the names from its own view.

// readAttrNames reads the attribute names of table tid from view v, by ordinal.
// Ordinals must run 0, 1, 2... and names must be distinct: records name
// attributes by ordinal, so a gap or a duplicate would misname them.
func readAttrNames(v engine.View, tid uint32) ([]string, error) {
	prefix := layout.AppendTablePrefix(nil, layout.AttrNames, tid)
	it, err := v.NewIter(prefix, encoding.PrefixEnd(prefix))
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var list []string
	for ok := it.First(); ok; ok = it.Next() {
		ord, err := layout.DecodeAttrNameKey(it.Key()[len(prefix):])
		if err != nil {
			return nil, err
		}
		name := string(it.Value())
		if ord != uint32(len(list)) || slices.Contains(list, name) {
			return nil, fmt.Errorf("%w: attribute name %q at ordinal %d of table id %d (names %q)", ErrCorrupt, name, ord, tid, list)
		}
		list = append(list, name)
	}
	return list, it.Error()
}

// loadAttrNames loads the attribute names of table tid at Open.
func (db *DB) loadAttrNames(v engine.View, tid uint32) error {
	list, err := readAttrNames(v, tid)
	if err != nil {
		return err
	}
	ords := make(map[string]uint32, len(list))
	for i, name := range list {
		ords[name] = uint32(i)
	}
	db.attrOrd[tid], db.attrList[tid] = ords, list
	return nil
}

// encodeRecord encodes record v of table t with its attributes by ordinal; every
// name must have one (newAttrs.note). A current record is asserted by this
// commit and holds its number; a retired record leaves its tx_from to its
// history key.
func (w *Writer) encodeRecord(t *Table, v *Version) ([]byte, error) {
	return encodeRecordOrdinals(v, w.number, w.ordinalOf(t))
}

// ordinalOf returns the ordinal of each name of t as this write numbers it.
func (w *Writer) ordinalOf(t *Table) func(name string) (uint32, bool) {
	return ordinalsOf(w.db.attrOrd[t.ID], len(w.db.attrList[t.ID]), w.attrs.names[t.ID])
}

// ordinalsOf returns the ordinal of a name: ords holds the ordinals the table
// has committed (base of them), added the names a write in progress numbers
// after them.
func ordinalsOf(ords map[string]uint32, base int, added []string) func(name string) (uint32, bool) {
	return func(name string) (uint32, bool) {
		if o, ok := ords[name]; ok {
			return o, true
		}
		if i := slices.Index(added, name); i >= 0 {
			return uint32(base + i), true
		}
		return 0, false
	}
}

// encodeRecordOrdinals encodes record v with its attributes by ordinal
// (ordinalsOf). A current record holds commit, the number of the commit that
// asserted it (at v.TxFrom); a retired record leaves its tx_from to its
// history key.
func encodeRecordOrdinals(v *Version, commit uint64, ordinal func(name string) (uint32, bool)) ([]byte, error) {
	rv := v.recordValue()
	if v.TxTo != Infinity {
		return encoding.AppendRecordRetiredAt(nil, rv, v.ValidFrom, ordinal)
	}
	rv.TxCommit = commit
	return encoding.AppendRecordPositionalAt(nil, rv, v.ValidFrom, ordinal)
}

// attrNames is the name table of one table as a snapshot knows it.
type attrNames struct {
	s     *Snapshot
	tid   uint32
	names []string
	// nameFn is the method value a.name, made once: a RawAttrs holds it, and
	// a method value made per record would be an allocation per record.
	nameFn func(ord uint32) (string, bool)
}

// name returns the name of ordinal ord, reading the snapshot's own view when
// the DB's names end before it.
func (a *attrNames) name(ord uint32) (string, bool) {
	if int(ord) >= len(a.names) && (!a.reload() || int(ord) >= len(a.names)) {
		return "", false
	}
	return a.names[ord], true
}

// reload reads the names from the snapshot's own view and reports whether it
// found more than a knew.
func (a *attrNames) reload() bool {
	list, err := readAttrNames(a.s.view, a.tid)
	if err != nil || len(list) <= len(a.names) {
		return false
	}
	a.names = list
	return true
}

// attrNames returns the snapshot's name table of t.
func (s *Snapshot) attrNames(t *Table) *attrNames {
	if a := s.names[t.ID]; a != nil {
		return a
	}
	s.db.mu.RLock()
	list := s.db.attrList[t.ID] // append-only: the elements it holds never change
	s.db.mu.RUnlock()
	a := &attrNames{s: s, tid: t.ID, names: list}
	a.nameFn = a.name
	if s.names == nil {
		s.names = map[uint32]*attrNames{}
	}
	s.names[t.ID] = a
	return a
}

// decodeRecord decodes a stored record value of table t, attributes included;
// validFrom is the valid_from of its key, keyTxFrom the tx_from of its key
// (history) or 0 (current index).
func (s *Snapshot) decodeRecord(t *Table, value []byte, validFrom, keyTxFrom int64) (encoding.RecordValue, error) {
	if t.proj != nil {
		return s.decodeProjected(t, value, validFrom, keyTxFrom)
	}
	rv, err := encoding.DecodeRecordAt(value, validFrom, keyTxFrom, s.attrNames(t).name)
	if err != nil {
		return rv, fmt.Errorf("%w: table %q record: %v", ErrCorrupt, t.Name, err)
	}
	return rv, s.mapCommit(t, &rv)
}

// decodeHeadSplit decodes a stored record value of table t but its attributes,
// which it returns in their positional form, unchecked (RawAttrs.Walk checks);
// validFrom and keyTxFrom are as for decodeRecord.
func (s *Snapshot) decodeHeadSplit(t *Table, value []byte, validFrom, keyTxFrom int64) (encoding.RecordValue, []byte, error) {
	rv, attrs, err := encoding.DecodeRecordHeadSplitAt(value, validFrom, keyTxFrom)
	if err != nil {
		return rv, nil, fmt.Errorf("%w: table %q record: %v", ErrCorrupt, t.Name, err)
	}
	return rv, attrs, s.mapCommit(t, &rv)
}

// decodeHead decodes a stored record value of table t but its attributes;
// validFrom and keyTxFrom are as for decodeRecord.
func (s *Snapshot) decodeHead(t *Table, value []byte, validFrom, keyTxFrom int64) (encoding.RecordValue, error) {
	rv, err := encoding.DecodeRecordHeadAt(value, validFrom, keyTxFrom)
	if err != nil {
		return rv, fmt.Errorf("%w: table %q record: %v", ErrCorrupt, t.Name, err)
	}
	return rv, s.mapCommit(t, &rv)
}

// attrName returns the name of attribute ordinal ord of table tid for dumps:
// from memory, else from a fresh view of the store.
func (db *DB) attrName(tid, ord uint32) (string, bool) {
	db.mu.RLock()
	list := db.attrList[tid]
	db.mu.RUnlock()
	if int(ord) < len(list) {
		return list[ord], true
	}
	v, err := db.engine.View()
	if err != nil {
		return "", false
	}
	defer v.Close()
	if list, err = readAttrNames(v, tid); err != nil || int(ord) >= len(list) {
		return "", false
	}
	return list[ord], true
}

// sharedAttrs returns the attributes of a retired record stored without them
// (Writer.shareAttrs): those of its successor, the record of surrogate key sk,
// key tuple and validFrom asserted at txTo (sharedRecord).
func (s *Snapshot) sharedAttrs(t *Table, tuple []byte, validFrom int64, sk uint64, txTo int64) (Attrs, error) {
	value, keyTx, err := s.sharedRecord(t, tuple, validFrom, sk, txTo)
	if err != nil {
		return nil, err
	}
	rv, err := s.decodeRecord(t, value, validFrom, keyTx)
	return rv.Attrs, err
}

// sharedRawAttrs is sharedAttrs in stored, positional form, unchecked
// (RawAttrs.Walk checks).
func (s *Snapshot) sharedRawAttrs(t *Table, tuple []byte, validFrom int64, sk uint64, txTo int64) ([]byte, error) {
	value, keyTx, err := s.sharedRecord(t, tuple, validFrom, sk, txTo)
	if err != nil {
		return nil, err
	}
	_, attrs, err := s.decodeHeadSplit(t, value, validFrom, keyTx)
	return attrs, err
}

// sharedRecord returns the stored record that holds the attributes of a
// retired record stored without them, and the tx_from of its key (0 in the
// current index): its successor, the record of surrogate key sk, key tuple and
// validFrom asserted at txTo, which may share its own with its successor in
// turn. Each step is one or two point reads, not iterator moves, so a caller
// may resolve a record it is iterating over; the value is a copy. Each
// successor was asserted later than the last, so the chain ends.
func (s *Snapshot) sharedRecord(t *Table, tuple []byte, validFrom int64, sk uint64, txTo int64) ([]byte, int64, error) {
	for {
		value, ok, err := s.view.Get(layout.CurrentKeys.Key(nil, t.ID, tuple, validFrom, 0))
		if err != nil {
			return nil, 0, err
		}
		var head encoding.RecordValue
		var keyTx int64 // the tx_from of value's key: 0 in the current index
		if ok {
			if head, err = s.decodeHead(t, value, validFrom, 0); err != nil {
				return nil, 0, err
			}
		}
		if !ok || head.TxFrom != txTo {
			if value, ok, err = s.view.Get(layout.HistoryKeys.Key(nil, t.ID, tuple, validFrom, txTo)); err != nil {
				return nil, 0, err
			}
			if keyTx = txTo; ok {
				head, err = s.decodeHead(t, value, validFrom, keyTx)
			}
		}
		switch {
		case err != nil:
			return nil, 0, err
		case !ok || head.SK != sk || head.TxFrom != txTo:
			return nil, 0, fmt.Errorf("%w: table %q: record of key %x valid from %d shares the attributes of a record of sk %d asserted at %d, which does not exist", ErrCorrupt, t.Name, tuple, validFrom, sk, txTo)
		case !encoding.SharesAttrs(value):
			return value, keyTx, nil
		}
		txTo = head.TxTo
	}
}
