package txn

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/bitempo/bitempo/internal/sealed"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/store"
)

// Tx is a write transaction. It is valid only inside the function passed to
// Update and must not be used from other goroutines.
type Tx struct {
	db    *store.DB
	w     *store.Writer
	keys  map[string]*keyState
	order []*keyState
	done  bool
	buf   []byte
	cdc   *changesLog // changes-table writes of this transaction (Apply)
	// flushed and flushedStats: the keys handed to the Writer by Flush, and
	// the records they wrote (flush.go).
	flushed      map[string]struct{}
	flushedStats Commit
	// erased holds the keys (table id | tuple) this transaction erased.
	erased    map[string]bool
	erasedAny bool
	// failed: a KeyBatch met a bad event after writing part of its batch
	// (apply_keys.go); the transaction cannot commit.
	failed error
}

// keyState is one touched key: its versions as loaded and as rewritten so far,
// both sorted by valid_from and pairwise disjoint.
type keyState struct {
	table *store.Table
	key   store.Key
	tuple []byte
	orig  []store.Version
	cur   []store.Version
	// partial: orig and cur hold only the key's latest versions (Apply loads
	// the tail it can change); state completes them before any other use.
	partial bool
}

// Commit describes a committed transaction.
type Commit struct {
	// Tx is the transaction time of the commit; 0 if nothing was written.
	Tx int64
	// Asserted and Retired count the records the commit wrote and retired.
	Asserted, Retired int
}

// Update runs fn in a write transaction. The transaction commits when fn returns
// nil and rolls back, leaving no trace, when fn returns an error or panics (the
// panic then continues). Update waits for any other write transaction to finish.
func Update(db *store.DB, fn func(tx *Tx) error) (c Commit, err error) {
	w, err := db.BeginWrite(sealed.Key{})
	if err != nil {
		return Commit{}, err
	}
	tx := &Tx{db: db, w: w, keys: map[string]*keyState{}}
	defer func() {
		tx.done = true
		if r := recover(); r != nil {
			w.Abort()
			panic(r)
		}
	}()
	// Run marks the function as running inside the transaction, so that a
	// write or Close on db from inside it fails with store.ErrReentrant instead
	// of waiting for this transaction for ever.
	if err := w.Run(func() error { return fn(tx) }); err != nil {
		w.Abort()
		return Commit{}, err
	}
	if tx.failed != nil {
		w.Abort()
		return Commit{}, tx.failed
	}
	c, err = tx.commit()
	if err == nil && tx.erasedAny {
		// The erasure is committed: a failed purge stays pending (Close and the
		// next Open retry it) and is reported without undoing the commit.
		if perr := db.Purge(context.Background()); perr != nil {
			err = fmt.Errorf("bitempo: erasure committed at tx %d, purge pending: %w", c.Tx, perr)
		}
	}
	return c, err
}

// View runs fn on a consistent snapshot of the store.
func View(db *store.DB, fn func(s *store.Snapshot) error) error {
	s, err := db.Snapshot()
	if err != nil {
		return err
	}
	defer s.Close()
	return fn(s)
}

// commit writes the difference between each touched key's loaded and final
// timelines, then commits the batch.
func (tx *Tx) commit() (Commit, error) {
	c := tx.flushedStats
	for _, ks := range tx.order {
		retired, asserted := diff(ks.orig, ks.cur)
		for _, v := range retired {
			if err := tx.w.Retire(ks.table, v); err != nil {
				tx.w.Abort()
				return Commit{}, err
			}
		}
		for _, v := range asserted {
			if err := tx.w.Assert(ks.table, v); err != nil {
				tx.w.Abort()
				return Commit{}, err
			}
		}
		c.Retired += len(retired)
		c.Asserted += len(asserted)
		ks.orig, ks.cur = nil, nil // the Writer holds the records now: let a large transaction's timelines go
	}
	tx.keys, tx.order = nil, nil
	if !tx.w.Empty() {
		c.Tx = tx.w.Tx()
	}
	if err := tx.w.Commit(); err != nil {
		return Commit{}, err
	}
	return c, nil
}

// diff returns the loaded versions that the final timeline no longer holds
// unchanged, and the final versions that are new or changed. Both timelines are
// disjoint, so valid_from identifies a version within each.
func diff(orig, cur []store.Version) (retired, asserted []store.Version) {
	byFrom := make(map[int64]*store.Version, len(cur))
	for i := range cur {
		byFrom[cur[i].ValidFrom] = &cur[i]
	}
	kept := make(map[int64]bool, len(orig))
	for i := range orig {
		if c, ok := byFrom[orig[i].ValidFrom]; ok && c.SameContent(&orig[i]) {
			kept[orig[i].ValidFrom] = true
		} else {
			retired = append(retired, orig[i])
		}
	}
	for i := range cur {
		if !kept[cur[i].ValidFrom] {
			asserted = append(asserted, cur[i])
		}
	}
	return retired, asserted
}

// DB returns the store the transaction writes to.
func (tx *Tx) DB() *store.DB { return tx.db }

