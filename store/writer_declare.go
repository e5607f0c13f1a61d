package store

// DeclareAttrNames records attribute names of table t in the given order as part
// of this transaction, ahead of the writes that use them, so that tools print
// columns in the order of a loaded file's header. Names the table has already
// seen keep their place. Unlike DB.DeclareAttrNames, which commits on its own,
// the names land only if the transaction commits something: a load that fails
// or is interrupted leaves the store exactly as it was.
func (w *Writer) DeclareAttrNames(t *Table, names []string) {
	w.attrs.addNames(w.db, t, names)
}
