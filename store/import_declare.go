package store

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/bitempo/bitempo/engine"
	"github.com/bitempo/bitempo/layout"
)

// declared is one declaration of a table and a table value that holds
// records to it.
type declared struct {
	Declaration
	t *Table
}

// Declarations imports table t's declaration history, oldest first (what
// Snapshot.Declarations returns): it replaces the one CreateTable recorded, so
// reads at every transaction time report the declaration of their time. The
// last must be the table's current declaration. Call it before the table's
// records; each record is then held to the declaration in effect at its
// tx_from.
func (im *Importer) Declarations(t *Table, decls []Declaration) error {
	if err := im.begin(t); err != nil {
		return err
	}
	if len(decls) == 0 {
		return nil
	}
	last := decls[len(decls)-1]
	if last.Strict != t.Strict || !slices.Equal(last.Columns, t.Columns) {
		return importErr(t, "the last declaration (%s) is not the table's (%s)", FormatColumns(last.Columns), FormatColumns(t.Columns))
	}
	s, err := im.db.Snapshot()
	if err != nil {
		return err
	}
	old, err := s.Declarations(t)
	_ = s.Close()
	if err != nil {
		return err
	}
	for _, d := range old {
		im.pending = append(im.pending, engine.Write{Key: layout.SchemaKey(t.ID, d.Since), Delete: true})
	}
	list := make([]declared, 0, len(decls))
	for i, d := range decls {
		if i > 0 && d.Since <= decls[i-1].Since || d.Since < 0 {
			return importErr(t, "declarations must come in increasing transaction time from 0")
		}
		def := TableDef{Name: t.Name, Key: t.Key, Columns: d.Columns, Strict: d.Strict}
		if err := def.validateColumns(); err != nil {
			return importErr(t, "declaration at tx %d: %v", d.Since, err)
		}
		value, err := marshalDeclaration(&def)
		if err != nil {
			return err
		}
		im.pending = append(im.pending, engine.Write{Key: layout.SchemaKey(t.ID, d.Since), Value: value})
		list = append(list, declared{d, newTable(def, t.ID)})
	}
	im.decls[t.ID] = list
	return nil
}

// checkDeclared holds an imported record of table t asserted at txFrom to the
// declaration in effect then (fitsDeclaration): an import reproduces stored
// values and converts nothing.
func (im *Importer) checkDeclared(t *Table, txFrom int64, attrs Attrs) error {
	list, ok := im.decls[t.ID]
	if !ok {
		list = []declared{{Declaration: declarationOf(&t.TableDef), t: t}}
		im.decls[t.ID] = list
	}
	return fitsDeclaration(t, list, txFrom, attrs)
}

// fitsDeclaration checks that attrs, a record of table t asserted at txFrom,
// fit the declaration of list (oldest first) in effect then exactly: values of
// their columns' types as they are (a record is stored converted), every
// column that is not nullable present, nothing undeclared in a strict table.
func fitsDeclaration(t *Table, list []declared, txFrom int64, attrs Attrs) error {
	// i is the number of declarations with Since <= txFrom.
	i, found := slices.BinarySearchFunc(list, txFrom, func(d declared, tx int64) int { return cmp.Compare(d.Since, tx) })
	if found {
		i++
	}
	if i == 0 {
		return nil // before the first declaration: nothing declared
	}
	d := list[i-1].t
	conv, err := d.conformVersion(attrs)
	if err != nil {
		return err
	}
	for name, v := range attrs {
		if !sameValue(conv[name], v) {
			col, _ := d.Column(name)
			return &SchemaError{Table: t.Name, Column: name, Type: col.Type.String(), Value: v,
				Reason: fmt.Sprintf("is not stored as a value of the column's type at tx %d", txFrom)}
		}
	}
	return nil
}

// declaredTables returns t's declarations, oldest first, each with a table
// that holds records to it.
func declaredTables(s *Snapshot, t *Table) ([]declared, error) {
	decls, err := s.Declarations(t)
	if err != nil {
		return nil, err
	}
	out := make([]declared, len(decls))
	for i, d := range decls {
		out[i] = declared{d, newTable(TableDef{Name: t.Name, Key: t.Key, Columns: d.Columns, Strict: d.Strict}, t.ID)}
	}
	return out, nil
}
