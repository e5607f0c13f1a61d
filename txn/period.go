package txn

import (
	"github.com/bitempo/bitempo/store"
)

// Put asserts attrs for key over the valid period [from, to), with SQL:2011 FOR
// PORTION OF semantics: versions overlapping the period are trimmed, or split in
// two when they contain it, and keep their attributes outside it. After commit,
// every instant of [from, to) reads attrs.
func (tx *Tx) Put(table string, key store.Key, attrs store.Attrs, from, to int64) error {
	t, err := tx.table(table, store.Periods)
	if err != nil {
		return err
	}
	if err := store.CheckPeriod(from, to); err != nil {
		return err
	}
	attrs, err = tx.checkAttrs(t, attrs)
	if err != nil {
		return err
	}
	ks, err := tx.state(t, key)
	if err != nil {
		return err
	}
	if i, ok := covering(ks.cur, from); ok && ks.cur[i].ValidFrom == from && ks.cur[i].ValidTo == to &&
		!ks.cur[i].Inferred && ks.cur[i].Attrs.Equal(attrs) {
		return nil // exactly what is stored already
	}
	tx.cut(ks, from, to, func() store.Version { return tx.newVersion(ks, from, to, attrs) })
	return nil
}

// Delete removes key over the valid period [from, to), trimming or splitting the
// versions it overlaps; it leaves a gap.
func (tx *Tx) Delete(table string, key store.Key, from, to int64) error {
	t, err := tx.table(table, store.Periods)
	if err != nil {
		return err
	}
	if err := store.CheckPeriod(from, to); err != nil {
		return err
	}
	ks, err := tx.state(t, key)
	if err != nil {
		return err
	}
	tx.cut(ks, from, to, nil)
	return nil
}

// cut removes [from, to) from the key's timeline and, when fill is set, inserts
// the version it returns in the hole. A version cut on its left keeps its sk; one
// split in two keeps its sk on the left piece and gives the right piece a new sk,
// allocated after the inserted version's (ascending valid_from order).
func (tx *Tx) cut(ks *keyState, from, to int64, fill func() store.Version) {
	out := make([]store.Version, 0, len(ks.cur)+2)
	var right *store.Version
	var split bool
	inserted := false
	for _, v := range ks.cur {
		if v.ValidTo <= from || v.ValidFrom >= to {
			if v.ValidFrom >= to && !inserted {
				out = tx.fillHole(out, fill, right, split, ks)
				inserted = true
			}
			out = append(out, v)
			continue
		}
		if v.ValidFrom < from {
			left := v
			left.ValidTo = from
			out = append(out, left)
		}
		if v.ValidTo > to {
			r := v
			r.ValidFrom = to
			right, split = &r, v.ValidFrom < from
		}
	}
	if !inserted {
		out = tx.fillHole(out, fill, right, split, ks)
	}
	ks.cur = out
}

// fillHole appends the inserted version (if any) and the right-hand remnant (if
// any) in valid order, allocating surrogate keys in that order.
func (tx *Tx) fillHole(out []store.Version, fill func() store.Version, right *store.Version, split bool, ks *keyState) []store.Version {
	if fill != nil {
		out = append(out, fill())
	}
	if right != nil {
		if split {
			right.SK = tx.w.AllocSK(ks.table)
		}
		out = append(out, *right)
	}
	return out
}
