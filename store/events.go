package store

import (
	"bytes"
	"errors"
	"fmt"
	"iter"
	"slices"

	"github.com/vmihailenco/msgpack/v5"
	"github.com/vmihailenco/msgpack/v5/msgpcode"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/engine"
	"github.com/bitempo/bitempo/layout"
)

// This file owns the keyspaces of changes tables: the per-key event log (0x20),
// the applied batch ids (0x21) and the per-key checkpoints that replace the part
// of an event log older than the table's lateness horizon (0x22):
//
//	0x22 checkpoints | tid | tuple -> msgpack [through, open, from, attrs | nil]
//	    The derivation state of a key just before valid time `through`: every
//	    event with a (truncated) valid time before `through` has been compacted
//	    away, and the key's versions derive from this state plus the events
//	    left in 0x20.

// EventOp is the operation of a logged CDC event.
type EventOp uint8

// Event operations. The zero value is not an operation, so an event whose
// operation was never set is rejected rather than read as an upsert.
const (
	EventUpsert EventOp = 1
	EventDelete EventOp = 2
)

func (op EventOp) String() string {
	switch op {
	case EventUpsert:
		return "upsert"
	case EventDelete:
		return "delete"
	}
	return fmt.Sprintf("EventOp(%d)", uint8(op))
}

// LogEvent is one entry of a changes table's event log: the event of a key at
// valid time At, ordered among events with equal At by Seq. The log holds at most
// one event per (At, Seq); package txn resolves ties before writing.
type LogEvent struct {
	At, Seq int64
	Op      EventOp
	// Attrs are the upsert's attributes as received (a partial update lacks some);
	// nil for a delete.
	Attrs Attrs
}

// Checkpoint is the compacted form of the part of a key's event log older than
// Through: the derivation state just before Through. When Open, a version that
// started at From is still open there and its attributes so far are Attrs.
type Checkpoint struct {
	Through int64
	Open    bool
	From    int64
	Attrs   Attrs
}

// BatchRecord is an applied batch id and the transaction that committed it.
type BatchRecord struct {
	ID string
	Tx int64
}

// MaxBatchIDLen is the longest batch id, in bytes, a changes table records.
const MaxBatchIDLen = 1024

// Event values are a two-element msgpack array [op, attrs], attrs being nil for a
// delete. The bytes are deterministic: a fixed header and encoding.AppendAttrs.
const eventHeader = 0x92 // msgpack fixarray of 2

// appendEventValue appends the value of e to dst.
func appendEventValue(dst []byte, e *LogEvent) ([]byte, error) {
	switch e.Op {
	case EventDelete:
		return append(dst, eventHeader, byte(EventDelete), msgpcode.Nil), nil
	case EventUpsert:
		return encoding.AppendAttrs(append(dst, eventHeader, byte(EventUpsert)), e.Attrs)
	}
	return dst, fmt.Errorf("%w: event at %d seq %d: invalid op %d", ErrInvalidUse, e.At, e.Seq, e.Op)
}

// decodeEventValue decodes an event value; at and seq come from its key.
func decodeEventValue(b []byte, at, seq int64) (LogEvent, error) {
	e := LogEvent{At: at, Seq: seq}
	if len(b) < 3 || b[0] != eventHeader {
		return e, fmt.Errorf("%w: event at %d seq %d: bad header %x", ErrCorrupt, at, seq, b[:min(len(b), 2)])
	}
	e.Op = EventOp(b[1])
	switch e.Op {
	case EventDelete:
		if len(b) != 3 || b[2] != msgpcode.Nil {
			return e, fmt.Errorf("%w: event at %d seq %d: delete with a payload", ErrCorrupt, at, seq)
		}
	case EventUpsert:
		attrs, err := encoding.DecodeAttrs(b[2:])
		if err != nil {
			return e, fmt.Errorf("%w: event at %d seq %d: %v", ErrCorrupt, at, seq, err)
		}
		e.Attrs = attrs
	default:
		return e, fmt.Errorf("%w: event at %d seq %d: op %d", ErrCorrupt, at, seq, b[1])
	}
	return e, nil
}

// appendCheckpointValue appends the value of c to dst.
func appendCheckpointValue(dst []byte, c *Checkpoint) ([]byte, error) {
	w := bytes.NewBuffer(dst)
	enc := msgpack.GetEncoder()
	defer msgpack.PutEncoder(enc)
	enc.Reset(w)
	for _, err := range []error{enc.EncodeArrayLen(4), enc.EncodeInt(c.Through), enc.EncodeBool(c.Open), enc.EncodeInt(c.From)} {
		if err != nil {
			return dst, err
		}
	}
	if !c.Open {
		return append(w.Bytes(), msgpcode.Nil), nil
	}
	return encoding.AppendAttrs(w.Bytes(), c.Attrs)
}

