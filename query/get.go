package query

import (
	"errors"
	"fmt"
	"strconv"
	"time"

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

	// axis is the table's valid-time axis, which Error prints At.Valid on;
	// axisKnown is false for a Miss built outside this package, whose valid
	// time prints as the raw tick count.
	axis      store.Axis
	axisKnown bool
}

func newMiss(t *store.Table, table string, key store.Key, at AsOf, reason store.MissReason) *Miss {
	return &Miss{Table: table, Key: key, At: at, Reason: reason, axis: t.Axis, axisKnown: true}
}

// NewMiss returns the Miss of a read of key in table t at at, which prints its
// valid time on t's axis (a Miss built as a literal prints raw ticks).
func NewMiss(t *store.Table, key store.Key, at AsOf, reason store.MissReason) *Miss {
	return newMiss(t, t.Name, key, at, reason)
}

// Error prints the valid time on the table's axis (RFC 3339 on a time axis,
// YYYY-MM-DD on a date axis, the integer on an int axis) and the transaction
// time as RFC 3339, or "latest" for Latest.
func (m *Miss) Error() string {
	return fmt.Sprintf("bitempo: %s %s at valid %s tx %s: %s", m.Table, m.Key, m.validString(), txString(m.At.Tx), m.Reason)
}

func (m *Miss) validString() string {
	v := m.At.Valid
	switch {
	case v == store.Infinity:
		return "+infinity"
	case v == store.NegInfinity:
		return "-infinity"
	case !m.axisKnown || m.axis == store.AxisInt:
		return strconv.FormatInt(v, 10)
	case m.axis == store.AxisDate && v%(24*3600*1e6) == 0:
		return time.UnixMicro(v).UTC().Format(time.DateOnly)
	}
	return time.UnixMicro(v).UTC().Format(instantLayout)
}

// instantLayout is RFC 3339 to the microsecond, as the tool prints instants.
const instantLayout = "2006-01-02T15:04:05.999999Z07:00"

// txString prints a transaction time of a read: "latest" for Latest, else RFC
// 3339 (transaction times are microseconds since the Unix epoch).
func txString(tx int64) string {
	if tx == Latest {
		return "latest"
	}
	return time.UnixMicro(tx).UTC().Format(instantLayout)
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
	s, t, release, err := openProjected(r, table, opts.Project)
	if err != nil {
		return store.Version{}, err
	}
	defer release()
	v, reason, err := s.KeyVersionAt(t, key, at.Valid, resolveTx(s, at.Tx))
	if err != nil {
		return store.Version{}, err
	}
	if reason != store.Found {
		return store.Version{}, newMiss(t, table, key, at, reason)
	}
	return v, nil
}
