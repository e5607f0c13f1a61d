package txn

import (
	"slices"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/store"
)

// Outcome says what an Upsert did.
type Outcome uint8

// Upsert outcomes.
const (
	// Unchanged: the version in effect already held these attributes.
	Unchanged Outcome = iota
	// Overwritten: tracked attributes were equal; untracked ones were overwritten
	// in place (a new record of the same sk).
	Overwritten
	// Inserted: a new version was inserted where none was in effect.
	Inserted
	// Changed: the version in effect was closed (or replaced whole) and a new
	// version inserted.
	Changed
	// Merged: the change was absorbed by extending a tracked-equal neighbour.
	Merged
)

func (o Outcome) String() string {
	return [...]string{"unchanged", "overwritten", "inserted", "changed", "merged"}[o]
}

// Upsert is the SCD2 change of key effective at valid time at. It compares the
// tracked attributes with the version in effect at at:
//
//   - equal: no new version; untracked attributes are overwritten in place;
//   - different: the version in effect, [a, b), is closed at at (or replaced whole
//     when a = at) and the new version covers [at, b);
//   - no version in effect: the new version covers [at, s), s being the start of
//     the next version or +∞.
//
// A new version that would touch a tracked-equal neighbour extends it instead, so
// Upsert never leaves two adjacent tracked-equal versions. A late change lands
// between its neighbours and adjusts their boundaries.
func (tx *Tx) Upsert(table string, key store.Key, attrs store.Attrs, at int64) (Outcome, error) {
	t, err := tx.table(table, store.Periods)
	if err != nil {
		return 0, err
	}
	attrs, err = tx.checkAttrs(t, attrs)
	if err != nil {
		return 0, err
	}
	ks, err := tx.upsertState(t, key, at)
	if err != nil {
		return 0, err
	}
	i, found := covering(ks.cur, at)
	if o, ok := replaceInferred(ks, i, found, at, attrs); ok {
		return o, nil
	}
	if found {
		v := &ks.cur[i]
		if store.TrackedEqual(t, v.Attrs, attrs) {
			merged := store.OverwriteUntracked(t, v.Attrs, attrs)
			if merged.Equal(v.Attrs) {
				return Unchanged, nil
			}
			v.Attrs = merged
			return Overwritten, nil
		}
		end := v.ValidTo
		if v.ValidFrom == at {
			ks.cur = slices.Delete(ks.cur, i, i+1)
		} else {
			v.ValidTo = at
			i++
		}
		return tx.place(ks, i, at, end, attrs, Changed), nil
	}
	end := store.Infinity
	if i < len(ks.cur) {
		end = ks.cur[i].ValidFrom
	}
	if err := store.CheckPeriod(at, end); err != nil {
		return 0, err
	}
	return tx.place(ks, i, at, end, attrs, Inserted), nil
}

// replaceInferred lets real data take over an inferred placeholder (a member
// created when facts referenced an unknown key): the placeholder in effect at at, or
// the one that starts next when nothing is in effect, takes the attributes and
// becomes a real version, keeping its sk so facts already resolved to it now see
// the real attributes (Kimball's inferred-member pattern).
func replaceInferred(ks *keyState, i int, found bool, at int64, attrs store.Attrs) (Outcome, bool) {
	if i >= len(ks.cur) || !ks.cur[i].Inferred {
		return 0, false
	}
	v := &ks.cur[i]
	if !found {
		v.ValidFrom = at
	}
	v.Attrs, v.Inferred = attrs, false
	return Overwritten, true
}

// upsertState returns the key's state for an Upsert at valid time at: only
// the tail of its timeline from at on, with the versions just before it
// (stateTail), since an Upsert reads and changes nothing earlier than the
// version in effect at at and the one ending where it starts (place); an
// in-order SCD2 load thus reads two versions per Upsert, not the key's whole
// history (docs/design/upsert-tail-read.md). Any other use of the key in the
// transaction loads the rest first (Tx.state). A key a Flush handed over is
// refused, as state refuses it.
func (tx *Tx) upsertState(t *store.Table, key store.Key, at int64) (*keyState, error) {
	k, err := t.AppendKey(encoding.AppendUint32(tx.buf[:0], t.ID), key)
	if err != nil {
		return nil, err
	}
	tx.buf = k
	if _, loaded := tx.keys[string(k)]; !loaded {
		if err := tx.checkNotFlushed(string(k), t); err != nil {
			return nil, err
		}
	}
	return tx.stateTail(t, key, at)
}

// place puts the version [from, to) with attrs at index i of the key's timeline
// (where nothing covers it), or extends a tracked-equal neighbour instead.
func (tx *Tx) place(ks *keyState, i int, from, to int64, attrs store.Attrs, outcome Outcome) Outcome {
	t := ks.table
	hasPrev := i > 0 && ks.cur[i-1].ValidTo == from && store.TrackedEqual(t, ks.cur[i-1].Attrs, attrs)
	hasNext := i < len(ks.cur) && ks.cur[i].ValidFrom == to && store.TrackedEqual(t, ks.cur[i].Attrs, attrs)
	switch {
	case hasPrev && hasNext:
		ks.cur[i-1].ValidTo = ks.cur[i].ValidTo
		ks.cur = slices.Delete(ks.cur, i, i+1)
		return Merged
	case hasPrev:
		ks.cur[i-1].ValidTo = to
		return Merged
	case hasNext:
		ks.cur[i].ValidFrom = from
		return Merged
	}
	ks.cur = slices.Insert(ks.cur, i, tx.newVersion(ks, from, to, attrs))
	return outcome
}

// DeleteAt closes the version of key in effect at valid time at, ending it at at
// (removing it if it starts at at). It reports false, and writes nothing, when no
// version is in effect.
func (tx *Tx) DeleteAt(table string, key store.Key, at int64) (bool, error) {
	t, err := tx.table(table, store.Periods)
	if err != nil {
		return false, err
	}
	ks, err := tx.state(t, key)
	if err != nil {
		return false, err
	}
	i, found := covering(ks.cur, at)
	if !found {
		return false, nil
	}
	if ks.cur[i].ValidFrom == at {
		ks.cur = slices.Delete(ks.cur, i, i+1)
	} else {
		ks.cur[i].ValidTo = at
	}
	return true, nil
}