// table resolves a table name and checks that it takes writes of kind k.
func (tx *Tx) table(name string, k store.Kind) (*store.Table, error) {
	if tx.done {
		return nil, ErrFinished
	}
	t, err := tx.w.Table(name)
	if err != nil {
		return nil, err
	}
	if t.Kind != k {
		return nil, fmt.Errorf("%w: table %q is a %s table", ErrWrongKind, name, t.Kind)
	}
	return t, nil
}

// encodeKey puts the table id and the encoded key into tx.buf, refusing a key
// that was erased (checkErased).
func (tx *Tx) encodeKey(t *store.Table, key store.Key) error {
	var err error
	if tx.buf, err = t.AppendKey(encoding.AppendUint32(tx.buf[:0], t.ID), key); err != nil {
		return err
	}
	return tx.checkErased(t, key)
}

// state returns the in-memory timeline of a key, loading it on first use.
func (tx *Tx) state(t *store.Table, key store.Key) (*keyState, error) {
	if err := tx.encodeKey(t, key); err != nil {
		return nil, err
	}
	if ks, ok := tx.keys[string(tx.buf)]; ok {
		return ks, tx.completeState(ks)
	}
	if err := tx.checkNotFlushed(string(tx.buf), t); err != nil {
		return nil, err
	}
	tuple := bytes.Clone(tx.buf[4:])
	versions, err := tx.w.KeyVersions(t, tuple)
	if err != nil {
		return nil, err
	}
	ks := &keyState{table: t, key: slices.Clone(key), tuple: tuple, orig: versions, cur: slices.Clone(versions)}
	tx.keys[string(tx.buf)] = ks
	tx.order = append(tx.order, ks)
	return ks, nil
}

// checkAttrs canonicalises attrs (so in-memory values equal what a read decodes),
// converts them to the table's declared column types and its attributes'
// established types (store.Writer.Conform), and
// rejects what cannot be stored, before anything is changed.
func (tx *Tx) checkAttrs(t *store.Table, attrs store.Attrs) (store.Attrs, error) {
	out := make(store.Attrs, len(attrs))
	for name, v := range attrs {
		for _, col := range t.Key {
			if col.Name == name {
				return nil, &AttrError{t.Name, name, fmt.Errorf("repeats a key column")}
			}
		}
		c, err := encoding.Canonical(v)
		if err != nil {
			return nil, &AttrError{t.Name, name, err}
		}
		out[name] = c
	}
	out, err := tx.w.Conform(t, out)
	if err != nil {
		return nil, err // a *store.SchemaError, naming table and column
	}
	enc, err := encoding.AppendAttrs(nil, out)
	if err != nil {
		return nil, &AttrError{t.Name, "", err}
	}
	if len(enc) > store.MaxAttrsSize {
		// Checked here, before anything is written, because a record the
		// decoders refuse could be neither read, overwritten nor deleted.
		return nil, &AttrError{t.Name, "", fmt.Errorf("%w: the attributes encode to %d bytes, over the limit of %d (store.MaxAttrsSize)",
			store.ErrTooLarge, len(enc), store.MaxAttrsSize)}
	}
	if err := t.CheckGroupAttrs(out); err != nil {
		name := ""
		if ge := (*store.GroupValueError)(nil); errors.As(err, &ge) {
			name = ge.Attr
		}
		return nil, &AttrError{t.Name, name, err}
	}
	return out, nil
}

// newVersion builds a version of the key with a fresh surrogate key.
func (tx *Tx) newVersion(ks *keyState, from, to int64, attrs store.Attrs) store.Version {
	return ks.table.NewVersion(ks.key, ks.tuple, from, to, tx.w.AllocSK(ks.table), attrs)
}

// Get returns the version of key in effect at valid time valid, including this
// transaction's own writes. Versions written by the transaction have TxFrom
// store.Infinity until it commits.
func (tx *Tx) Get(table string, key store.Key, valid int64) (store.Version, store.MissReason, error) {
	if tx.done {
		return store.Version{}, 0, ErrFinished
	}
	t, err := tx.db.Table(table)
	if err != nil {
		return store.Version{}, 0, err
	}
	ks, err := tx.state(t, key)
	if err != nil {
		return store.Version{}, 0, err
	}
	i, found := covering(ks.cur, valid)
	if found {
		return ks.cur[i], store.Found, nil
	}
	n := len(ks.cur)
	return store.Version{}, store.ClassifyMiss(n > 0 && ks.cur[0].ValidFrom <= valid, n > 0 && ks.cur[n-1].ValidFrom > valid), nil
}

// Versions returns the key's current versions in valid order, including this
// transaction's own writes.
func (tx *Tx) Versions(table string, key store.Key) ([]store.Version, error) {
	if tx.done {
		return nil, ErrFinished
	}
	t, err := tx.db.Table(table)
	if err != nil {
		return nil, err
	}
	ks, err := tx.state(t, key)
	if err != nil {
		return nil, err
	}
	return slices.Clone(ks.cur), nil
}

// covering returns the index of the version covering valid time at, or the index
// where a version starting at at would be inserted, and whether one covers it.
func covering(vs []store.Version, at int64) (int, bool) {
	i, _ := slices.BinarySearchFunc(vs, at, func(v store.Version, t int64) int {
		switch {
		case v.ValidTo <= t:
			return -1
		case v.ValidFrom > t:
			return 1
		}
		return 0
	})
	return i, i < len(vs) && vs[i].Covers(at)
}
