package model

import (
	"bytes"
	"cmp"
	"slices"
	"strings"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/store"
)

// ChangesTable declares a changes table of the model: the change detection of a
// periods table plus the CDC settings of its derivation.
type ChangesTable struct {
	Table
	// Granularity truncates event times to multiples of itself (none when <= 1).
	Granularity int64
	// IgnoreNulls makes an upsert's absent attributes keep the key's previous
	// values (partial updates).
	IgnoreNulls bool
}

// Event is one CDC event of a key: an upsert of Attrs, or a delete.
type Event struct {
	Key     string
	At, Seq int64
	Delete  bool
	Attrs   Attrs
}

// Version is a derived version of a changes table.
type Version struct {
	Key      string
	From, To int64
	Attrs    Attrs
}

// Derive derives a changes table's versions from a whole event set, from scratch,
// in the steps docs/semantics.md states them, with none of the store's incremental
// machinery (suffix re-derivation, checkpoints, lateness). The result is sorted by
// key and valid_from.
//
//  1. The event set: one event per (key, at, seq); duplicates collapse. A delete
//     beats an upsert; of two upserts, the one whose canonical attribute encoding
//     (package encoding, the one piece of the store's code the model uses: it
//     defines the order) is smaller wins, so arrival order never matters.
//  2. Per key, in (at, seq) order: a partial update (IgnoreNulls) is completed from
//     the key's previous state; a delete clears that state. Times are truncated to
//     the granule, and a granule keeps the state after its last event.
//  3. Runs: an upsert whose tracked attributes equal the open version's extends it
//     (the version takes the newest attributes); another upsert closes it at the
//     granule and opens a new one; a delete closes it.
func (t *ChangesTable) Derive(events []Event) []Version {
	type pos struct {
		key     string
		at, seq int64
	}
	set := map[pos]Event{}
	for _, e := range events {
		p := pos{e.Key, e.At, e.Seq}
		if old, ok := set[p]; !ok || beats(e, old) {
			set[p] = e
		}
	}
	positions := make([]pos, 0, len(set))
	for p := range set {
		positions = append(positions, p)
	}
	slices.SortFunc(positions, func(a, b pos) int {
		if c := strings.Compare(a.key, b.key); c != 0 {
			return c
		}
		if c := cmp.Compare(a.at, b.at); c != 0 {
			return c
		}
		return cmp.Compare(a.seq, b.seq)
	})

	type granuleState struct {
		key     string
		g       int64
		deleted bool
		attrs   Attrs
	}
	var states []granuleState
	var carry Attrs
	for i, p := range positions {
		if i == 0 || positions[i-1].key != p.key {
			carry = nil
		}
		e := set[p]
		if e.Delete {
			carry = nil
		} else {
			full := Attrs{}
			if t.IgnoreNulls {
				for k, v := range carry {
					full[k] = v
				}
			}
			for k, v := range e.Attrs {
				full[k] = v
			}
			carry = full
		}
		st := granuleState{p.key, floorTo(p.at, t.Granularity), e.Delete, carry}
		if n := len(states); n > 0 && states[n-1].key == p.key && states[n-1].g == st.g {
			states[n-1] = st
		} else {
			states = append(states, st)
		}
	}

	var out []Version
	open := false
	for i, st := range states {
		if i > 0 && states[i-1].key != st.key {
			open = false
		}
		last := len(out) - 1
		switch {
		case st.deleted:
			if open {
				out[last].To = st.g
			}
			open = false
		case open && t.TrackedEqual(out[last].Attrs, st.attrs):
			out[last].Attrs = st.attrs
		default:
			if open {
				out[last].To = st.g
			}
			out = append(out, Version{st.key, st.g, Infinity, st.attrs})
			open = true
		}
	}
	return out
}

// beats reports whether event e wins over old at the same (key, at, seq).
func beats(e, old Event) bool {
	if e.Delete || old.Delete {
		return e.Delete && !old.Delete
	}
	a, _ := encoding.AppendAttrs(nil, encoding.Attrs(e.Attrs))
	b, _ := encoding.AppendAttrs(nil, encoding.Attrs(old.Attrs))
	return bytes.Compare(a, b) < 0
}

// floorTo floors at to a multiple of g (at itself when g <= 1).
func floorTo(at, g int64) int64 {
	if g <= 1 {
		return at
	}
	q := at / g
	if at%g != 0 && at < 0 {
		q--
	}
	return q * g
}

// ChangesTableOf declares the model's counterpart of a store changes table: the
// same tracked attributes, comparison options, granularity and null handling.
// It is a translation of declarations only; the model's semantics stay its own.
func ChangesTableOf(def store.TableDef) ChangesTable {
	var key []string
	for _, c := range def.Key {
		key = append(key, c.Name)
	}
	return ChangesTable{
		Table:       Table{Name: def.Name, Key: key, Track: def.Track, TrackExcept: def.TrackExcept, Compare: CompareOf(def.Compare)},
		Granularity: def.Granularity,
		IgnoreNulls: def.IgnoreNulls,
	}
}

// CompareOf translates a store table's comparison options into the model's.
func CompareOf(opts map[string]store.CompareOptions) map[string]Options {
	cmp := map[string]Options{}
	for name, o := range opts {
		cmp[name] = Options{Round: o.Round, Scale: o.Scale, Trim: o.Trim, FoldCase: o.FoldCase}
	}
	return cmp
}