// decodeCheckpointValue decodes a checkpoint value.
func decodeCheckpointValue(b []byte) (Checkpoint, error) {
	var c Checkpoint
	bad := func(err error) (Checkpoint, error) {
		return Checkpoint{}, fmt.Errorf("%w: checkpoint %x: %v", ErrCorrupt, b[:min(len(b), 32)], err)
	}
	r := bytes.NewReader(b)
	dec := msgpack.GetDecoder()
	defer msgpack.PutDecoder(dec)
	dec.Reset(r)
	n, err := dec.DecodeArrayLen()
	if err != nil || n != 4 {
		return bad(fmt.Errorf("header (array of %d, %v)", n, err))
	}
	if c.Through, err = dec.DecodeInt64(); err != nil {
		return bad(err)
	}
	if c.Open, err = dec.DecodeBool(); err != nil {
		return bad(err)
	}
	if c.From, err = dec.DecodeInt64(); err != nil {
		return bad(err)
	}
	rest := b[len(b)-r.Len():]
	if !c.Open {
		if len(rest) != 1 || rest[0] != msgpcode.Nil {
			return bad(fmt.Errorf("closed checkpoint with attributes"))
		}
		return c, nil
	}
	if c.Attrs, err = encoding.DecodeAttrs(rest); err != nil {
		return bad(err)
	}
	return c, nil
}

// checkChanges returns an error unless t is a changes table.
func checkChanges(t *Table) error {
	if t.Kind != Changes {
		return fmt.Errorf("%w: table %q is a %s table, not a changes table", ErrInvalidTable, t.Name, t.Kind)
	}
	return nil
}

// PutEvent writes e into the event log of the key (encoded as tuple) of changes
// table t, replacing the event at the same (At, Seq) if any.
func (w *Writer) PutEvent(t *Table, tuple []byte, e LogEvent) error {
	if err := checkChanges(t); err != nil {
		return err
	}
	value, err := appendEventValue(nil, &e)
	if err != nil {
		return err
	}
	w.set(layout.EventKeys.Key(nil, t.ID, tuple, e.At, e.Seq), value)
	return nil
}

// DeleteEvent removes the event at (at, seq) from the key's event log.
func (w *Writer) DeleteEvent(t *Table, tuple []byte, at, seq int64) {
	w.del(layout.EventKeys.Key(nil, t.ID, tuple, at, seq))
}

// PutCheckpoint writes the checkpoint of a key.
func (w *Writer) PutCheckpoint(t *Table, tuple []byte, c Checkpoint) error {
	if err := checkChanges(t); err != nil {
		return err
	}
	value, err := appendCheckpointValue(nil, &c)
	if err != nil {
		return err
	}
	w.set(layout.CheckpointKey(t.ID, tuple), value)
	return nil
}

// PutBatch records that batch id was applied to changes table t by this
// transaction.
func (w *Writer) PutBatch(t *Table, id string) error {
	if err := checkChanges(t); err != nil {
		return err
	}
	if id == "" || len(id) > MaxBatchIDLen {
		return fmt.Errorf("%w: table %q: batch id must be 1-%d bytes, got %d", ErrInvalidUse, t.Name, MaxBatchIDLen, len(id))
	}
	w.set(layout.BatchKey(t.ID, id), mustMarshal(w.Tx()))
	return nil
}

// KeyEvents yields the events of a key (encoded as tuple) in (At, Seq) order,
// starting at the first event at or after (fromAt, fromSeq). Stop early by
// breaking out of the loop; the iterator is closed on every path.
func (s *Snapshot) KeyEvents(t *Table, tuple []byte, fromAt, fromSeq int64) iter.Seq2[LogEvent, error] {
	return func(yield func(LogEvent, error) bool) {
		prefix := layout.EventKeys.KeyPrefix(nil, t.ID, tuple)
		it, err := s.newIter(prefix, encoding.PrefixEnd(prefix))
		if err != nil {
			yield(LogEvent{}, err)
			return
		}
		defer it.Close()
		seek := layout.EventKeys.AppendPos(slices.Clip(prefix), fromAt, fromSeq)
		for ok := it.SeekPrefixGE(seek); ok; ok = it.Next() {
			e, err := decodeEvent(t, it.Key()[len(prefix):], it.Value())
			if !yield(e, err) || err != nil {
				return
			}
		}
		if err := it.Error(); err != nil {
			yield(LogEvent{}, err)
		}
	}
}

