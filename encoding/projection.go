package encoding

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
)

// This file decodes a projection of positional attributes: only the attributes
// a read asks for are decoded; the others are stepped over without allocating.
// Because ordinals ascend within a record, a decode stops at the first ordinal
// after the last one it can keep, so a projection of a table's first attributes
// reads only the front of each record.
//
// A projected decode checks what it reads (the count, every ordinal up to where
// it stops, the values it steps over and those it keeps) but not the bytes after
// it stops, nor that a stepped-over ordinal has a name: Verify and unprojected
// reads check whole records. The store caches projections per table
// (docs/design/projection-view-cache.md).

// Projection selects the attributes a projected decode keeps, by ordinal.
type Projection struct {
	// Keep[ord] says whether to keep the attribute of ordinal ord, for the
	// ordinals the table had when the projection was made.
	Keep []bool
	// Names are the names asked for: an ordinal at or after len(Keep) (named
	// after the projection was made) is kept when its name is one of them.
	Names []string
	// Last is the greatest ordinal that can be kept: math.MaxUint32 when some
	// name in Names had no ordinal when the projection was made.
	Last uint32
}

// NewProjection returns the projection of names over a table whose ordinals
// name, in order, the names in ordinals (ordinal i is ordinals[i]). Names
// without an ordinal are kept if a later ordinal gets them.
func NewProjection(names, ordinals []string) *Projection {
	p := &Projection{Keep: make([]bool, len(ordinals)), Names: slices.Clone(names)}
	found, last := 0, -1
	for _, want := range p.Names {
		if i := slices.Index(ordinals, want); i >= 0 {
			if !p.Keep[i] {
				p.Keep[i], found = true, found+1
			}
			last = max(last, i)
		}
	}
	distinct := len(slices.Compact(slices.Sorted(slices.Values(p.Names))))
	switch {
	case found < distinct:
		p.Last = math.MaxUint32
	case last < 0:
		p.Last = 0 // no names: nothing kept; the first ordinal stops the walk
	default:
		p.Last = uint32(last)
	}
	return p
}

// Keeps reports whether p keeps the attribute of ordinal ord named name.
func (p *Projection) Keeps(ord uint32, name string) bool {
	if int(ord) < len(p.Keep) {
		return p.Keep[ord]
	}
	return slices.Contains(p.Names, name)
}

// keeps reports whether p keeps the attribute of ordinal ord, named by name.
func (p *Projection) keeps(ord uint32, name func(ord uint32) (string, bool)) bool {
	if int(ord) < len(p.Keep) {
		return p.Keep[ord]
	}
	nm, ok := name(ord)
	return ok && slices.Contains(p.Names, nm)
}

// DecodeRecordProjected is DecodeRecordPositional keeping only the attributes p
// keeps: the others are stepped over without allocating, and the decode stops
// after the last attribute p can keep. Attrs is an empty map when the record
// holds none of them (nil when the record shares its attributes).
func DecodeRecordProjected(b []byte, keyTxFrom int64, name func(ord uint32) (string, bool), p *Projection) (RecordValue, error) {
	return DecodeRecordProjectedAt(b, 0, keyTxFrom, name, p)
}

// DecodeRecordProjectedAt is DecodeRecordProjected for a value whose valid_to
// is a distance from validFrom (the *At encoders).
func DecodeRecordProjectedAt(b []byte, validFrom, keyTxFrom int64, name func(ord uint32) (string, bool), p *Projection) (RecordValue, error) {
	r, rest, shared, err := recordHead(b, validFrom, keyTxFrom)
	if err != nil || shared {
		return r, err
	}
	r.Attrs = Attrs{}
	err = walkProjected(rest, name, p, func(nm string, v []byte) ([]byte, error) {
		val, rest, err := parseScalar(v)
		if err != nil {
			return nil, err
		}
		if _, dup := r.Attrs[nm]; dup {
			return nil, fmt.Errorf("appears twice")
		}
		r.Attrs[nm] = val
		return rest, nil
	})
	return r, err
}

// WalkAttrsProjected is WalkAttrsPositional calling fn only for the attributes
// p keeps; it stops after the last attribute p can keep. A nil p keeps all.
func WalkAttrsProjected(b []byte, name func(ord uint32) (string, bool), p *Projection, fn func(name string, v *Value) error) error {
	return WalkAttrsProjectedInto(b, name, p, new(Value), fn)
}

// WalkAttrsProjectedInto is WalkAttrsProjected reporting each value in v, which
// the caller owns: a caller that walks many records with one Value allocates
// nothing per record (WalkAttrsProjected allocates a Value per call, since fn
// may keep it).
func WalkAttrsProjectedInto(b []byte, name func(ord uint32) (string, bool), p *Projection, v *Value, fn func(name string, v *Value) error) error {
	var fnErr error
	err := walkProjected(b, name, p, func(nm string, b []byte) ([]byte, error) {
		rest, err := scanValue(b, v)
		if err != nil {
			return nil, err
		}
		if fnErr = fn(nm, v); fnErr != nil {
			return nil, fnErr
		}
		return rest, nil
	})
	if fnErr != nil {
		return fnErr
	}
	return err
}

// walkProjected walks positional attributes b, calling keep with the name and
// the bytes of each attribute p keeps (every attribute when p is nil, which
// also checks the whole input) (keep consumes the value and returns the bytes
// after it) and stepping over the others. Errors are ErrCorrupt.
func walkProjected(b []byte, name func(ord uint32) (string, bool), p *Projection, keep func(name string, b []byte) ([]byte, error)) error {
	n, b, err := positionalCount(b)
	if err != nil {
		return err
	}
	var skip Value
	next := uint64(0)
	for i := range n {
		gap, w := binary.Uvarint(b)
		if w <= 0 || next+gap > 1<<32-1 {
			return fmt.Errorf("%w: attribute %d ordinal", ErrCorrupt, i)
		}
		ord := uint32(next + gap)
		next = uint64(ord) + 1
		if p != nil && ord > p.Last {
			return nil // nothing at or after ord is kept
		}
		var err error
		if p == nil || p.keeps(ord, name) {
			nm, ok := name(ord)
			if !ok {
				return fmt.Errorf("%w: attribute ordinal %d has no name", ErrCorrupt, ord)
			}
			if b, err = keep(nm, b[w:]); err != nil {
				return fmt.Errorf("%w: attribute %q: %v", ErrCorrupt, nm, err)
			}
		} else if b, err = scanValue(b[w:], &skip); err != nil {
			return fmt.Errorf("%w: attribute ordinal %d: %v", ErrCorrupt, ord, err)
		}
		if p != nil && ord >= p.Last {
			return nil // no later ordinal is kept
		}
	}
	if len(b) != 0 {
		return fmt.Errorf("%w: %d trailing bytes after attributes", ErrCorrupt, len(b))
	}
	return nil
}
