package store

import (
	"fmt"
	"maps"
	"slices"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/engine"
	"github.com/bitempo/bitempo/layout"
)

// This file owns the established type of each attribute (keyspace 0x05):
//
//	0x05 | tid | ordinal (4 bytes BE) -> kind, precision, scale (3 bytes)
//
// An attribute establishes a type with the first non-null value a commit
// stores of it: its declared type when the table declares the column, else
// the type of that value (ValueType). The entry is written by that commit,
// beside the attribute's name when the name is new too, and never changes: it
// is what a later file's cells are read as (schema.go).

// readAttrTypes reads the established types of table tid from view v, naming
// them by the table's attribute names list.
func readAttrTypes(v engine.View, tid uint32, names []string) (map[string]ColumnType, error) {
	prefix := layout.AppendTablePrefix(nil, layout.AttrTypes, tid)
	it, err := v.NewIter(prefix, encoding.PrefixEnd(prefix))
	if err != nil {
		return nil, err
	}
	defer it.Close()
	types := map[string]ColumnType{}
	for ok := it.First(); ok; ok = it.Next() {
		ord, err := layout.DecodeAttrTypeKey(it.Key()[len(prefix):])
		if err != nil {
			return nil, err
		}
		typ, err := decodeColumnType(it.Value())
		if err != nil || int(ord) >= len(names) {
			return nil, fmt.Errorf("%w: attribute type %x at ordinal %d of table id %d (%d names): %v", ErrCorrupt, it.Value(), ord, tid, len(names), err)
		}
		types[names[ord]] = typ
	}
	return types, it.Error()
}

// appendColumnType appends the 3-byte stored form of t.
func appendColumnType(dst []byte, t ColumnType) []byte {
	return append(dst, byte(t.Kind), t.Precision, t.Scale)
}

func decodeColumnType(b []byte) (ColumnType, error) {
	if len(b) != 3 {
		return ColumnType{}, fmt.Errorf("%d bytes, want 3", len(b))
	}
	t := ColumnType{Kind: TypeKind(b[0]), Precision: b[1], Scale: b[2]}
	return t, t.validate()
}

// AttrType returns the type attribute name of table t established (its
// declared type, or that of the first non-null value stored). ok is false for
// an attribute that has never held a non-null value.
func (db *DB) AttrType(t *Table, name string) (ColumnType, bool) {
	db.mu.RLock()
	defer db.mu.RUnlock()
	typ, ok := db.attrType[t.ID][name]
	return typ, ok
}

// AttrTypes returns every established attribute type of table t, by name.
func (db *DB) AttrTypes(t *Table) map[string]ColumnType {
	db.mu.RLock()
	defer db.mu.RUnlock()
	return maps.Clone(db.attrType[t.ID])
}

// noteTypes records the types attrs establish for table t's attributes that
// have none yet (the Writer's db.mu-free view: only commits change attrType,
// under the writer lock).
func noteTypes(t *Table, attrs Attrs, known map[string]ColumnType, added map[uint32]map[string]ColumnType) {
	for name, v := range attrs {
		if v == nil {
			continue
		}
		if _, ok := known[name]; ok {
			continue
		}
		if _, ok := added[t.ID][name]; ok {
			continue
		}
		typ, ok := ValueType(v)
		if col, declared := t.Column(name); declared {
			typ, ok = col.Type, true
		}
		if !ok {
			continue
		}
		if added[t.ID] == nil {
			added[t.ID] = map[string]ColumnType{}
		}
		added[t.ID][name] = typ
	}
}

// newAttrs is what one commit adds to the attribute tables of the store: new
// names by table (numbered after the committed ones, in this order) and the
// types attributes establish. The Writer and the Importer both keep one.
type newAttrs struct {
	names map[uint32][]string
	types map[uint32]map[string]ColumnType
}

func makeNewAttrs() newAttrs {
	return newAttrs{names: map[uint32][]string{}, types: map[uint32]map[string]ColumnType{}}
}

