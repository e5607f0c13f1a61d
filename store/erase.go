package store

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/engine"
	"github.com/bitempo/bitempo/layout"
)

// This file owns erasure: removing every trace of one natural key's data from a
// table (a right-to-erasure request), and the traces an erasure leaves.
//
// Writer.Erase deletes, in the erasing commit, every record of the key (current
// and retired, so every transaction time forgets it), the group-index copies of
// those records, its newest-version entry (derived by the commit, newest.go),
// every sk-index entry of their surrogate keys, every
// transaction-log entry of the key, and, in a changes table, the key's events
// and checkpoint. What stays holds no personal data:
//
//   - an erasure entry in the transaction log at the erasing transaction, in
//     place of a change (its value starts with logErasure, a byte no tuple
//     starts with): the keyed hash of the key, the number of records erased and
//     the operator's reason;
//   - 0x40 erased-sk | tid | sk -> asc(tx): the surrogate keys the erasure
//     removed, so that GetBySK of an erased sk is a miss that says so (a fact
//     table may still hold it), and so that Verify can tell them from lost ones;
//   - 0x41 erased-key | tid | hash | asc(tx): the keyed hash of each erased key,
//     so "was this key erased?" is one seek (Snapshot.Erasures).
//
// The keyed hash is HMAC-SHA256 of the key's tuple under a secret of 32 random
// bytes kept in meta "erase_secret", created with the store (or by the first
// erasure of a store created before erasure existed). A plain hash of a key
// with a small domain (an e-mail, a national id) is reversed by hashing every
// candidate; the secret keeps that to whoever can read the store's meta.
// The erasure keeps the table, the time, the reason and that hash, and
// nothing else: not the key encrypted, which would keep the personal data
// itself, recoverable by anyone holding the key.
//
// Surrogate keys are never reused: the table's sk counter only grows, so the
// erased surrogate keys are simply never handed out again.
//
// The deletes make the key unreadable at once; they do not make its bytes leave
// the disk (Pebble keeps deleted values in older files and the write-ahead
// log). Purge (purge.go) does that; the commit of an erasure marks the store
// "purge pending" in meta so that the purge survives a crash.

// logErasure is the first byte of the value of a transaction-log erasure
// entry. Tuples start with a component type tag (encoding.AppendKey, 0x20 and
// up), so no change entry starts with it.
const logErasure byte = 0x00

// LogErase: a transaction-log entry that records an erasure (LogEntry.Erasure).
const LogErase LogOp = 2

// ErrUnknownKey: an erasure of a key the table holds nothing of (no record, no
// event, no checkpoint). The error is an *EraseError.
var ErrUnknownKey = errors.New("bitempo: unknown key")

// EraseError is the error of an erasure of a key the table holds nothing of.
type EraseError struct {
	Table string
	Key   Key
}

func (e *EraseError) Error() string {
	return fmt.Sprintf("bitempo: erase %s %s: the table holds nothing of the key", e.Table, e.Key)
}

// Is makes errors.Is(err, ErrUnknownKey) true.
func (e *EraseError) Is(target error) bool { return target == ErrUnknownKey }

// Erasure is what the transaction log keeps of an erasure.
type Erasure struct {
	// Tx is the erasing transaction.
	Tx int64
	// KeyHash is the keyed hash of the erased key (DB.KeyHash).
	KeyHash []byte
	// Records is the number of records the erasure removed.
	Records int
	// Reason is the operator's reason, as given to Erase.
	Reason string
}

// appendErasure encodes an erasure entry's value:
// logErasure | hash (32 bytes) | uvarint records | reason.
func appendErasure(dst []byte, e *Erasure) []byte {
	dst = append(append(dst, logErasure), e.KeyHash...)
	dst = binary.AppendUvarint(dst, uint64(e.Records))
	return append(dst, e.Reason...)
}

// isErasure reports whether a transaction-log value is an erasure entry.
func isErasure(value []byte) bool { return len(value) > 0 && value[0] == logErasure }

// decodeErasure decodes an erasure entry's value of transaction tx.
func decodeErasure(t *Table, tx int64, b []byte) (Erasure, error) {
	if len(b) < 1+layout.HashLen+1 || b[0] != logErasure {
		return Erasure{}, fmt.Errorf("%w: table %q txlog erasure entry of tx %d is too short", ErrCorrupt, t.Name, tx)
	}
	n, k := binary.Uvarint(b[1+layout.HashLen:])
	if k <= 0 || n > 1<<40 {
		return Erasure{}, fmt.Errorf("%w: table %q txlog erasure entry of tx %d: record count", ErrCorrupt, t.Name, tx)
	}
	return Erasure{Tx: tx, KeyHash: bytes.Clone(b[1 : 1+layout.HashLen]), Records: int(n), Reason: string(b[1+layout.HashLen+k:])}, nil
}

