package txn

// DeclareAttrNames records attribute names of a table in the given order as part
// of this transaction (store.Writer.DeclareAttrNames): they are committed with
// the transaction's writes, and not at all if it writes nothing or rolls back.
func (tx *Tx) DeclareAttrNames(table string, names []string) error {
	if tx.done {
		return ErrFinished
	}
	t, err := tx.db.Table(table)
	if err != nil {
		return err
	}
	tx.w.DeclareAttrNames(t, names)
	return nil
}
