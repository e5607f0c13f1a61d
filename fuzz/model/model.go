package model

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
)

// Infinity and NegInfinity are the open ends of an interval.
const (
	Infinity    int64 = math.MaxInt64
	NegInfinity int64 = math.MinInt64
)

// Errors of the model. They mirror the store's sentinels by meaning, not identity.
var (
	ErrUnknownTable  = errors.New("model: unknown table")
	ErrTableExists   = errors.New("model: table already exists")
	ErrInvalidPeriod = errors.New("model: invalid period")
	ErrInvalidAttr   = errors.New("model: invalid attribute")
	ErrFinished      = errors.New("model: transaction has finished")
	ErrTxOrder       = errors.New("model: transaction time does not increase")
	ErrUnknownKey    = errors.New("model: erase of a key the table does not hold")
	ErrErased        = errors.New("model: key erased in this transaction")
	ErrBeforeHorizon = errors.New("model: transaction time before the retention horizon")
)

// Attrs is a record of named attribute values of canonical types.
type Attrs map[string]any

// Options say how change detection compares one attribute (as store.CompareOptions).
type Options struct {
	Round    bool
	Scale    int
	Trim     bool
	FoldCase bool
}

// Table declares a periods table of the model.
type Table struct {
	Name string
	// Key lists the key column names; attributes may not reuse them.
	Key []string
	// Track lists the tracked attributes; empty means all but TrackExcept.
	Track       []string
	TrackExcept []string
	Compare     map[string]Options
	// RetainTx is the transaction-time retention Vacuum applies (0: none).
	RetainTx int64
}

// Tracked reports whether a change of attribute name makes a new version.
func (t *Table) Tracked(name string) bool {
	if len(t.Track) > 0 {
		return slices.Contains(t.Track, name)
	}
	return !slices.Contains(t.TrackExcept, name)
}

// Record is a version as asserted by one transaction.
type Record struct {
	Key                string
	ValidFrom, ValidTo int64 // [from, to)
	TxFrom, TxTo       int64 // [from, to); TxTo is Infinity while current
	SK                 uint64
	Attrs              Attrs
	Inferred           bool
}

// AliveAt reports whether the record was believed at transaction time tx. A
// current record (TxTo = +∞) is alive at every tx from TxFrom on, +∞ included:
// reading at +∞ means reading the current state.
func (r Record) AliveAt(tx int64) bool {
	return r.TxFrom <= tx && (tx < r.TxTo || r.TxTo == Infinity)
}

// Covers reports whether valid time v lies in the record's valid period.
func (r Record) Covers(v int64) bool { return r.ValidFrom <= v && v < r.ValidTo }

// SameContent reports whether two records hold the same version: valid period,
// surrogate key, attributes (byte for byte) and inferred flag.
func (r Record) SameContent(o Record) bool {
	return r.Key == o.Key && r.ValidFrom == o.ValidFrom && r.ValidTo == o.ValidTo && r.SK == o.SK &&
		r.Inferred == o.Inferred && Identical(r.Attrs, o.Attrs)
}

func (r Record) String() string {
	return fmt.Sprintf("%s valid [%s, %s) tx [%s, %s) sk %d %s%s", r.Key, Tick(r.ValidFrom), Tick(r.ValidTo),
		Tick(r.TxFrom), Tick(r.TxTo), r.SK, FormatAttrs(r.Attrs), map[bool]string{true: " inferred"}[r.Inferred])
}

// Tick renders a time, with ±∞ spelled out.
func Tick(t int64) string {
	switch t {
	case Infinity:
		return "+inf"
	case NegInfinity:
		return "-inf"
	}
	return fmt.Sprint(t)
}

// FormatAttrs renders attributes in name order with their Go types visible.
func FormatAttrs(a Attrs) string {
	names := make([]string, 0, len(a))
	for n := range a {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s:%#v", n, a[n])
	}
	return "{" + strings.Join(parts, " ") + "}"
}

// Model is the reference store: tables of records and the last commit's time.
type Model struct {
	tables map[string]*table
	lastTx int64
}

type table struct {
	def     Table
	records []Record // every record ever asserted, in commit order
	nextSK  uint64
	horizon int64 // records retired at or before it were vacuumed (rule 9)
}

// New returns an empty model.
func New() *Model { return &Model{tables: map[string]*table{}} }

// CreateTable adds a table.
func (m *Model) CreateTable(def Table) error {
	if _, ok := m.tables[def.Name]; ok {
		return fmt.Errorf("%w: %q", ErrTableExists, def.Name)
	}
	m.tables[def.Name] = &table{def: def, nextSK: 1}
	return nil
}

// LastTx returns the transaction time of the newest commit (0 before any).
func (m *Model) LastTx() int64 { return m.lastTx }

func (m *Model) table(name string) (*table, error) {
	t, ok := m.tables[name]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownTable, name)
	}
	return t, nil
}

// Records returns every record of a key, current and retired, ordered by tx_from
// and then valid_from: the key's audit trail.
func (m *Model) Records(tableName, key string) ([]Record, error) {
	t, err := m.table(tableName)
	if err != nil {
		return nil, err
	}
	var out []Record
	for _, r := range t.records {
		if r.Key == key {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b Record) int {
		if a.TxFrom != b.TxFrom {
			return cmp.Compare(a.TxFrom, b.TxFrom)
		}
		return cmp.Compare(a.ValidFrom, b.ValidFrom)
	})
	return out, nil
}