// KeyHash returns the keyed hash under which an erasure of key in table t is
// recorded, or nil when the store has never erased anything (it has no secret
// yet, so no key can have been erased).
func (db *DB) KeyHash(t *Table, key Key) ([]byte, error) {
	tuple, err := t.AppendKey(nil, key)
	if err != nil {
		return nil, err
	}
	db.mu.RLock()
	secret := db.eraseSecret
	db.mu.RUnlock()
	if secret == nil {
		return nil, nil
	}
	return keyHash(secret, tuple), nil
}

func keyHash(secret, tuple []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write(tuple)
	return m.Sum(nil)
}

// Erasures returns the transaction times at which key was erased from table t
// as known in the snapshot, oldest first; none when it never was. Only the
// holder of the store (and so of its secret) can ask.
func (s *Snapshot) Erasures(t *Table, key Key) ([]int64, error) {
	if s.closed {
		return nil, ErrClosed
	}
	hash, err := s.db.KeyHash(t, key)
	if err != nil || hash == nil {
		return nil, err
	}
	pfx := layout.ErasedKeyKeys.Prefix(t.ID, hash)
	it, err := s.newIter(pfx, encoding.PrefixEnd(pfx))
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var out []int64
	for ok := it.First(); ok; ok = it.Next() {
		_, tx, err := layout.ErasedKeyKeys.DecodeKey(it.Key()[len(pfx)-layout.HashLen:])
		if err != nil {
			return nil, err
		}
		out = append(out, tx)
	}
	return out, it.Error()
}

// ErasedSK reports whether surrogate key sk of table t was erased, and by which
// transaction, as known in the snapshot.
func (s *Snapshot) ErasedSK(t *Table, sk uint64) (tx int64, erased bool, err error) {
	if s.closed {
		return 0, false, ErrClosed
	}
	raw, ok, err := s.view.Get(layout.ErasedSKKeys.Key(t.ID, sk))
	if err != nil || !ok {
		return 0, false, err
	}
	tx, _, err = encoding.DecodeTimeAsc(raw)
	if err != nil {
		return 0, false, fmt.Errorf("%w: table %q erased sk %d: %v", ErrCorrupt, t.Name, sk, err)
	}
	return tx, true, nil
}

// span is a key range [start, end) that a purge compacts.
type span struct{ start, end []byte }

func prefixSpan(pfx []byte) span { return span{pfx, encoding.PrefixEnd(pfx)} }

