// Package oplog drives the store and the reference model (package model) with the
// same log of periods-table operations and reports the first place where they
// disagree. The randomized tests, the fuzz targets and the metamorphic test share
// it: a log is generated from a seed (Random) or decoded from fuzz input
// (Decode), run by a Runner against a store, and shrunk (Shrink) to a short
// failing log when something breaks.
//
// A log is a list of transactions. Each transaction is a few Put, Delete, Upsert
// and DeleteAt operations over a handful of keys of a few tables (different
// tracked subsets and comparison options), the wall-clock reading the store sees
// while it commits (which may step back), and how it ends: commit, return an
// error, or panic. Failed transactions must leave both sides unchanged.
package oplog

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/fuzz/model"
	"github.com/bitempo/bitempo/store"
)

// Kind is an operation of a log.
type Kind uint8

// Operations.
const (
	Put Kind = iota
	Delete
	Upsert
	DeleteAt
	Erase
)

func (k Kind) String() string { return [...]string{"put", "delete", "upsert", "delete-at", "erase"}[k] }

// Op is one write. Upsert and DeleteAt use From as their effective time.
type Op struct {
	Kind     Kind
	Table    string
	Key      string
	Attrs    map[string]any
	From, To int64
}

func (o Op) String() string {
	switch o.Kind {
	case Put:
		return fmt.Sprintf("put %s %s %s [%s, %s)", o.Table, o.Key, model.FormatAttrs(o.Attrs), model.Tick(o.From), model.Tick(o.To))
	case Delete:
		return fmt.Sprintf("delete %s %s [%s, %s)", o.Table, o.Key, model.Tick(o.From), model.Tick(o.To))
	case Upsert:
		return fmt.Sprintf("upsert %s %s %s at %s", o.Table, o.Key, model.FormatAttrs(o.Attrs), model.Tick(o.From))
	case Erase:
		return fmt.Sprintf("erase %s %s", o.Table, o.Key)
	}
	return fmt.Sprintf("delete-at %s %s at %s", o.Table, o.Key, model.Tick(o.From))
}

// End says how a transaction ends.
type End uint8

// Transaction endings.
const (
	Commit      End = iota // the function returns nil
	ReturnError            // the function returns an error after its operations
	Panic                  // the function panics after its operations
)

func (e End) String() string { return [...]string{"commit", "error", "panic"}[e] }

// Txn is one transaction of a log.
type Txn struct {
	Ops []Op
	End End
	// Clock is what the store's wall clock reads during the transaction.
	Clock int64
	// Vacuum runs DB.Vacuum (and the model's) after the transaction, at Clock.
	Vacuum bool
}

func (t Txn) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "txn clock %d, %s:", t.Clock, t.End)
	for _, op := range t.Ops {
		b.WriteString("\n    ")
		b.WriteString(op.String())
	}
	if t.Vacuum {
		b.WriteString("\n    then vacuum")
	}
	return b.String()
}

// Log is a sequence of transactions over a set of tables.
type Log struct {
	Tables []TableSpec
	Keys   []string
	Txns   []Txn
}

func (l Log) String() string {
	var b strings.Builder
	for _, t := range l.Tables {
		fmt.Fprintf(&b, "table %s\n", t)
	}
	for i, t := range l.Txns {
		fmt.Fprintf(&b, "%d: %s\n", i, t)
	}
	return b.String()
}

// Ops returns the number of operations in the log.
func (l Log) Ops() int {
	n := 0
	for _, t := range l.Txns {
		n += len(t.Ops)
	}
	return n
}

// TableSpec declares one table of a log, for both the store and the model.
type TableSpec struct {
	Name        string
	Track       []string
	TrackExcept []string
	Compare     map[string]store.CompareOptions
	// RetainTx is the table's transaction-time retention (Txn.Vacuum).
	RetainTx int64
}

func (s TableSpec) String() string {
	return fmt.Sprintf("%s track %v except %v compare %v retain %d", s.Name, s.Track, s.TrackExcept, s.Compare, s.RetainTx)
}

// KeyColumn is the name of every log table's single string key column.
const KeyColumn = "id"

// StoreDef returns the store's definition of the table.
func (s TableSpec) StoreDef() store.TableDef {
	return store.TableDef{
		Name: s.Name, Key: []store.KeyColumn{{Name: KeyColumn, Type: store.String}},
		Track: s.Track, TrackExcept: s.TrackExcept, Compare: s.Compare, RetainTx: s.RetainTx,
		// The generator draws each value's type at random, as the model allows.
		MixedTypes: true,
	}
}

