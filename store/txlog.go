package store

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"iter"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/engine"
	"github.com/bitempo/bitempo/layout"
)

// This file owns the transaction log (keyspace 0x13), the change feed of a table:
//
//	0x13 | tid | asc(tx) | ord(ordinal) -> tuple | change...
//	change: kind (1 byte) | zigzag varint valid_from - base
//	        [| uvarint (tx - tx_from) for a retire or a re-assert]
//	kind:   0 assert, 1 retire, 2 re-assert: the record of valid_from
//	        asserted at tx_from was retired and a record of the same
//	        valid_from asserted, two changes in that order
//	base:   0 for an entry's first change, else the previous change's
//	        valid_from
//
// One entry holds every change one transaction made to one key, in commit
// order: the tuple is written once, not once per record. A change's position
// (LogPos) is its transaction and its ordinal among that transaction's changes
// to the table; the key of an entry carries the ordinal of its first change, so
// the changes of an entry have the consecutive ordinals that follow (a
// re-assert is two changes and takes two ordinals). An asserted record's
// tx_from is the entry's tx and is not stored; a retired record's is, as its
// distance back from tx.
//
// A re-assert is read back as its two changes (decodeLogEntry), so every
// reader sees the positions it would see had they been written apart. Why one
// entry per (transaction, key): docs/design/txlog-entries.md.

// LogOp is what a transaction-log entry records.
type LogOp uint8

// Transaction-log operations.
const (
	// LogAssert: the transaction asserted the record.
	LogAssert LogOp = 0
	// LogRetire: the transaction retired the record.
	LogRetire LogOp = 1
)

func (o LogOp) String() string {
	switch o {
	case LogAssert:
		return "assert"
	case LogRetire:
		return "retire"
	case LogErase:
		return "erase"
	}
	return fmt.Sprintf("LogOp(%d)", uint8(o))
}

// LogPos is the position of a change in a table's transaction log: the
// transaction and the change's ordinal among that transaction's changes to the
// table. Later commits only add changes at greater positions, so a position
// stays valid for ever.
type LogPos struct {
	Tx      int64
	Ordinal uint32
}

// Next returns the position just after p.
func (p LogPos) Next() LogPos {
	if p.Ordinal == ^uint32(0) {
		return LogPos{Tx: p.Tx + 1}
	}
	return LogPos{Tx: p.Tx, Ordinal: p.Ordinal + 1}
}

// LogEntry is one change of the transaction log with the record it names, as the
// snapshot holds it: a record asserted in the window may show a retirement that
// came later.
type LogEntry struct {
	Pos     LogPos
	Op      LogOp
	Version Version
	// Erasure is set, and Version zero, when Op is LogErase (erase.go).
	Erasure *Erasure
}

// logChange is one change of a transaction-log entry.
type logChange struct {
	op        LogOp
	validFrom int64
	txFrom    int64
}

// The kind byte of a stored change (see above). A stored change is one or two
// logChanges: the kinds are not LogOps.
const (
	logKindAssert   byte = 0
	logKindRetire   byte = 1
	logKindReassert byte = 2
)

// logEntryValue builds the value of one transaction-log entry of transaction
// tx: the tuple, then its changes (see above).
type logEntryValue struct {
	tx    int64
	b     []byte
	n     int       // changes added
	last  int       // offset in b of the last stored change
	lastC logChange // the last change added
	// lastKind and lastBase are the kind and the base of the last stored
	// change.
	lastKind byte
	lastBase int64
}

func newLogEntryValue(tx int64, tuple []byte) *logEntryValue {
	return &logEntryValue{tx: tx, b: append([]byte(nil), tuple...)}
}

// add appends change c: a retire followed by the assert of the same
// valid_from becomes one re-assert.
func (e *logEntryValue) add(c logChange) {
	if c.op == LogAssert && e.n > 0 && e.lastKind == logKindRetire && e.lastC.validFrom == c.validFrom {
		e.b = e.appendChange(e.b[:e.last], logKindReassert, e.lastBase, e.lastC)
		e.lastKind, e.lastC = logKindReassert, c
		e.n++
		return
	}
	base := int64(0)
	if e.n > 0 {
		base = e.lastC.validFrom
	}
	kind := logKindAssert
	if c.op == LogRetire {
		kind = logKindRetire
	}
	e.last, e.lastKind, e.lastBase, e.lastC = len(e.b), kind, base, c
	e.b = e.appendChange(e.b, kind, base, c)
	e.n++
}

func (e *logEntryValue) appendChange(dst []byte, kind byte, base int64, c logChange) []byte {
	dst = binary.AppendVarint(append(dst, kind), int64(uint64(c.validFrom)-uint64(base)))
	if kind != logKindAssert {
		dst = binary.AppendUvarint(dst, uint64(e.tx-c.txFrom))
	}
	return dst
}

