package store

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/layout"
)

// This file decodes raw keys and values (RawScan's output) with the layout of the
// package doc and of events.go, for dumps and debugging.

// FieldKind says how to read the value of a decoded Field.
type FieldKind uint8

// Field kinds.
const (
	// FieldPlain: a number, a name or a rendered structure.
	FieldPlain FieldKind = iota
	// FieldValidTime: an int64 valid-time tick of the entry's table (read it with
	// the table's Axis).
	FieldValidTime
	// FieldTxTime: an int64 transaction time (microseconds since the Unix epoch).
	FieldTxTime
	// FieldKey: a natural key (Key).
	FieldKey
	// FieldAttrs: an attribute record (Attrs).
	FieldAttrs
)

// Field is one named part of a decoded key or value.
type Field struct {
	Name  string
	Kind  FieldKind
	Value any
}

// Entry is one stored key and value, decoded.
type Entry struct {
	RawKV
	// Keyspace is layout.KeyspaceName of the key's first byte.
	Keyspace string
	// Table is the entry's table: from the table id of record keyspaces, or the
	// catalog entry's own table. Nil for meta keys and unknown table ids.
	Table *Table
	// Key is the natural key of the entry, when its keyspace has one.
	Key Key
	// KeyFields are the other parts of the key after the table id and natural key
	// (times, surrogate keys, ordinals, names), in key order.
	KeyFields []Field
	// Value holds the decoded value, field by field.
	Value []Field
	// Err, wrapping ErrCorrupt, says why the key or value did not decode; the
	// fields decoded before the problem are kept.
	Err error
}

// DecodeEntry decodes a raw key and value of this store. It never fails: what
// does not decode is reported in Entry.Err.
func (db *DB) DecodeEntry(kv RawKV) Entry {
	e := Entry{RawKV: kv}
	if len(kv.Key) == 0 {
		e.Keyspace, e.Err = "unknown", fmt.Errorf("%w: empty key", ErrCorrupt)
		return e
	}
	ks, rest := kv.Key[0], kv.Key[1:]
	e.Keyspace = layout.KeyspaceName(ks)
	var err error
	switch ks {
	case layout.Meta:
		err = e.decodeMeta(rest)
	case layout.Catalog:
		err = e.decodeCatalog(db, rest)
	case layout.Commits:
		err = e.decodeCommit()
	default:
		err = e.decodeTableEntry(db, ks, kv.Key)
	}
	switch {
	case errors.Is(err, ErrCorrupt):
		e.Err = fmt.Errorf("%s key %x: %w", e.Keyspace, kv.Key, err)
	case err != nil:
		e.Err = fmt.Errorf("%w: %s key %x: %v", ErrCorrupt, e.Keyspace, kv.Key, err)
	}
	return e
}

func (e *Entry) addKey(name string, kind FieldKind, v any) {
	e.KeyFields = append(e.KeyFields, Field{name, kind, v})
}

func (e *Entry) addValue(name string, kind FieldKind, v any) {
	e.Value = append(e.Value, Field{name, kind, v})
}

func (e *Entry) decodeMeta(name []byte) error {
	e.addKey("name", FieldPlain, string(name))
	var v any
	if err := encoding.UnmarshalBounded(e.RawKV.Value, &v); err != nil {
		return err
	}
	kind := FieldPlain
	if bytes.Equal(name, layout.MetaEraseSecret[1:]) {
		v = "(secret)" // erase.go: it keys the hashes of erased keys
	}
	if bytes.Equal(name, layout.MetaLastTx[1:]) {
		kind = FieldTxTime
		if c, err := encoding.Canonical(v); err == nil {
			if n, ok := c.(int64); ok {
				v = n
			}
		}
	}
	e.addValue("value", kind, v)
	return nil
}

func (e *Entry) decodeCommit() error {
	n, err := layout.DecodeCommitKey(e.RawKV.Key)
	if err != nil {
		return err
	}
	e.addKey("commit", FieldPlain, n)
	tx, err := layout.DecodeCommitValue(e.RawKV.Value)
	e.addValue("tx", FieldTxTime, tx)
	return err
}

func (e *Entry) decodeCatalog(db *DB, name []byte) error {
	e.addKey("name", FieldPlain, string(name))
	e.Table, _ = db.Table(string(name))
	var rec catalogRecord
	if err := encoding.UnmarshalBounded(e.RawKV.Value, &rec); err != nil {
		return err
	}
	d := &rec.Def
	cols := make([]string, len(d.Key))
	for i, c := range d.Key {
		cols[i] = c.Name + " " + c.Type.String()
	}
	e.addValue("id", FieldPlain, rec.ID)
	e.addValue("kind", FieldPlain, d.Kind.String())
	e.addValue("key", FieldPlain, strings.Join(cols, ", "))
	e.addValue("axis", FieldPlain, d.Axis.String())
	for _, f := range []struct {
		name string
		list []string
	}{{"track", d.Track}, {"track_except", d.TrackExcept}, {"group_by", d.GroupBy}} {
		if len(f.list) > 0 {
			e.addValue(f.name, FieldPlain, strings.Join(f.list, ", "))
		}
	}
	if d.Granularity > 0 {
		e.addValue("granularity", FieldPlain, d.Granularity)
	}
	if d.Lateness > 0 {
		e.addValue("lateness", FieldPlain, d.Lateness)
	}
	if d.IgnoreNulls {
		e.addValue("ignore_nulls", FieldPlain, true)
	}
	return nil
}

