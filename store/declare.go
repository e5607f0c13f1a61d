package store

import (
	"fmt"
	"slices"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/engine"
	"github.com/bitempo/bitempo/layout"
)

// This file changes and reads a table's column declaration over transaction
// time (keyspace 0x06; schema.go states the rules):
//
//	0x06 | tid | asc(tx) -> msgpack Declaration
//
// CreateTable writes the declaration it was given at tx 0; AddColumn and
// WidenColumn write the new one at their commit's transaction time and
// rewrite the catalog entry, which always holds the newest. Stored versions
// are never rewritten.

// marshalDeclaration encodes the schema entry of a definition.
func marshalDeclaration(d *TableDef) ([]byte, error) {
	decl := declarationOf(d)
	return msgpack.Marshal(&decl)
}

// Table returns the named table as this transaction sees it: with the
// declaration changes the transaction has made so far.
func (w *Writer) Table(name string) (*Table, error) {
	for _, t := range w.redeclared {
		if t.Name == name {
			return t, nil
		}
	}
	return w.db.Table(name)
}

// AddColumn declares one more column of table t as of this commit and returns
// the table with it. The column must be nullable: the versions already stored
// have no value of it and read null. A name that is already an attribute of the
// table may be declared only with the type that attribute established (or one
// it widens to), so no stored value contradicts the declaration.
func (w *Writer) AddColumn(t *Table, col Column) (*Table, error) {
	t, err := w.Table(t.Name)
	if err != nil {
		return nil, err
	}
	if !col.Nullable {
		return nil, fmt.Errorf("%w: table %q: an added column must be nullable (the versions already stored have no value of %q)", ErrInvalidTable, t.Name, col.Name)
	}
	if _, ok := t.Column(col.Name); ok {
		return nil, fmt.Errorf("%w: table %q already declares column %q", ErrInvalidTable, t.Name, col.Name)
	}
	if held, ok := w.db.AttrType(t, col.Name); ok && held != col.Type && !widens(held, col.Type) {
		return nil, &SchemaError{Table: t.Name, Column: col.Name, Type: col.Type.String(),
			Reason: fmt.Sprintf("the attribute already holds %s values", held)}
	}
	def := cloneDef(t.TableDef)
	def.Columns = append(def.Columns, col)
	return w.redeclare(t, def)
}

// WidenColumn changes the type of declared column name of table t to a wider
// one as of this commit: an int64 to a decimal, a decimal to one with no fewer
// integer digits and no smaller scale. Stored values keep their bytes; readers
// convert them (Table.ConformValue).
func (w *Writer) WidenColumn(t *Table, name string, to ColumnType) (*Table, error) {
	t, err := w.Table(t.Name)
	if err != nil {
		return nil, err
	}
	col, ok := t.Column(name)
	if !ok {
		return nil, fmt.Errorf("%w: table %q declares no column %q", ErrInvalidTable, t.Name, name)
	}
	if !widens(col.Type, to) {
		return nil, fmt.Errorf("%w: table %q column %q: %s cannot be widened to %s without changing stored values (int64 widens to decimal, decimal(P,S) to one with no fewer integer digits and no smaller scale)",
			ErrInvalidTable, t.Name, name, col.Type, to)
	}
	def := cloneDef(t.TableDef)
	def.Columns[t.colIndex[name]].Type = to
	return w.redeclare(t, def)
}

// redeclare queues the catalog and schema writes of t's new definition def and
// makes the transaction's later writes see it.
func (w *Writer) redeclare(t *Table, def TableDef) (*Table, error) {
	if err := def.validate(); err != nil {
		return nil, err
	}
	cat, err := msgpack.Marshal(&catalogRecord{ID: t.ID, Def: def})
	if err != nil {
		return nil, fmt.Errorf("bitempo: encode table %q: %w", def.Name, err)
	}
	decl, err := marshalDeclaration(&def)
	if err != nil {
		return nil, fmt.Errorf("bitempo: encode the declaration of %q: %w", def.Name, err)
	}
	w.set(layout.CatalogKey(def.Name), cat)
	w.set(layout.SchemaKey(t.ID, w.Tx()), decl)
	nt := newTable(def, t.ID)
	if w.redeclared == nil {
		w.redeclared = map[uint32]*Table{}
	}
	w.redeclared[t.ID] = nt
	return nt, nil
}

// Declaration returns table t's column declaration in effect at transaction
// time tx: the one of the newest change at or before tx, or none (no columns)
// when the table had no declaration then.
func (s *Snapshot) Declaration(t *Table, tx int64) (Declaration, error) {
	prefix := layout.AppendTablePrefix(nil, layout.Schemas, t.ID)
	it, err := s.newIter(prefix, layout.SchemaKey(t.ID, tx+min(1, Infinity-tx)))
	if err != nil {
		return Declaration{}, err
	}
	defer it.Close()
	if !it.Last() {
		return Declaration{}, it.Error()
	}
	return decodeDeclaration(t, it.Key()[len(prefix):], it.Value())
}

// Declarations returns every declaration table t has had, oldest first.
func (s *Snapshot) Declarations(t *Table) ([]Declaration, error) {
	prefix := layout.AppendTablePrefix(nil, layout.Schemas, t.ID)
	it, err := s.newIter(prefix, encoding.PrefixEnd(prefix))
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var out []Declaration
	for ok := it.First(); ok; ok = it.Next() {
		d, err := decodeDeclaration(t, it.Key()[len(prefix):], it.Value())
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, it.Error()
}

func decodeDeclaration(t *Table, key, value []byte) (Declaration, error) {
	since, err := layout.DecodeSchemaKey(key)
	if err != nil {
		return Declaration{}, err
	}
	var d Declaration
	if err := encoding.UnmarshalBounded(value, &d); err != nil {
		return Declaration{}, fmt.Errorf("%w: declaration of table %q at tx %d: %v", ErrCorrupt, t.Name, since, err)
	}
	def := TableDef{Name: t.Name, Key: t.Key, Columns: d.Columns, Strict: d.Strict}
	if err := def.validateColumns(); err != nil {
		return Declaration{}, fmt.Errorf("%w: declaration of table %q at tx %d: %v", ErrCorrupt, t.Name, since, err)
	}
	d.Since = since
	return d, nil
}

// sameDeclaration reports whether two tables declare the same columns.
func sameDeclaration(a, b *Table) bool {
	return a.Strict == b.Strict && slices.Equal(a.Columns, b.Columns)
}

// schemaWrite returns the write of a new table's first declaration, if it has one.
func schemaWrite(def *TableDef, id uint32) ([]engine.Write, error) {
	if len(def.Columns) == 0 && !def.Strict {
		return nil, nil
	}
	decl, err := marshalDeclaration(def)
	if err != nil {
		return nil, err
	}
	return []engine.Write{{Key: layout.SchemaKey(id, 0), Value: decl}}, nil
}