// ModelDef returns the model's definition of the table.
func (s TableSpec) ModelDef() model.Table {
	return model.Table{Name: s.Name, Key: []string{KeyColumn}, Track: s.Track, TrackExcept: s.TrackExcept, Compare: model.CompareOf(s.Compare), RetainTx: s.RetainTx}
}

// DefaultTables are the tables logs run on: every attribute tracked with exact
// comparison, with a transaction-time retention of 40 ticks; two tracked attributes with trim/case-fold and rounding options;
// everything but one attribute tracked, with rounding to whole numbers.
var DefaultTables = []TableSpec{
	{Name: "exact", RetainTx: 40},
	{Name: "tracked", Track: []string{"a", "b"}, Compare: map[string]store.CompareOptions{
		"a": {Trim: true, FoldCase: true},
		"b": {Round: true, Scale: 2},
	}},
	{Name: "except", TrackExcept: []string{"d"}, Compare: map[string]store.CompareOptions{
		"a": {Trim: true},
		"b": {Round: true, Scale: 4},
		"c": {Round: true, Scale: 0},
	}},
}

// DefaultKeys are the keys logs write.
var DefaultKeys = []string{"k0", "k1", "k2", "k3"}

// Valid times of generated operations lie in [0, MaxValid], plus ±∞.
const MaxValid = 15

// Attribute value pools: each attribute draws mostly from its own pool, so that
// tracked-equal and tracked-different values are both common under the tables'
// comparison options, and sometimes from all of them.
var pools = map[string][]any{
	"a": {"Oslo", "oslo", " Oslo ", "OSLO", "Bergen", "bergen\t", "", nil, "Straße", "STRASSE"},
	"b": {int64(1), 1.0, 1.2345, 1.23450, 1.23449, 1.2346, int64(2), 2.004, 1.994, math.Copysign(0, -1), 0.0, nil, math.NaN(), math.Inf(1),
		dec("1.2345"), dec("1.23450"), dec("1.2346"), dec("1"), dec("1.00"), dec("2.004"), dec("0"), dec("0.000"), dec("-1.994")},
	"c": {true, false, nil, int64(0), int64(-1), 0.4, -0.4, 2.5001, "x", []byte("x"), []byte{},
		time.Unix(0, 0).UTC(), time.Unix(0, 999).In(time.FixedZone("", 3600)), time.Unix(0, 1000).UTC(),
		dec("0.40"), dec("-0.4"), dec("2.5001"), dec("-0.000000000000000001")},
	"d": {"u1", "u2", int64(7), nil, 7.0, uint64(math.MaxUint64), dec("7"), dec("7.000"), dec("999999999999999999"), dec("-999999999999999999")},
}

// dec is a decimal pool value.
func dec(s string) encoding.Decimal {
	d, err := encoding.ParseDecimal(s)
	if err != nil {
		panic(err)
	}
	return d
}

// edgePools hold values on which change detection commonly goes wrong, by the
// model's rule 5: decimal ties (0.125 vs 0.13 at scale 2, 2.5 vs 3 at scale 0),
// floats whose binary value lies below what they read (1.005 vs 1.01), integers
// that float64 cannot hold (2^53+1 vs 2^53, 2^63 vs 2^63-1), and letters whose
// upper-then-lower case mapping is not simple folding (İ and ı vs i).
var edgePools = map[string][]any{
	"a": {"i", "I", "\u0130", "\u0131", "k", "\u212a", "Oslo"},
	"b": {0.125, 0.13, 0.12, 1.005, 1.01, 1.0, int64(1), int64(1<<53 + 1), float64(1 << 53),
		dec("0.125"), dec("0.13"), dec("1.005"), dec("1.0050"), dec("1.01"), dec("-0.125")},
	"c": {0.5, -0.5, int64(0), int64(1), int64(-1), 2.5, int64(2), int64(3), dec("2.5"), dec("-0.5"), dec("3.0")},
	"d": {uint64(1 << 63), int64(math.MaxInt64), float64(1 << 63), dec("999999999999999999"), dec("0.999999999999999999")},
}

// attrNames are the attribute names of generated operations, in a fixed order.
var attrNames = []string{"a", "b", "c", "d"}