// decodeLogEntry decodes the value of an entry of transaction tx into its
// tuple and its changes (appended to changes[:0]).
func decodeLogEntry(t *Table, tx int64, b []byte, changes []logChange) ([]byte, []logChange, error) {
	bad := func(format string, args ...any) ([]byte, []logChange, error) {
		return nil, nil, fmt.Errorf("%w: table %q txlog entry of tx %d: %s", ErrCorrupt, t.Name, tx, fmt.Sprintf(format, args...))
	}
	tuple, rest, err := t.splitTuple(b)
	if err != nil {
		return nil, nil, err
	}
	changes = changes[:0]
	if len(rest) == 0 {
		return bad("no change")
	}
	base := int64(0)
	for len(rest) > 0 {
		kind := rest[0]
		if kind > logKindReassert {
			return bad("unknown change kind %d", kind)
		}
		delta, n := binary.Varint(rest[1:])
		if n <= 0 {
			return bad("valid_from")
		}
		rest = rest[1+n:]
		c := logChange{op: LogAssert, validFrom: int64(uint64(base) + uint64(delta)), txFrom: tx}
		base = c.validFrom
		if kind == logKindAssert {
			changes = append(changes, c)
			continue
		}
		d, n := binary.Uvarint(rest)
		if n <= 0 || d == 0 || d > uint64(tx)+1<<63 { // tx_from below -inf
			return bad("tx_from")
		}
		rest = rest[n:]
		changes = append(changes, logChange{op: LogRetire, validFrom: c.validFrom, txFrom: tx - int64(d)})
		if kind == logKindReassert {
			changes = append(changes, c)
		}
	}
	return tuple, changes, nil
}

// openLogEntry is the transaction-log entry a Writer is filling for one table:
// the key its last change was to.
type openLogEntry struct {
	tuple []byte
	first uint32 // the ordinal of its first change
	value *logEntryValue
}

// logChange adds a change of record v to the transaction log: to the table's
// open entry when it is of the same key, else to a new entry.
func (w *Writer) logChange(t *Table, op LogOp, v *Version) {
	ord := w.ordinals[t.ID]
	w.ordinals[t.ID] = ord + 1
	e := w.logs[t.ID]
	if e == nil || !bytes.Equal(e.tuple, v.tuple) {
		w.flushLog(t.ID)
		e = &openLogEntry{tuple: v.tuple, first: ord, value: newLogEntryValue(w.Tx(), v.tuple)}
		w.logs[t.ID] = e
	}
	e.value.add(logChange{op: op, validFrom: v.ValidFrom, txFrom: v.TxFrom})
}

// flushLog moves the open entry of table tid, if any, to the commit's writes.
func (w *Writer) flushLog(tid uint32) {
	if e := w.logs[tid]; e != nil {
		w.other = append(w.other, engine.Write{Key: layout.TxLogKeys.Key(nil, tid, w.Tx(), e.first), Value: e.value.b})
		delete(w.logs, tid)
	}
}

// TxLog yields the table's transaction-log changes from position from
// (inclusive) through every change of transaction until, in commit order: one
// contiguous range read, plus one seek per change for its record. It is
// TxLogRows with each row copied out (Row.Version).
func (s *Snapshot) TxLog(t *Table, from LogPos, until int64) iter.Seq2[LogEntry, error] {
	return func(yield func(LogEntry, error) bool) {
		y := &yielder[LogEntry]{yield: yield}
		y.fail(s.txLog(t, from, until, func(pos LogPos, op LogOp, r *Row, e *Erasure) (bool, error) {
			entry := LogEntry{Pos: pos, Op: op, Erasure: e}
			if r != nil {
				v, err := r.Version()
				if err != nil {
					return false, err
				}
				entry.Version = v
			}
			return y.emit(entry), nil
		}))
	}
}

// txLog is TxLogRows with a callback that may fail.
func (s *Snapshot) txLog(t *Table, from LogPos, until int64, each func(LogPos, LogOp, *Row, *Erasure) (bool, error)) (err error) {
	switch {
	case s.closed:
		return ErrClosed
	case from.Tx > until:
		return nil
	}
	if err := s.checkHorizon(t, max(from.Tx, NegInfinity+1)-1); err != nil { // the window starts after from.Tx-1
		return err
	}
	recs, err := s.newLogRecords(t)
	if err != nil {
		return err
	}
	defer func() { err = firstError(err, recs.close()) }()
	pfx := layout.TxLogKeys.TablePrefix(t.ID)
	lower := layout.TxLogKeys.Key(nil, t.ID, from.Tx, 0)
	upper := encoding.PrefixEnd(pfx)
	if until < Infinity {
		upper = layout.TxLogKeys.Key(nil, t.ID, until+1, 0)
	}
	it, err := s.newIter(lower, upper)
	if err != nil {
		return err
	}
	defer func() { err = firstError(err, it.Close()) }()
	// Start at the entry holding from: the last one of from.Tx whose first
	// ordinal is at or before from.Ordinal, or the first entry after it.
	ok := it.SeekLT(append(layout.TxLogKeys.Key(nil, t.ID, from.Tx, from.Ordinal), 0))
	if !ok {
		ok = it.First()
	}
	r := s.newRow(t)
	var changes []logChange
	for ; ok; ok = it.Next() {
		tx, first, err := layout.TxLogKeys.Decode(it.Key()[len(pfx):])
		if err != nil {
			return err
		}
		if isErasure(it.Value()) {
			if tx == from.Tx && first < from.Ordinal {
				continue
			}
			e, err := decodeErasure(t, tx, it.Value())
			if err != nil {
				return err
			}
			if more, err := each(LogPos{Tx: tx, Ordinal: first}, LogErase, nil, &e); !more || err != nil {
				return err
			}
			continue
		}
		var tuple []byte
		if tuple, changes, err = decodeLogEntry(t, tx, it.Value(), changes); err != nil {
			return err
		}
		for i, c := range changes {
			pos := LogPos{Tx: tx, Ordinal: first + uint32(i)}
			if pos.Tx == from.Tx && pos.Ordinal < from.Ordinal {
				continue
			}
			if err := recs.fill(r, tuple, c.validFrom, c.txFrom); err != nil {
				return err
			}
			if more, err := each(pos, c.op, r, nil); !more || err != nil {
				return err
			}
		}
	}
	return it.Error()
}