// decodeTableEntry decodes the keyspaces whose keys start with a table id.
func (e *Entry) decodeTableEntry(db *DB, ks byte, key []byte) error {
	tid, b, err := layout.SplitTableID(key)
	if err != nil {
		return err
	}
	e.Table = db.tableByID(tid)
	e.addKey("table_id", FieldPlain, tid)
	switch ks {
	case layout.SKCounter:
		next, _, err := encoding.DecodeUint64(e.RawKV.Value)
		e.addValue("next_sk", FieldPlain, next)
		return err
	case layout.AttrNames:
		ord, err := layout.DecodeAttrNameKey(b)
		e.addKey("ordinal", FieldPlain, ord)
		e.addValue("name", FieldPlain, string(e.RawKV.Value))
		return err
	case layout.AttrTypes:
		ord, err := layout.DecodeAttrTypeKey(b)
		e.addKey("ordinal", FieldPlain, ord)
		typ, terr := decodeColumnType(e.RawKV.Value)
		e.addValue("type", FieldPlain, typ.String())
		return errors.Join(err, terr)
	case layout.Schemas:
		tx, err := layout.DecodeSchemaKey(b)
		e.addKey("tx", FieldTxTime, tx)
		var d Declaration
		derr := encoding.UnmarshalBounded(e.RawKV.Value, &d)
		e.addValue("columns", FieldPlain, FormatColumns(d.Columns))
		e.addValue("strict", FieldPlain, d.Strict)
		return errors.Join(err, derr)
	case layout.Batches:
		e.addKey("batch", FieldPlain, string(b))
		tx, err := decodeBatchValue(e.RawKV.Value)
		e.addValue("tx", FieldTxTime, tx)
		return err
	}
	if e.Table == nil {
		return fmt.Errorf("table id %d is not in the catalog", tid)
	}
	t := e.Table
	switch ks {
	case layout.Current:
		return e.decodeRecord(db, t, layout.CurrentKeys, b)
	case layout.History:
		return e.decodeRecord(db, t, layout.HistoryKeys, b)
	case layout.Newest:
		return e.decodeNewest(db, t, b)
	case layout.SKIndex:
		return e.decodeSKIndex(t, b)
	case layout.TxLog:
		return e.decodeTxLog(t, b)
	case layout.Events:
		return e.decodeEvent(t, b)
	case layout.Groups:
		return e.decodeGroup(db, t, b)
	case layout.Checkpoints:
		return e.decodeCheckpoint(t, b)
	case layout.ErasedSK, layout.ErasedKey:
		return e.decodeErasedEntry(ks, b)
	}
	return fmt.Errorf("unknown keyspace 0x%02x", ks)
}

// decodeTuple decodes the natural key at the front of b into e.Key.
func (e *Entry) decodeTuple(t *Table, b []byte) ([]byte, error) {
	tuple, rest, err := t.splitTuple(b)
	if err != nil {
		return nil, err
	}
	e.Key, err = t.DecodeKey(tuple)
	return rest, err
}

func (e *Entry) decodeRecord(db *DB, t *Table, keys layout.RecordCodec, b []byte) error {
	from, txFrom, err := e.decodeRecordKey(t, keys, b)
	if err != nil {
		return err
	}
	return e.decodeRecordValue(db, t, e.RawKV.Value, from, txFrom)
}

// decodeNewest decodes a newest-version entry: the key, then the valid_from
// and the current record its value holds.
func (e *Entry) decodeNewest(db *DB, t *Table, b []byte) error {
	rest, err := e.decodeTuple(t, b)
	if err != nil {
		return err
	}
	if len(rest) != 0 {
		return fmt.Errorf("%d bytes after the key", len(rest))
	}
	from, record, err := layout.NewestKeys.DecodeValue(e.RawKV.Value)
	if err != nil {
		return err
	}
	e.addValue("valid_from", FieldValidTime, from)
	return e.decodeRecordValue(db, t, record, from, 0)
}

// decodeRecordKey decodes tuple | desc(valid_from) [| desc(tx_from)], the tail of
// a record key in 0x10 / 0x11 and of a group index key, and returns its
// valid_from and tx_from (0 for a current record).
func (e *Entry) decodeRecordKey(t *Table, keys layout.RecordCodec, b []byte) (int64, int64, error) {
	tuple, from, txFrom, err := keys.Decode(t.splitTuple, b)
	if err != nil {
		return 0, 0, err
	}
	if e.Key, err = t.DecodeKey(tuple); err != nil {
		return 0, 0, err
	}
	e.addKey("valid_from", FieldValidTime, from)
	if keys.Keyspace() == layout.History {
		e.addKey("tx_from", FieldTxTime, txFrom)
	}
	return from, txFrom, nil
}

