package query

import (
	"errors"
	"fmt"

	"github.com/bitempo/bitempo/store"
)

// Sentinels of a surrogate-key miss; each also matches ErrNotFound.
var (
	// ErrUnknownSK: no record of the surrogate key was asserted at or before the
	// transaction time of the read.
	ErrUnknownSK = errors.New("bitempo: unknown surrogate key")
	// ErrRetiredSK: the surrogate key named a version that a transaction at or
	// before the read's transaction time removed (deleted, or absorbed by a
	// neighbour).
	ErrRetiredSK = errors.New("bitempo: surrogate key retired")
	// ErrErasedSK: the surrogate key named a version of a key that was erased
	// (txn.Tx.Erase); its data is gone at every transaction time.
	ErrErasedSK = errors.New("bitempo: surrogate key erased")
)

// SKMiss is the error of GetBySK when the surrogate key names no version at the
// transaction time of the read.
type SKMiss struct {
	Table string
	SK    uint64
	// Tx is the transaction time of the read (Latest resolved to the newest
	// commit).
	Tx int64
	// Retired is the transaction that retired the surrogate key's last version,
	// or 0 when the key was unknown at Tx.
	Retired int64
	// Erased is the transaction that erased the surrogate key's data, or 0. An
	// erased surrogate key misses at every transaction time, earlier ones
	// included: its data no longer exists.
	Erased int64
}

func (m *SKMiss) Error() string {
	if m.Erased != 0 {
		return fmt.Sprintf("bitempo: %s sk %d at tx %d: erased by tx %d", m.Table, m.SK, m.Tx, m.Erased)
	}
	if m.Retired != 0 {
		return fmt.Sprintf("bitempo: %s sk %d at tx %d: retired by tx %d", m.Table, m.SK, m.Tx, m.Retired)
	}
	return fmt.Sprintf("bitempo: %s sk %d at tx %d: unknown surrogate key", m.Table, m.SK, m.Tx)
}

// Is matches ErrNotFound and ErrUnknownSK, ErrRetiredSK or ErrErasedSK.
func (m *SKMiss) Is(target error) bool {
	if m.Erased != 0 {
		return target == ErrNotFound || target == ErrErasedSK
	}
	if m.Retired != 0 {
		return target == ErrNotFound || target == ErrRetiredSK
	}
	return target == ErrNotFound || target == ErrUnknownSK
}

// GetBySK returns the version surrogate key sk names as known at transaction
// time tx (Latest for the newest commit), or an *SKMiss. Facts store surrogate
// keys, so this is their join: one seek in the sk index and one in the records.
// The version's attributes are those of its newest record at tx: an untracked
// attribute overwritten in place (same sk) reads its value as of tx. With
// opts.Project it decodes only the attributes named, reusing the projection
// across calls with the same list as Get does.
func GetBySK(r store.Reader, table string, sk uint64, tx int64, opts GetOptions) (store.Version, error) {
	s, t, release, err := openProjected(r, table, opts.Project)
	if err != nil {
		return store.Version{}, err
	}
	defer release()
	at := resolveTx(s, tx)
	v, found, err := s.RecordBySK(t, sk, at)
	switch {
	case err != nil:
		return store.Version{}, err
	case !found:
		erased, ok, err := s.ErasedSK(t, sk)
		if err != nil {
			return store.Version{}, err
		}
		if ok {
			return store.Version{}, &SKMiss{Table: table, SK: sk, Tx: at, Erased: erased}
		}
		return store.Version{}, &SKMiss{Table: table, SK: sk, Tx: at}
	case !v.AliveAt(at):
		return store.Version{}, &SKMiss{Table: table, SK: sk, Tx: at, Retired: v.TxTo}
	}
	return v, nil
}