// LastEvent returns the key's event with the greatest (At, Seq), if any.
func (s *Snapshot) LastEvent(t *Table, tuple []byte) (LogEvent, bool, error) {
	return s.eventBefore(t, tuple, func(prefix []byte) []byte { return encoding.PrefixEnd(prefix) })
}

// EventBefore returns the key's event with the greatest (At, Seq) before
// (at, seq), if any.
func (s *Snapshot) EventBefore(t *Table, tuple []byte, at, seq int64) (LogEvent, bool, error) {
	return s.eventBefore(t, tuple, func(prefix []byte) []byte {
		return layout.EventKeys.AppendPos(slices.Clip(prefix), at, seq)
	})
}

// eventBefore returns the last event of the key before the bound that bound
// builds from the key's event-log prefix.
func (s *Snapshot) eventBefore(t *Table, tuple []byte, bound func(prefix []byte) []byte) (LogEvent, bool, error) {
	if s.closed {
		return LogEvent{}, false, ErrClosed
	}
	it, err := s.iter(layout.Events)
	if err != nil {
		return LogEvent{}, false, err
	}
	prefix := layout.EventKeys.KeyPrefix(s.buf[:0], t.ID, tuple)
	s.buf = prefix
	if !it.SeekLT(bound(prefix)) || !bytes.HasPrefix(it.Key(), prefix) {
		return LogEvent{}, false, it.Error()
	}
	e, err := decodeEvent(t, it.Key()[len(prefix):], it.Value())
	return e, err == nil, err
}

// decodeEvent decodes an event from the part of its key after the tuple and its
// value.
func decodeEvent(t *Table, suffix, value []byte) (LogEvent, error) {
	at, seq, err := layout.EventKeys.DecodePos(suffix)
	if err != nil {
		return LogEvent{}, fmt.Errorf("table %q: %w", t.Name, err)
	}
	return decodeEventValue(value, at, seq)
}

// Checkpoint returns the checkpoint of a key, if its event log was compacted.
func (s *Snapshot) Checkpoint(t *Table, tuple []byte) (Checkpoint, bool, error) {
	if s.closed {
		return Checkpoint{}, false, ErrClosed
	}
	raw, ok, err := s.view.Get(layout.CheckpointKey(t.ID, tuple))
	if err != nil || !ok {
		return Checkpoint{}, false, err
	}
	c, err := decodeCheckpointValue(raw)
	if err != nil {
		return Checkpoint{}, false, fmt.Errorf("table %q: %w", t.Name, err)
	}
	return c, true, nil
}

// BatchTx returns the transaction that applied batch id to table t, if any.
func (s *Snapshot) BatchTx(t *Table, id string) (int64, bool, error) {
	if s.closed {
		return 0, false, ErrClosed
	}
	raw, ok, err := s.view.Get(layout.BatchKey(t.ID, id))
	if err != nil || !ok {
		return 0, false, err
	}
	tx, err := decodeBatchValue(raw)
	if err != nil {
		return 0, false, fmt.Errorf("%w: table %q batch %q: %v", ErrCorrupt, t.Name, id, err)
	}
	return tx, true, nil
}

func decodeBatchValue(raw []byte) (int64, error) {
	var tx int64
	if len(raw) > 9 {
		return 0, fmt.Errorf("value of %d bytes", len(raw))
	}
	err := encoding.UnmarshalBounded(raw, &tx)
	return tx, err
}

// Batches yields the batch ids applied to table t, in byte order of the id.
func (s *Snapshot) Batches(t *Table) iter.Seq2[BatchRecord, error] {
	return func(yield func(BatchRecord, error) bool) {
		prefix := layout.AppendTablePrefix(nil, layout.Batches, t.ID)
		it, err := s.newIter(prefix, encoding.PrefixEnd(prefix))
		if err != nil {
			yield(BatchRecord{}, err)
			return
		}
		defer it.Close()
		for ok := it.First(); ok; ok = it.Next() {
			id := string(it.Key()[len(prefix):])
			tx, err := decodeBatchValue(it.Value())
			if err != nil {
				err = fmt.Errorf("%w: table %q batch %q: %v", ErrCorrupt, t.Name, id, err)
			}
			if !yield(BatchRecord{ID: id, Tx: tx}, err) || err != nil {
				return
			}
		}
		if err := it.Error(); err != nil {
			yield(BatchRecord{}, err)
		}
	}
}