// decodeRecordValue decodes value, a stored record value of table t whose key
// holds validFrom and keyTxFrom (0 for a current record).
func (e *Entry) decodeRecordValue(db *DB, t *Table, value []byte, validFrom, keyTxFrom int64) error {
	rv, err := encoding.DecodeRecordAt(value, validFrom, keyTxFrom, func(ord uint32) (string, bool) { return db.attrName(t.ID, ord) })
	if err != nil {
		return err
	}
	if rv.TxCommit != 0 {
		if rv.TxFrom, err = db.commitTime(rv.TxCommit); err != nil {
			return err
		}
	}
	e.addValue("valid_to", FieldValidTime, rv.ValidTo)
	e.addValue("tx_from", FieldTxTime, rv.TxFrom)
	e.addValue("tx_to", FieldTxTime, rv.TxTo)
	e.addValue("sk", FieldPlain, rv.SK)
	if rv.Flags&encoding.FlagInferred != 0 {
		e.addValue("inferred", FieldPlain, true)
	}
	if encoding.SharesAttrs(value) {
		e.addValue("attrs", FieldPlain, "those of the record asserted at tx_to")
		return nil
	}
	e.addValue("attrs", FieldAttrs, rv.Attrs)
	return nil
}

func (e *Entry) decodeSKIndex(t *Table, b []byte) error {
	sk, txFrom, err := layout.SKIndexKeys.DecodeKey(b)
	if err != nil {
		return err
	}
	e.addKey("sk", FieldPlain, sk)
	e.addKey("tx_from", FieldTxTime, txFrom)
	tuple, from, err := layout.SKIndexKeys.DecodeValue(t.splitTuple, e.RawKV.Value)
	if err != nil {
		return err
	}
	if e.Key, err = t.DecodeKey(tuple); err != nil {
		return err
	}
	e.addValue("valid_from", FieldValidTime, from)
	return nil
}

// decodeTxLog decodes a transaction-log entry: per change its op, valid_from
// and, for a retire, the tx_from of the retired record.
func (e *Entry) decodeTxLog(t *Table, b []byte) error {
	tx, ord, err := layout.TxLogKeys.Decode(b)
	if err != nil {
		return err
	}
	e.addKey("tx", FieldTxTime, tx)
	e.addKey("ordinal", FieldPlain, ord)
	if isErasure(e.RawKV.Value) {
		return e.decodeErasure(t, tx)
	}
	tuple, changes, err := decodeLogEntry(t, tx, e.RawKV.Value, nil)
	if err != nil {
		return err
	}
	if e.Key, err = t.DecodeKey(tuple); err != nil {
		return err
	}
	for _, c := range changes {
		e.addValue("op", FieldPlain, c.op.String())
		e.addValue("valid_from", FieldValidTime, c.validFrom)
		if c.op == LogRetire {
			e.addValue("tx_from", FieldTxTime, c.txFrom)
		}
	}
	return nil
}

func (e *Entry) decodeEvent(t *Table, b []byte) error {
	rest, err := e.decodeTuple(t, b)
	if err != nil {
		return err
	}
	at, seq, err := layout.EventKeys.DecodePos(rest)
	if err != nil {
		return err
	}
	e.addKey("at", FieldValidTime, at)
	e.addKey("seq", FieldPlain, seq)
	ev, err := decodeEventValue(e.RawKV.Value, at, seq)
	if err != nil {
		return err
	}
	e.addValue("op", FieldPlain, ev.Op.String())
	if ev.Op == EventUpsert {
		e.addValue("attrs", FieldAttrs, ev.Attrs)
	}
	return nil
}

func (e *Entry) decodeCheckpoint(t *Table, b []byte) error {
	if _, err := e.decodeTuple(t, b); err != nil {
		return err
	}
	c, err := decodeCheckpointValue(e.RawKV.Value)
	if err != nil {
		return err
	}
	e.addValue("through", FieldValidTime, c.Through)
	e.addValue("open", FieldPlain, c.Open)
	if c.Open {
		e.addValue("from", FieldValidTime, c.From)
		e.addValue("attrs", FieldAttrs, c.Attrs)
	}
	return nil
}

func (e *Entry) decodeGroup(db *DB, t *Table, b []byte) error {
	group, rest, err := encoding.DecodeKeyPrefix(b, len(t.GroupBy))
	if err != nil {
		return err
	}
	e.addKey("group", FieldKey, Key(group))
	if len(rest) == 0 || rest[0] > groupHistory {
		return fmt.Errorf("missing or unknown group index marker")
	}
	keys := layout.CurrentKeys
	if rest[0] == groupHistory {
		keys = layout.HistoryKeys
	}
	from, txFrom, err := e.decodeRecordKey(t, keys, rest[1:])
	if err != nil {
		return err
	}
	return e.decodeRecordValue(db, t, e.RawKV.Value, from, txFrom)
}