// Erase removes every trace of the key encoded as tuple from table t in this
// commit and records the erasure (see the file comment). It returns the number
// of records removed, or an *EraseError when the table holds nothing of the
// key. The transaction must not otherwise write the key (package txn sees to
// it): Erase reads the committed state.
func (w *Writer) Erase(t *Table, tuple []byte, reason string) (int, error) {
	s := w.snap
	recs, err := s.KeyRecords(t, tuple)
	if err != nil {
		return 0, err
	}
	var dels [][]byte
	var spans []span
	sks := map[uint64]bool{}
	txs := map[int64]bool{}
	for i := range recs {
		v := &recs[i]
		keys := layout.HistoryKeys
		if v.TxTo == Infinity {
			keys = layout.CurrentKeys
		}
		dels = append(dels, keys.Key(nil, t.ID, tuple, v.ValidFrom, v.TxFrom))
		if len(t.GroupBy) > 0 {
			if k, ok, _ := groupEntryKey(t, v); ok {
				dels = append(dels, k)
				spans = append(spans, span{k, append(slices.Clip(k), 0)})
			}
		}
		sks[v.SK] = true
		txs[v.TxFrom] = true
		if v.TxTo != Infinity {
			txs[v.TxTo] = true
		}
	}
	// The key's newest-version entry goes with its current records
	// (newest.go): the commit deletes it; its span is purged with theirs.
	spans = append(spans, prefixSpan(layout.CurrentKeys.KeyPrefix(nil, t.ID, tuple)), prefixSpan(layout.HistoryKeys.KeyPrefix(nil, t.ID, tuple)),
		prefixSpan(layout.NewestKeys.Key(nil, t.ID, tuple)))
	// A changes table's event log and checkpoint of the key.
	evPfx := layout.EventKeys.KeyPrefix(nil, t.ID, tuple)
	if dels, err = s.collectKeys(evPfx, dels, nil); err != nil {
		return 0, err
	}
	cp := layout.CheckpointKey(t.ID, tuple)
	if _, ok, err := s.view.Get(cp); err != nil {
		return 0, err
	} else if ok {
		dels = append(dels, cp)
	}
	spans = append(spans, prefixSpan(evPfx), prefixSpan(cp))
	if len(dels) == 0 {
		key, _ := t.DecodeKey(tuple)
		return 0, &EraseError{Table: t.Name, Key: key}
	}
	tx := w.Tx()
	for _, sk := range sortedKeys(sks) {
		pfx := layout.SKIndexKeys.Prefix(nil, t.ID, sk)
		if dels, err = s.collectKeys(pfx, dels, nil); err != nil {
			return 0, err
		}
		spans = append(spans, prefixSpan(pfx))
		w.set(layout.ErasedSKKeys.Key(t.ID, sk), encoding.AppendTimeAsc(nil, tx))
	}
	for _, ltx := range sortedKeys(txs) {
		lo, hi := layout.TxLogKeys.Key(nil, t.ID, ltx, 0), layout.TxLogKeys.Key(nil, t.ID, ltx+1, 0)
		if dels, err = s.collectKeys(lo, dels, func(value []byte) bool {
			if isErasure(value) {
				return false
			}
			entry, _, err := t.splitTuple(value)
			return err == nil && bytes.Equal(entry, tuple)
		}, hi); err != nil {
			return 0, err
		}
		spans = append(spans, span{lo, hi})
	}
	for _, k := range dels {
		w.del(k)
	}
	secret := w.db.secret()
	if secret == nil {
		if w.newSecret == nil {
			_, w.newSecret, err = newSecretWrite()
			if err != nil {
				return 0, err
			}
		}
		secret = w.newSecret
	}
	e := Erasure{Tx: tx, KeyHash: keyHash(secret, tuple), Records: len(recs), Reason: reason}
	w.flushLog(t.ID)
	ord := w.ordinals[t.ID]
	w.ordinals[t.ID] = ord + 1
	w.set(layout.TxLogKeys.Key(nil, t.ID, tx, ord), appendErasure(nil, &e))
	w.set(layout.ErasedKeyKeys.Key(t.ID, e.KeyHash, tx), nil)
	w.purge = append(w.purge, spans...)
	return len(recs), nil
}

// collectKeys appends to dst a copy of every key in [pfx, PrefixEnd(pfx)) (or
// [pfx, upper[0]) when upper is given) whose value keep accepts (all when keep
// is nil).
func (s *Snapshot) collectKeys(pfx []byte, dst [][]byte, keep func(value []byte) bool, upper ...[]byte) ([][]byte, error) {
	hi := encoding.PrefixEnd(pfx)
	if len(upper) > 0 {
		hi = upper[0]
	}
	it, err := s.newIter(pfx, hi)
	if err != nil {
		return dst, err
	}
	for ok := it.First(); ok; ok = it.Next() {
		if keep == nil || keep(it.Value()) {
			dst = append(dst, bytes.Clone(it.Key()))
		}
	}
	return dst, firstError(it.Error(), it.Close())
}

func sortedKeys[K int64 | uint64](m map[K]bool) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// secret returns the store's erase secret, nil if it has none yet.
func (db *DB) secret() []byte {
	db.mu.RLock()
	defer db.mu.RUnlock()
	return db.eraseSecret
}

// loadSecret reads the erase secret from meta, if the store has one.
func (db *DB) loadSecret(v engine.View) error {
	raw, ok, err := v.Get(layout.MetaEraseSecret)
	if err != nil || !ok {
		return err
	}
	var secret []byte
	if err := encoding.UnmarshalBounded(raw, &secret); err != nil || len(secret) != 32 {
		return fmt.Errorf("%w: meta erase_secret: not 32 bytes (%v)", ErrCorrupt, err)
	}
	db.eraseSecret = secret
	return nil
}

