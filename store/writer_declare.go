package store

import "slices"

// DeclareAttrNames records attribute names of table t in the given order as part
// of this transaction, ahead of the writes that use them, so that tools print
// columns in the order of a loaded file's header. Names the table has already
// seen keep their place. Unlike DB.DeclareAttrNames, which commits on its own,
// the names land only if the transaction commits something: a load that fails
// or is interrupted leaves the store exactly as it was.
func (w *Writer) DeclareAttrNames(t *Table, names []string) {
	ords := w.db.attrOrd[t.ID] // stable: only commits change it, under the writer lock
	for _, name := range names {
		if _, ok := ords[name]; !ok && !slices.Contains(w.newAttrs[t.ID], name) {
			w.newAttrs[t.ID] = append(w.newAttrs[t.ID], name)
		}
	}
}
