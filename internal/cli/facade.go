package cli

import (
	"fmt"
	"io"

	"github.com/bitempo/bitempo/internal/diagram"
	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
)

// This file lends package server the tool's own readings and printings of
// keys and times, so that its JSON API and pages take and show them exactly as
// the tool does.

// ParseKey parses one value per key column of t, as get takes them.
func ParseKey(t *store.Table, values []string) (store.Key, error) { return parseKeyArgs(t, values) }

// ParseValid parses a valid time on t's axis ("now" included).
func ParseValid(t *store.Table, s string) (int64, error) { return parseAxisValue(t.Axis, s) }

// ParseTx parses a transaction time as --tx does; 0 is the latest commit.
func ParseTx(s string) (int64, error) { return parseTx(s) }

// ParseSince parses a change feed's start as changes --since does: a
// transaction time, or 0 (or "beginning") for the first commit still held.
func ParseSince(s string) (int64, error) { return parseSince(s) }

// TableHorizon returns t's retention horizon, after which a feed that starts
// at 0 begins (0 when t was never vacuumed).
func TableHorizon(db *store.DB, t *store.Table) (int64, error) { return tableHorizon(db, t) }

// FormatValid prints a valid time of t as the tool does ("" for an open end).
func FormatValid(t *store.Table, v int64) string { return formatAxisValue(t.Axis, v) }

// FormatTx prints a transaction time as the tool does ("" for an open end).
func FormatTx(tx int64) string { return formatInstant(tx) }

// IsUsage reports whether err is a mistake in what was asked (exit status 2
// for the tool), as opposed to a failure of the store.
func IsUsage(err error) bool {
	_, ok := err.(*usageError)
	return ok
}

// KeyDiagram writes the bitemporal diagram of key (package diagram) from its
// audit trail.
func KeyDiagram(w io.Writer, db *store.DB, t *store.Table, key store.Key) error {
	records, err := keyAudit(db, t, key, nil)
	if err != nil {
		return err
	}
	if len(records) == 0 {
		return fmt.Errorf("%s %s: %w", t.Name, key, query.ErrUnknownKey)
	}
	unit := int64(1)
	if t.Axis == store.AxisDate {
		unit = dayTicks
	}
	return diagram.SVG(w, records, diagram.Options{
		Title: fmt.Sprintf("%s %s", t.Name, key), Attrs: db.AttrNames(t), ValidUnit: unit,
		FormatValid: func(v int64) string { return orInfinity(formatAxisValue(t.Axis, v), v) },
		FormatTx:    func(tx int64) string { return orInfinity(formatInstant(tx), tx) },
	})
}

// orInfinity names an open end in a diagram, where "" would be ambiguous.
func orInfinity(s string, v int64) string {
	switch {
	case s != "":
		return s
	case v == store.NegInfinity:
		return "-inf"
	}
	return "+inf"
}

// writeSVG writes the diagram of key to path, whole or not at all
// (writeFileWhole).
func writeSVG(path string, db *store.DB, t *store.Table, key store.Key) error {
	return writeFileWhole(path, func(w io.Writer) error { return KeyDiagram(w, db, t, key) })
}