// note records the names attrs of table t uses that have no ordinal yet, and
// the types they establish. Called under the writer lock, which is what keeps
// db.attrOrd and db.attrType stable without db.mu.
func (n newAttrs) note(db *DB, t *Table, attrs Attrs) {
	n.addNames(db, t, attrs.Names())
	noteTypes(t, attrs, db.attrType[t.ID], n.types)
}

// addNames numbers the names table t has no ordinal of yet, in the order given,
// after the table's known names.
func (n newAttrs) addNames(db *DB, t *Table, names []string) {
	ords := db.attrOrd[t.ID]
	for _, name := range names {
		if _, ok := ords[name]; !ok && !slices.Contains(n.names[t.ID], name) {
			n.names[t.ID] = append(n.names[t.ID], name)
		}
	}
}

// writes returns the engine writes that persist n. The caller holds db.mu for
// reading.
func (n newAttrs) writes(db *DB) []engine.Write {
	var out []engine.Write
	for tid, names := range n.names {
		base := uint32(len(db.attrList[tid]))
		for i, name := range names {
			out = append(out, engine.Write{Key: layout.AttrNameKey(tid, base+uint32(i)), Value: []byte(name)})
		}
	}
	for tid, types := range n.types {
		for name, typ := range types {
			ord, ok := db.attrOrd[tid][name]
			if !ok {
				ord = uint32(len(db.attrList[tid]) + slices.Index(n.names[tid], name))
			}
			out = append(out, engine.Write{Key: layout.AttrTypeKey(tid, ord), Value: appendColumnType(nil, typ)})
		}
	}
	return out
}

// publish makes n part of the DB's in-memory tables after its commit, and
// empties n. The caller holds db.mu for writing.
func (n newAttrs) publish(db *DB) {
	for tid, names := range n.names {
		for _, name := range names {
			db.attrOrd[tid][name] = uint32(len(db.attrList[tid]))
			db.attrList[tid] = append(db.attrList[tid], name)
		}
	}
	for tid, types := range n.types {
		if db.attrType[tid] == nil {
			db.attrType[tid] = map[string]ColumnType{}
		}
		maps.Copy(db.attrType[tid], types)
	}
	clear(n.names)
	clear(n.types)
}

// Conform is what a write transaction holds new attribute values to before it
// uses them: the table's declaration (Table.Conform), and for each attribute
// the table does not declare, the type it established (the first non-null
// value the table stored of it, or an earlier write of this transaction), with
// the same exact conversions (ConvertValue: an int64 where a float64 was
// established becomes a float64). A value of another type is a *SchemaError:
// one write cannot re-type an attribute. Versions already stored are never
// checked again, so rewriting pieces of old versions (a split, a close) never
// fails on a value stored before its attribute's type was established. A
// table with MixedTypes holds only its declared columns to a type.
func (w *Writer) Conform(t *Table, attrs Attrs) (Attrs, error) {
	if nt, ok := w.redeclared[t.ID]; ok {
		t = nt
	}
	attrs, err := t.Conform(attrs)
	if err != nil {
		return nil, err
	}
	held := w.db.attrType[t.ID] // stable under the writer lock
	copied := false
	for name, v := range attrs {
		if v == nil {
			continue
		}
		if _, declared := t.colIndex[name]; declared || t.MixedTypes {
			continue
		}
		typ, ok := held[name]
		if !ok {
			typ, ok = w.attrs.types[t.ID][name]
		}
		if !ok {
			typ, ok = w.entryTypes[t.ID][name]
		}
		if !ok {
			if typ, ok = ValueType(v); ok {
				if w.entryTypes == nil {
					w.entryTypes = map[uint32]map[string]ColumnType{}
				}
				if w.entryTypes[t.ID] == nil {
					w.entryTypes[t.ID] = map[string]ColumnType{}
				}
				w.entryTypes[t.ID][name] = typ
			}
			continue
		}
		c, reason, ok := ConvertValue(typ, v)
		if !ok {
			return nil, &SchemaError{Table: t.Name, Column: name, Type: typ.String(), Value: v,
				Reason: reason + " (the type the attribute established)"}
		}
		if !sameValue(c, v) {
			if !copied {
				attrs, copied = attrs.Clone(), true
			}
			attrs[name] = c
		}
	}
	return attrs, nil
}
