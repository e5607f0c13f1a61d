package txn

import "github.com/bitempo/bitempo/store"

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

// AddColumn declares one more column of a table as of this transaction's
// commit (store.Writer.AddColumn): the column must be nullable, and versions
// stored before read null. Writes later in the transaction are held to it;
// reads at an earlier transaction time report the declaration of their time.
func (tx *Tx) AddColumn(table string, col store.Column) error {
	if tx.done {
		return ErrFinished
	}
	t, err := tx.w.Table(table)
	if err != nil {
		return err
	}
	_, err = tx.w.AddColumn(t, col)
	return err
}

// WidenColumn changes a declared column's type to a wider one as of this
// transaction's commit (store.Writer.WidenColumn: int64 to decimal, or a
// decimal to more digits). Stored values are not rewritten.
func (tx *Tx) WidenColumn(table, column string, to store.ColumnType) error {
	if tx.done {
		return ErrFinished
	}
	t, err := tx.w.Table(table)
	if err != nil {
		return err
	}
	_, err = tx.w.WidenColumn(t, column, to)
	return err
}
