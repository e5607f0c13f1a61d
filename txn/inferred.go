package txn

import (
	"errors"
	"fmt"

	"github.com/bitempo/bitempo/store"
)

// ErrKnownKey: InsertInferred of a key that already has versions. An inferred
// member stands in only for a key the table has never held.
var ErrKnownKey = errors.New("bitempo: key already has versions")

// InsertInferred inserts an inferred member for key: a placeholder version over
// [from, +∞) with no attributes, flagged Inferred, for a key that facts reference
// before the table knows it (a late-arriving dimension member). Facts resolved to
// it keep its surrogate key when real data for the key arrives (Upsert takes the
// placeholder over). The key must have no versions at all, this transaction's
// writes included; otherwise the error wraps ErrKnownKey and nothing changes.
// The returned version has TxFrom store.Infinity until the transaction commits.
//
// A placeholder is never inserted before or between a known key's versions: a
// fact that misses a known key there points at a gap or a late start of the
// key's history, which the gap report shows, and a placeholder would hide it.
func (tx *Tx) InsertInferred(table string, key store.Key, from int64) (store.Version, error) {
	t, err := tx.table(table, store.Periods)
	if err != nil {
		return store.Version{}, err
	}
	if err := store.CheckPeriod(from, store.Infinity); err != nil {
		return store.Version{}, err
	}
	ks, err := tx.state(t, key)
	if err != nil {
		return store.Version{}, err
	}
	if len(ks.cur) > 0 {
		return store.Version{}, fmt.Errorf("%w: table %q key %s has %d", ErrKnownKey, table, ks.key, len(ks.cur))
	}
	v := tx.newVersion(ks, from, store.Infinity, store.Attrs{})
	v.Inferred = true
	ks.cur = append(ks.cur, v)
	return v, nil
}
