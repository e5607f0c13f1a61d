package typed

import (
	"cmp"
	"iter"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// Table is a table of the store read and written as values of the struct type
// T. It holds no store state: one Table serves any number of stores and
// goroutines.
type Table[T any] struct {
	s *schema
	// checked is the catalog table the schema was last found to fit (a store
	// returns the same *store.Table for a table until it is reopened), with its
	// raw-attributes view for reads.
	checked atomic.Pointer[checkedTable]
}

// checkedTable is a catalog table that fits the schema, and the view reads
// decode through: attributes left encoded (WithRawAttrs) and projected to the
// struct's attribute fields (store.DB.Project), so a record's other attributes
// are stepped over, never decoded.
type checkedTable struct {
	st, raw *store.Table
}

// Version is one version of an entity as a T: the struct (key fields and
// attributes) with its valid period, transaction period and surrogate key.
type Version[T any] struct {
	Value     T
	ValidFrom int64 // inclusive
	ValidTo   int64 // exclusive; store.Infinity when open-ended
	TxFrom    int64 // the transaction that asserted the record
	TxTo      int64 // the transaction that retired it; store.Infinity while current
	SK        uint64
	// Inferred marks a placeholder created for a key facts referenced before it
	// was known; its attribute fields are zero.
	Inferred bool
}

// Resolution is Resolve's answer for one fact, as query.Resolution with the
// version's struct in place of its attribute map.
type Resolution[T any] struct {
	Index    int
	SK       uint64
	Reason   store.MissReason
	Inferred bool
	Default  bool
	// Value is the version the fact resolved to (key fields from the fact's
	// key); the zero T for a miss.
	Value T
}

// Found reports whether the fact resolved to a version.
func (r Resolution[T]) Found() bool { return r.Reason == store.Found }

// New declares table as holding values of struct type T and checks T: every
// exported field is an attribute (or, tagged ",key", a key column) of a
// supported type, and at least one field is a key field. Whether the key fields
// match the table's key is checked against a store by Check, and by the first
// read or write.
func New[T any](table string) (*Table[T], error) {
	s, err := newSchema(reflect.TypeFor[T](), table)
	if err != nil {
		return nil, err
	}
	return &Table[T]{s: s}, nil
}

// Name returns the table's name.
func (t *Table[T]) Name() string { return t.s.table }

// Def returns a definition of the table for store.DB.CreateTable: its name and
// its key columns, from T's key fields in declaration order. Set the other
// fields (Axis, Kind, Track, ...) before creating it.
func (t *Table[T]) Def() store.TableDef {
	def := store.TableDef{Name: t.s.table}
	for i := range t.s.keys {
		f := &t.s.keys[i]
		def.Key = append(def.Key, store.KeyColumn{Name: f.name, Type: f.keyType()})
	}
	return def
}

// Check looks the table up in the store and checks that T's key fields are its
// key columns, in order and of matching types, and that no attribute field is
// named like a key column. Declare a Table and Check it at start-up to fail
// before the first write.
func (t *Table[T]) Check(r store.Reader) error {
	_, _, release, err := t.acquire(r)
	if err != nil {
		return err
	}
	release()
	return nil
}

// table returns the catalog table after checking it fits T.
func (t *Table[T]) table(db *store.DB) (*store.Table, error) {
	c, err := t.tables(db)
	if err != nil {
		return nil, err
	}
	return c.st, nil
}

// tables returns the catalog table after checking it fits T, with its view
// whose reads leave attributes encoded.
func (t *Table[T]) tables(db *store.DB) (*checkedTable, error) {
	st, err := db.Table(t.s.table)
	if err != nil {
		return nil, err
	}
	if c := t.checked.Load(); c != nil && c.st == st {
		return c, nil
	}
	if err := t.s.check(st); err != nil {
		return nil, err
	}
	c := &checkedTable{st: st, raw: db.Project(st.WithRawAttrs(), t.s.attrNames())}
	t.checked.Store(c)
	return c, nil
}

// Key returns the natural key of v (its key fields, in key order).
func (t *Table[T]) Key(v T) store.Key { return t.s.key(reflect.ValueOf(&v).Elem()) }

// Attrs returns the attributes of v as the map API writes them. A nil pointer
// or nil []byte field is left out (null).
func (t *Table[T]) Attrs(v T) store.Attrs { return t.s.attrsOf(reflect.ValueOf(&v).Elem()) }

// Upsert is txn.Tx.Upsert of v's attributes for v's key, effective at at.
func (t *Table[T]) Upsert(tx *txn.Tx, v T, at int64) (txn.Outcome, error) {
	if _, err := t.table(tx.DB()); err != nil {
		return 0, err
	}
	rv := reflect.ValueOf(&v).Elem()
	return tx.Upsert(t.s.table, t.s.key(rv), t.s.attrsOf(rv), at)
}

// Put is txn.Tx.Put of v over [from, to): every instant of the period reads v.
func (t *Table[T]) Put(tx *txn.Tx, v T, from, to int64) error {
	if _, err := t.table(tx.DB()); err != nil {
		return err
	}
	rv := reflect.ValueOf(&v).Elem()
	return tx.Put(t.s.table, t.s.key(rv), t.s.attrsOf(rv), from, to)
}

// Delete is txn.Tx.Delete: it removes the entity with key over [from, to).
func (t *Table[T]) Delete(tx *txn.Tx, key store.Key, from, to int64) error {
	if _, err := t.table(tx.DB()); err != nil {
		return err
	}
	return tx.Delete(t.s.table, key, from, to)
}

// DeleteAt is txn.Tx.DeleteAt: it closes the version of key in effect at at.
func (t *Table[T]) DeleteAt(tx *txn.Tx, key store.Key, at int64) (bool, error) {
	if _, err := t.table(tx.DB()); err != nil {
		return false, err
	}
	return tx.DeleteAt(t.s.table, key, at)
}

// Get is query.Get as a T: the version of key in effect at at.Valid as known at
// at.Tx, or a *query.Miss. The record is decoded straight into the struct,
// without an attribute map.
func (t *Table[T]) Get(r store.Reader, key store.Key, at query.AsOf) (Version[T], error) {
	s, c, release, err := t.acquire(r)
	if err != nil {
		return Version[T]{}, err
	}
	defer release()
	var buf [64]byte
	tuple, err := c.st.AppendKey(buf[:0], key)
	if err != nil {
		return Version[T]{}, err
	}
	tx := at.Tx
	if tx == query.Latest {
		tx = s.LastTx()
	}
	v, reason, err := s.VersionAt(c.raw, tuple, at.Valid, tx)
	if err != nil {
		return Version[T]{}, err
	}
	if reason != store.Found {
		return Version[T]{}, missOf(c.st, t.s.table, key, at, reason)
	}
	return t.version(&v)
}

// version converts a version read through a raw-attributes table (RawAttrs), or
// one whose attributes came back decoded (Attrs): a retired record that shares
// its successor's attributes.
func (t *Table[T]) version(v *store.Version) (Version[T], error) {
	var out Version[T]
	if err := t.decode(&out, v); err != nil {
		return Version[T]{}, err
	}
	return out, nil
}

// decode is version into out, which it zeroes first: a scan decodes every
// version into one out and yields copies, so that the struct the decoder
// reaches by reflection is allocated once per scan, not once per version.
// Nothing of one version stays in out for the next to share: pointer and []byte
// fields are set to new values.
func (t *Table[T]) decode(out *Version[T], v *store.Version) error {
	*out = Version[T]{ValidFrom: v.ValidFrom, ValidTo: v.ValidTo, TxFrom: v.TxFrom, TxTo: v.TxTo, SK: v.SK, Inferred: v.Inferred}
	return t.decodeValue(&out.Value, v.Key, v.RawAttrs(), v.Attrs)
}

// decodeRow is decode for a row of a scan read in place (store.Row): its
// attributes are decoded from the stored bytes, whose values the decoder
// copies, so nothing of out aliases the row.
func (t *Table[T]) decodeRow(out *Version[T], r *store.Row) error {
	key, err := r.Key()
	if err != nil {
		return err
	}
	*out = Version[T]{ValidFrom: r.ValidFrom, ValidTo: r.ValidTo, TxFrom: r.TxFrom, TxTo: r.TxTo, SK: r.SK, Inferred: r.Inferred}
	return t.decodeValue(&out.Value, key, r.RawAttrs(), nil)
}

// decodeValue fills *value from a version's key and its attributes, raw when
// not zero, else attrs.
func (t *Table[T]) decodeValue(value *T, key store.Key, raw store.RawAttrs, attrs store.Attrs) error {
	rv := reflect.ValueOf(value).Elem()
	d := decoder{s: t.s, key: key}
	if err := d.setKey(rv, key); err != nil {
		return err
	}
	if !raw.IsZero() {
		return d.decodeRaw(rv, raw)
	}
	return d.decodeMap(rv, attrs)
}

// decodeResolved is decodeValue for an answer of a batch join read in place
// (query.ResolvedRow): key is the fact's, and the attributes are walked from
// the row view, whose values the decoder copies, so nothing of *value
// aliases the row.
func (t *Table[T]) decodeResolved(value *T, key store.Key, row *query.ResolvedRow) error {
	rv := reflect.ValueOf(value).Elem()
	d := decoder{s: t.s, key: key}
	if err := d.setKey(rv, key); err != nil {
		return err
	}
	base := rv.Addr().UnsafePointer()
	return row.Walk(func(name string, val *encoding.Value) error { return d.setAttr(rv, base, name, val) })
}

// yieldAll decodes the versions of seq and yields them, stopping at the first
// error.
func (t *Table[T]) yieldAll(seq iter.Seq2[store.Version, error], yield func(Version[T], error) bool) {
	out := new(Version[T])
	for v, err := range seq {
		if err == nil {
			err = t.decode(out, &v)
		}
		if err != nil {
			yield(Version[T]{}, err)
			return
		}
		if !yield(*out, nil) {
			return
		}
	}
}

// versions reads a sequence of query on one snapshot of r, after checking the
// table fits T, and converts its versions; read asks query for the
// attributes left encoded (RawAttrs), so records are decoded straight into
// the structs.
func (t *Table[T]) versions(r store.Reader, read func(s *store.Snapshot) iter.Seq2[store.Version, error]) iter.Seq2[Version[T], error] {
	return func(yield func(Version[T], error) bool) {
		s, _, release, err := t.acquire(r)
		if err != nil {
			yield(Version[T]{}, err)
			return
		}
		defer release()
		t.yieldAll(read(s), yield)
	}
}

// Snapshot is query.Snapshot as T values: the version of every key of keys in
// effect at at, in key order. Records are decoded straight from the stored
// bytes into the structs (store.Snapshot.ScanRowsAt), with no Version between.
func (t *Table[T]) Snapshot(r store.Reader, at query.AsOf, keys query.KeyRange) iter.Seq2[Version[T], error] {
	return func(yield func(Version[T], error) bool) {
		s, c, release, err := t.acquire(r)
		if err != nil {
			yield(Version[T]{}, err)
			return
		}
		defer release()
		sp, err := keys.Span(c.st)
		if err != nil {
			yield(Version[T]{}, err)
			return
		}
		tx := at.Tx
		if tx == query.Latest {
			tx = s.LastTx()
		}
		out := new(Version[T])
		var failed error
		stopped := false
		err = s.ScanRowsAt(c.raw, sp, at.Valid, tx, func(row *store.Row) bool {
			if failed = t.decodeRow(out, row); failed != nil {
				return false
			}
			stopped = !yield(*out, nil)
			return !stopped
		})
		if failed == nil {
			failed = err
		}
		if failed != nil && !stopped {
			yield(Version[T]{}, failed)
		}
	}
}

// History is query.History as T values: the versions of key overlapping [from,
// to), in valid order, as known at opts.Tx. Records are decoded straight into
// the structs (query.HistoryOptions.RawAttrs).
func (t *Table[T]) History(r store.Reader, key store.Key, from, to int64, opts query.HistoryOptions) iter.Seq2[Version[T], error] {
	opts.Project, opts.RawAttrs = t.s.project(opts.Project), true
	return t.versions(r, func(s *store.Snapshot) iter.Seq2[store.Version, error] {
		return query.History(s, t.s.table, key, from, to, opts)
	})
}

// Audit is query.Audit as T values: every record of key, retired ones
// included, in transaction order. Records are decoded straight into the
// structs (query.AuditOptions.RawAttrs).
func (t *Table[T]) Audit(r store.Reader, key store.Key) iter.Seq2[Version[T], error] {
	opts := query.AuditOptions{Project: t.s.project(nil), RawAttrs: true}
	return t.versions(r, func(s *store.Snapshot) iter.Seq2[store.Version, error] {
		return query.Audit(s, t.s.table, key, opts)
	})
}

// Resolve is query.Resolve with each found version's struct: a batch as-of
// join of facts against the table, misses handled by opts.Miss. Each answer
// is decoded from the stored record straight into its struct as the join
// delivers it (query.ResolveRows), with no attribute map or copy of the
// record between; a record that does not fit T fails the batch with the
// error of the first such fact in input order.
func (t *Table[T]) Resolve(r store.Reader, facts []query.Fact, opts query.ResolveOptions) ([]Resolution[T], error) {
	s, _, release, err := t.acquire(r)
	if err != nil {
		return nil, err
	}
	defer release()
	skip := opts.Miss == query.MissSkip
	if skip {
		opts.Miss = query.MissNull // the misses are left out below, keeping input order
	}
	opts.Attrs, opts.Project = true, t.s.project(opts.Project)
	out := make([]Resolution[T], len(facts))
	var mu sync.Mutex
	first, failed := len(facts), error(nil)
	err = query.ResolveRows(s, t.s.table, facts, opts, func(row *query.ResolvedRow) error {
		o := &out[row.Index]
		o.Index, o.SK, o.Reason, o.Inferred, o.Default = row.Index, row.SK, row.Reason, row.Inferred, row.Default
		if !row.Found() {
			return nil
		}
		key := facts[row.Index].Key
		if err := t.decodeResolved(&o.Value, key, row); err != nil {
			mu.Lock()
			if row.Index < first {
				first, failed = row.Index, err
			}
			mu.Unlock()
		}
		return nil
	})
	if err = cmp.Or(err, failed); err != nil {
		return nil, err
	}
	if skip {
		out = slices.DeleteFunc(out, func(r Resolution[T]) bool { return !r.Found() })
	}
	return out, nil
}

// ResolveInferred is txn.ResolveInferred with each found version's struct: it
// resolves as Resolve does with opts.Miss query.MissNull, then creates inferred
// members for the keys unknown at the newest commit, in one transaction on
// the store r reads. An inferred member's struct holds only its key.
func (t *Table[T]) ResolveInferred(r store.Reader, facts []query.Fact, opts query.ResolveOptions) ([]Resolution[T], error) {
	s, _, release, err := t.acquire(r)
	if err != nil {
		return nil, err
	}
	defer release()
	opts.Attrs, opts.RawAttrs, opts.Project = true, true, t.s.project(opts.Project)
	res, err := txn.ResolveInferred(s, t.s.table, facts, opts)
	if err != nil {
		return nil, err
	}
	out := make([]Resolution[T], len(res))
	for i := range res {
		x := &res[i]
		o := &out[i]
		o.Index, o.SK, o.Reason, o.Inferred, o.Default = x.Index, x.SK, x.Reason, x.Inferred, x.Default
		if !x.Found() {
			continue
		}
		if err := t.decodeValue(&o.Value, facts[x.Index].Key, x.RawAttrs(), x.Attrs); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// acquire acquires a snapshot of r and checks that the table fits T there,
// returning the checked table (tables); the caller releases the snapshot.
func (t *Table[T]) acquire(r store.Reader) (*store.Snapshot, *checkedTable, func(), error) {
	s, release, err := r.AcquireSnapshot()
	if err != nil {
		return nil, nil, nil, err
	}
	c, err := t.tables(s.DB())
	if err != nil {
		release()
		return nil, nil, nil, err
	}
	return s, c, release, nil
}

// missOf is the query.Miss of a read of key in table (named as the caller
// asked for it), printing its valid time on st's axis.
func missOf(st *store.Table, table string, key store.Key, at query.AsOf, reason store.MissReason) *query.Miss {
	m := query.NewMiss(st, key, at, reason)
	m.Table = table
	return m
}