// newSecretWrite returns the write that creates a fresh erase secret, and the
// secret.
func newSecretWrite() (engine.Write, []byte, error) {
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return engine.Write{}, nil, fmt.Errorf("bitempo: erase secret: %w", err)
	}
	return engine.Write{Key: layout.MetaEraseSecret, Value: mustMarshal(secret)}, secret, nil
}

// decodeErasedEntry decodes the keys of 0x40 and 0x41 for dumps.
func (e *Entry) decodeErasedEntry(ks byte, b []byte) error {
	if ks == layout.ErasedSK {
		sk, err := layout.ErasedSKKeys.DecodeKey(b)
		if err != nil {
			return err
		}
		tx, _, err := encoding.DecodeTimeAsc(e.RawKV.Value)
		e.addKey("sk", FieldPlain, sk)
		e.addValue("erased_by", FieldTxTime, tx)
		return err
	}
	hash, tx, err := layout.ErasedKeyKeys.DecodeKey(b)
	e.addKey("key_hash", FieldPlain, fmt.Sprintf("%x", hash))
	e.addKey("erased_by", FieldTxTime, tx)
	return err
}

// decodeErasure decodes a transaction-log erasure entry for dumps.
func (e *Entry) decodeErasure(t *Table, tx int64) error {
	er, err := decodeErasure(t, tx, e.RawKV.Value)
	if err != nil {
		return err
	}
	e.addValue("op", FieldPlain, "erase")
	e.addValue("key_hash", FieldPlain, fmt.Sprintf("%x", er.KeyHash))
	e.addValue("records", FieldPlain, er.Records)
	e.addValue("reason", FieldPlain, er.Reason)
	return nil
}

// verifyErasures checks what erasures leave (invariant 5): every erased
// surrogate key was handed out (below the table's sk counter) and has neither
// records nor sk-index entries left, and every erased-key entry has its
// erasure entry in the transaction log. live reports whether a surrogate key
// names a record of the table.
func verifyErasures(s *Snapshot, t *Table, live func(sk uint64) bool, rep *Report) error {
	next := s.db.nextSKCommitted(s, t.ID)
	horizon, err := s.Horizon(t)
	if err != nil {
		return err
	}
	pfx := layout.AppendTablePrefix(nil, layout.ErasedSK, t.ID)
	it, err := s.newIter(pfx, encoding.PrefixEnd(pfx))
	if err != nil {
		return err
	}
	for ok := it.First(); ok; ok = it.Next() {
		sk, err := layout.ErasedSKKeys.DecodeKey(it.Key()[len(pfx):])
		if err != nil {
			rep.add(Problem{Invariant: 0, Table: t.Name, Detail: err.Error()})
			continue
		}
		switch {
		case sk >= next:
			rep.add(Problem{Invariant: 3, Table: t.Name, Detail: fmt.Sprintf("erased sk %d was never handed out (next %d)", sk, next)})
		case live(sk):
			rep.add(Problem{Invariant: 5, Table: t.Name, Detail: fmt.Sprintf("erased sk %d still names a record", sk)})
		}
		ipfx := layout.SKIndexKeys.Prefix(nil, t.ID, sk)
		if keys, err := s.collectKeys(ipfx, nil, nil); err != nil {
			return firstError(err, it.Close())
		} else if len(keys) > 0 {
			rep.add(Problem{Invariant: 5, Table: t.Name, Detail: fmt.Sprintf("erased sk %d still has %d sk-index entries", sk, len(keys))})
		}
	}
	if err := firstError(it.Error(), it.Close()); err != nil {
		return err
	}
	pfx = layout.AppendTablePrefix(nil, layout.ErasedKey, t.ID)
	it, err = s.newIter(pfx, encoding.PrefixEnd(pfx))
	if err != nil {
		return err
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		hash, tx, err := layout.ErasedKeyKeys.DecodeKey(it.Key()[len(pfx):])
		if err != nil {
			rep.add(Problem{Invariant: 0, Table: t.Name, Detail: err.Error()})
			continue
		}
		if tx <= horizon {
			continue // its log entry was vacuumed
		}
		found := false
		for e, err := range s.TxLog(t, LogPos{Tx: tx}, tx) {
			if err != nil {
				return err
			}
			if e.Op == LogErase && bytes.Equal(e.Erasure.KeyHash, hash) {
				found = true
				break
			}
		}
		if !found {
			rep.add(Problem{Invariant: 5, Table: t.Name, Detail: fmt.Sprintf("erased-key entry of tx %d has no erasure in the transaction log", tx)})
		}
	}
	return it.Error()
}