// ChangesKeys returns, in ascending byte order, every key tuple of table t that
// has events, a checkpoint or current versions: the keys whose versions a
// from-scratch derivation must account for. It holds every tuple in memory;
// ScanChangesKeys yields them one at a time.
func (s *Snapshot) ChangesKeys(t *Table) ([][]byte, error) {
	var out [][]byte
	for tuple, err := range s.ScanChangesKeys(t) {
		if err != nil {
			return nil, err
		}
		out = append(out, bytes.Clone(tuple))
	}
	return out, nil
}

// ScanChangesKeys yields the tuples of ChangesKeys, in the same ascending byte
// order, one at a time: it merges the table's event log, checkpoints and
// current index with one iterator each, stepping over the rest of a key's
// entries with a seek, so what it holds is three iterators and one tuple,
// however many keys the table has. The tuple yielded is valid until the loop's
// next iteration (copy it to keep it). A key that does not parse is an error
// wrapping ErrCorrupt, the last pair it yields.
func (s *Snapshot) ScanChangesKeys(t *Table) iter.Seq2[[]byte, error] {
	return func(yield func([]byte, error) bool) {
		var cursors [3]changesCursor
		defer func() {
			for i := range cursors {
				if cursors[i].it != nil {
					_ = cursors[i].it.Close()
				}
			}
		}()
		for i, ks := range []byte{layout.Events, layout.Checkpoints, layout.Current} {
			c := &cursors[i]
			c.prefix = layout.AppendTablePrefix(nil, ks, t.ID)
			it, err := s.newIter(c.prefix, encoding.PrefixEnd(c.prefix))
			if err != nil {
				yield(nil, err)
				return
			}
			c.it = it
			if err := c.settle(t, it.First()); err != nil {
				yield(nil, err)
				return
			}
		}
		var cur, seek []byte
		for {
			var low []byte
			for i := range cursors {
				if c := &cursors[i]; c.tuple != nil && (low == nil || bytes.Compare(c.tuple, low) < 0) {
					low = c.tuple
				}
			}
			if low == nil {
				return
			}
			cur = append(cur[:0], low...)
			if !yield(cur, nil) {
				return
			}
			for i := range cursors {
				c := &cursors[i]
				if c.tuple == nil || !bytes.Equal(c.tuple, cur) {
					continue
				}
				// The keyspace byte of the prefix is not 0xff, so the end
				// exists.
				seek = encoding.PrefixEndInPlace(append(append(seek[:0], c.prefix...), cur...))
				if err := c.settle(t, c.it.SeekGE(seek)); err != nil {
					yield(nil, err)
					return
				}
			}
		}
	}
}

// changesCursor is one keyspace of ScanChangesKeys: its iterator and the tuple
// of the key it is on (nil once it is exhausted).
type changesCursor struct {
	it     engine.Iter
	prefix []byte
	tuple  []byte
}

// settle records the tuple of the key the cursor's iterator moved to (ok), or
// its end, returning the iterator's error or a key that does not parse.
func (c *changesCursor) settle(t *Table, ok bool) error {
	c.tuple = nil
	if !ok {
		return c.it.Error()
	}
	tuple, _, err := t.splitTuple(c.it.Key()[len(c.prefix):])
	if err != nil {
		return err
	}
	c.tuple = tuple
	return nil
}

// HasChangesData reports whether table t holds any event, batch id or checkpoint
// (a periods table must hold none).
func (s *Snapshot) HasChangesData(t *Table) (bool, error) {
	if s.closed {
		return false, ErrClosed
	}
	for _, ks := range []byte{layout.Events, layout.Batches, layout.Checkpoints} {
		prefix := layout.AppendTablePrefix(nil, ks, t.ID)
		it, err := s.newIter(prefix, encoding.PrefixEnd(prefix))
		if err != nil {
			return false, err
		}
		found := it.First()
		if err := errors.Join(it.Error(), it.Close()); err != nil || found {
			return found, err
		}
	}
	return false, nil
}

// KeyVersionsTail returns the current versions of a key with ValidFrom >= from,
// plus up to before versions that start earlier, in ascending valid order, and
// whether that is every current version of the key. It reads the current index
// newest first and stops there: the cost is the tail, not the key's history.
func (s *Snapshot) KeyVersionsTail(t *Table, tuple []byte, from int64, before int) ([]Version, bool, error) {
	if s.closed {
		return nil, false, ErrClosed
	}
	var out []Version
	complete := true
	err := s.keyRecords(t, tuple, layout.CurrentKeys, func(v Version) bool {
		if v.ValidFrom < from {
			if before == 0 {
				complete = false
				return false
			}
			before--
		}
		out = append(out, v)
		return true
	})
	slices.Reverse(out)
	return out, complete, err
}
