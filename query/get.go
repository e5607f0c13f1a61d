package query

import (
	"errors"
	"fmt"

	"github.com/bitempo/bitempo/store"
)

// AsOf names a point of the bitemporal plane: valid time Valid, as known at
// transaction time Tx. Tx zero means the latest commit the reader sees.
type AsOf struct {
	Valid int64
	Tx    int64
}

// Latest is the transaction time of AsOf that reads the newest commit.
const Latest int64 = 0

// Sentinels for misses. Every miss is ErrNotFound; each also matches its reason.
var (
	ErrNotFound    = errors.New("bitempo: not found")
	ErrUnknownKey  = errors.New("bitempo: unknown key")
	ErrBeforeFirst = errors.New("bitempo: before the first version")
	ErrInGap       = errors.New("bitempo: in a gap")
	ErrAfterLast   = errors.New("bitempo: after the last version")
)

// Miss is the error of a read that found no version.
type Miss struct {
	Table  string
	Key    store.Key
	At     AsOf
	Reason store.MissReason
}

func (m *Miss) Error() string {
	return fmt.Sprintf("bitempo: %s %s at valid %d tx %d: %s", m.Table, m.Key, m.At.Valid, m.At.Tx, m.Reason)
}

// Is matches ErrNotFound and the sentinel of the miss's reason.
func (m *Miss) Is(target error) bool {
	return target == ErrNotFound || target == reasonErr(m.Reason)
}

func reasonErr(r store.MissReason) error {
	switch r {
	case store.UnknownKey:
		return ErrUnknownKey
	case store.BeforeFirst:
		return ErrBeforeFirst
	case store.InGap:
		return ErrInGap
	case store.AfterLast:
		return ErrAfterLast
	}
	return nil
}

// resolveTx turns AsOf.Tx into a concrete transaction time on snapshot s.
func resolveTx(s *store.Snapshot, tx int64) int64 {
	if tx == Latest {
		return s.LastTx()
	}
	return tx
}

// GetOptions tune Get and GetBySK. The zero value decodes every attribute.
type GetOptions struct {
	// Project, when not empty, names the attributes to decode (as
	// SnapshotOptions.Project): the version's Attrs holds only those of them
	// it has, and the others are stepped over in the stored record. Empty
	// decodes every attribute.
	Project []string
}

// Get returns the version of key in effect at at.Valid as known at at.Tx, or a
// *Miss. At the latest transaction time it costs one seek in the current-state
// index, however many corrections the key has had. With opts.Project it decodes
// only the attributes named; a call with the same list as an earlier one reuses
// its projection rather than building it again (store.Snapshot.Project caches a
// few per table), so a hot loop of projected reads costs no more allocations
// than unprojected ones.
func Get(r store.Reader, table string, key store.Key, at AsOf, opts GetOptions) (store.Version, error) {
	s, t, release, err := open(r, table)
	if err != nil {
		return store.Version{}, err
	}
	defer release()
	t = project(s, t, opts.Project)
	var buf [64]byte
	tuple, err := t.AppendKey(buf[:0], key)
	if err != nil {
		return store.Version{}, err
	}
	v, reason, err := s.VersionAt(t, tuple, at.Valid, resolveTx(s, at.Tx))
	if err != nil {
		return store.Version{}, err
	}
	if reason != store.Found {
		return store.Version{}, &Miss{Table: table, Key: key, At: at, Reason: reason}
	}
	return v, nil
}