// Keys returns every key the table has ever held, sorted.
func (m *Model) Keys(tableName string) ([]string, error) {
	t, err := m.table(tableName)
	if err != nil {
		return nil, err
	}
	var keys []string
	for _, r := range t.records {
		if !slices.Contains(keys, r.Key) {
			keys = append(keys, r.Key)
		}
	}
	sort.Strings(keys)
	return keys, nil
}

// VersionsAt returns the records of a key alive at transaction time tx, in
// ascending valid order.
func (m *Model) VersionsAt(tableName, key string, tx int64) ([]Record, error) {
	t, err := m.table(tableName)
	if err != nil {
		return nil, err
	}
	if err := t.checkHorizon(tx); err != nil {
		return nil, err
	}
	return aliveAt(t.records, key, tx), nil
}

// checkHorizon refuses a read at a transaction time before the table's
// retention horizon, whether or not the table holds any key: the history
// before the horizon is gone, so no answer about it can be given.
func (t *table) checkHorizon(tx int64) error {
	if tx < t.horizon {
		return fmt.Errorf("%w: %s at tx %d (horizon %d)", ErrBeforeHorizon, t.def.Name, tx, t.horizon)
	}
	return nil
}

// Horizon returns the table's retention horizon (0 before any Vacuum).
func (m *Model) Horizon(tableName string) int64 {
	if t, err := m.table(tableName); err == nil {
		return t.horizon
	}
	return 0
}

// Vacuum applies every table's retention at wall-clock time now (rule 9): the
// horizon moves to min(now - RetainTx, the last commit) when that is later,
// and the records retired at or before it are dropped. Moving a horizon is a
// commit of its own, at max(now, last + 1).
func (m *Model) Vacuum(now int64) {
	moved := false
	for _, t := range m.tables {
		if t.def.RetainTx == 0 {
			continue
		}
		h := min(now-t.def.RetainTx, m.lastTx)
		if h <= t.horizon {
			continue
		}
		t.horizon, moved = h, true
		t.records = slices.DeleteFunc(t.records, func(r Record) bool { return r.TxTo != Infinity && r.TxTo <= h })
	}
	if moved {
		m.lastTx = max(now, m.lastTx+1)
	}
}

func aliveAt(records []Record, key string, tx int64) []Record {
	var out []Record
	for _, r := range records {
		if r.Key == key && r.AliveAt(tx) {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b Record) int { return cmp.Compare(a.ValidFrom, b.ValidFrom) })
	return out
}

// Miss says why a read found no version.
type Miss uint8

// Reasons for a miss.
const (
	Found Miss = iota
	UnknownKey
	BeforeFirst
	InGap
	AfterLast
)

func (r Miss) String() string {
	names := [...]string{"found", "unknown key", "before the first version", "in a gap", "after the last version"}
	if int(r) < len(names) {
		return names[r]
	}
	return fmt.Sprintf("Miss(%d)", uint8(r))
}

// Get returns the record of key in effect at valid time valid as known at
// transaction time tx, or why there is none.
func (m *Model) Get(tableName, key string, valid, tx int64) (Record, Miss, error) {
	vs, err := m.VersionsAt(tableName, key, tx)
	if err != nil {
		return Record{}, 0, err
	}
	r, miss := lookup(vs, valid)
	return r, miss, nil
}

// lookup finds the version covering valid in a disjoint timeline, or the miss.
func lookup(vs []Record, valid int64) (Record, Miss) {
	for _, v := range vs {
		if v.Covers(valid) {
			return v, Found
		}
	}
	switch {
	case len(vs) == 0:
		return Record{}, UnknownKey
	case valid < vs[0].ValidFrom:
		return Record{}, BeforeFirst
	case valid >= vs[len(vs)-1].ValidTo:
		return Record{}, AfterLast
	}
	return Record{}, InGap
}

// Snapshot returns, for every key with a version at (valid, tx), that version,
// in key order. A tx before the table's retention horizon is refused even when
// the table holds no key, as the store refuses it.
func (m *Model) Snapshot(tableName string, valid, tx int64) ([]Record, error) {
	t, err := m.table(tableName)
	if err != nil {
		return nil, err
	}
	if err := t.checkHorizon(tx); err != nil {
		return nil, err
	}
	keys, err := m.Keys(tableName)
	if err != nil {
		return nil, err
	}
	var out []Record
	for _, k := range keys {
		r, miss, err := m.Get(tableName, k, valid, tx)
		if err != nil {
			return nil, err
		}
		if miss == Found {
			out = append(out, r)
		}
	}
	return out, nil
}

// History returns the versions of a key alive at transaction time tx that
// overlap the valid period [a, b), in valid order.
func (m *Model) History(tableName, key string, a, b, tx int64) ([]Record, error) {
	if a >= b {
		return nil, fmt.Errorf("%w: [%d, %d)", ErrInvalidPeriod, a, b)
	}
	vs, err := m.VersionsAt(tableName, key, tx)
	if err != nil {
		return nil, err
	}
	var out []Record
	for _, v := range vs {
		if v.ValidFrom < b && a < v.ValidTo {
			out = append(out, v)
		}
	}
	return out, nil
}
