package oplog

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"math/rand/v2"
	"slices"

	"github.com/bitempo/bitempo/fuzz/model"
	"github.com/bitempo/bitempo/query"
	"github.com/bitempo/bitempo/store"
	"github.com/bitempo/bitempo/txn"
)

// Runner applies a log's transactions to a store and to the model, and compares
// them after every transaction.
type Runner struct {
	DB    *store.DB
	Model *model.Model
	// Full makes Check compare every key after every transaction; otherwise it
	// compares the keys the transaction touched and one other, chosen at random.
	Full bool

	// Stats counts what the operations did: Upsert outcomes, DeleteAt results,
	// operation errors by class, and transaction endings.
	Stats map[string]int
	// erased holds the keys the current transaction erased.
	erased map[tableKey]bool

	tables []TableSpec
	keys   []string
	clock  int64
	txs    []int64 // transaction times of the commits so far
	rng    *rand.Rand
}

// errInjected and panicInjected end transactions that must fail.
var (
	errInjected   = errors.New("oplog: injected failure")
	panicInjected = &struct{ msg string }{"oplog: injected panic"}
)

// Mismatch is a disagreement between the store and the model, or a broken
// invariant: the first one found ends a run.
type Mismatch struct {
	Txn    int // index of the transaction after which it was found
	Detail string
}

func (m *Mismatch) Error() string { return fmt.Sprintf("after transaction %d: %s", m.Txn, m.Detail) }

// NewRunner returns a runner for logs over tables and keys; seed drives the
// choice of read points. Open the store with Clock: r.Clock, then call Attach.
func NewRunner(tables []TableSpec, keys []string, seed uint64) *Runner {
	return &Runner{Model: model.New(), Stats: map[string]int{}, tables: tables, keys: keys, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// Clock is the store's wall clock: it reads what the current transaction says.
func (r *Runner) Clock() int64 { return r.clock }

// Attach makes db the runner's store, creating the tables in the store and the
// model when create is set (a fresh store) and only adopting db otherwise (the
// same store reopened).
func (r *Runner) Attach(db *store.DB, create bool) error {
	r.DB = db
	if !create {
		return nil
	}
	for _, spec := range r.tables {
		if _, err := db.CreateTable(spec.StoreDef()); err != nil {
			return err
		}
		if err := r.Model.CreateTable(spec.ModelDef()); err != nil {
			return err
		}
	}
	return nil
}

// Txs returns the transaction times of the commits so far.
func (r *Runner) Txs() []int64 { return slices.Clone(r.txs) }

// Apply runs transaction i of a log on the store and on the model, comparing
// every operation's result and the transaction's view of the touched keys as it
// goes, and then the commits. It returns a *Mismatch or a failure to run.
func (r *Runner) Apply(i int, t Txn) error {
	if err := r.apply(i, t); err != nil || !t.Vacuum {
		return err
	}
	return r.vacuum(i)
}

// vacuum runs DB.Vacuum and the model's at the runner's clock.
func (r *Runner) vacuum(i int) error {
	before := r.DB.LastTx()
	if _, err := r.DB.Vacuum(context.Background()); err != nil {
		return &Mismatch{Txn: i, Detail: fmt.Sprintf("vacuum: %v", err)}
	}
	r.Model.Vacuum(r.clock)
	r.Stats["vacuum"]++
	if tx := r.DB.LastTx(); tx != before {
		r.txs = append(r.txs, tx)
	}
	return nil
}

func (r *Runner) apply(i int, t Txn) error {
	r.clock = t.Clock
	r.erased = map[tableKey]bool{}
	r.Stats["txn "+t.End.String()]++
	mt := r.Model.Begin()
	var mismatch error
	c, recovered, err := r.update(func(tx *txn.Tx) error {
		for j, op := range t.Ops {
			if d := r.applyOp(tx, mt, op); d != "" {
				mismatch = &Mismatch{Txn: i, Detail: fmt.Sprintf("op %d (%s): %s", j, op, d)}
				return mismatch
			}
		}
		switch t.End {
		case ReturnError:
			return errInjected
		case Panic:
			panic(panicInjected)
		}
		return nil
	})
	if mismatch != nil {
		return mismatch
	}
	fail := func(format string, args ...any) error {
		return &Mismatch{Txn: i, Detail: fmt.Sprintf(format, args...)}
	}
	switch t.End {
	case ReturnError:
		if !errors.Is(err, errInjected) || c != (txn.Commit{}) {
			return fail("failed transaction returned %+v, %v", c, err)
		}
		return nil
	case Panic:
		if recovered != panicInjected || c != (txn.Commit{}) || err != nil {
			return fail("panicking transaction returned %+v, %v, recovered %v", c, err, recovered)
		}
		return nil
	}
	if recovered != nil || err != nil {
		return fail("commit failed: %v (panic %v)", err, recovered)
	}
	want := max(t.Clock, r.Model.LastTx()+1)
	mc, err := mt.Commit(want)
	if err != nil {
		return fail("model commit: %v", err)
	}
	if c.Tx != mc.Tx || c.Asserted != mc.Asserted || c.Retired != mc.Retired {
		return fail("store commit %+v, model commit %+v", c, mc)
	}
	if c.Tx != 0 {
		r.txs = append(r.txs, c.Tx)
	}
	return nil
}

// update runs txn.Update, turning a panic that escapes it into a value.
func (r *Runner) update(fn func(*txn.Tx) error) (c txn.Commit, recovered any, err error) {
	defer func() { recovered = recover() }()
	c, err = txn.Update(r.DB, fn)
	return c, nil, err
}

// applyOp runs one operation on both sides and describes any difference in
// their results or in the key's timeline inside the transaction.
func (r *Runner) applyOp(tx *txn.Tx, mt *model.Txn, op Op) string {
	key := store.Key{op.Key}
	var got, want string
	var serr, merr error
	switch op.Kind {
	case Put:
		serr = tx.Put(op.Table, key, op.Attrs, op.From, op.To)
		merr = mt.Put(op.Table, op.Key, op.Attrs, op.From, op.To)
	case Delete:
		serr = tx.Delete(op.Table, key, op.From, op.To)
		merr = mt.Delete(op.Table, op.Key, op.From, op.To)
	case Upsert:
		var so txn.Outcome
		var mo model.Outcome
		so, serr = tx.Upsert(op.Table, key, op.Attrs, op.From)
		mo, merr = mt.Upsert(op.Table, op.Key, op.Attrs, op.From)
		if serr == nil {
			got = so.String()
		}
		if merr == nil {
			want = mo.String()
		}
	case DeleteAt:
		var sok, mok bool
		sok, serr = tx.DeleteAt(op.Table, key, op.From)
		mok, merr = mt.DeleteAt(op.Table, op.Key, op.From)
		got, want = fmt.Sprint(sok), fmt.Sprint(mok)
	case Erase:
		return r.applyErase(tx, mt, op)
	}
	if errors.Is(serr, txn.ErrErased) && errors.Is(merr, model.ErrErased) {
		r.Stats[op.Kind.String()+", key erased in the transaction"]++
		return ""
	}
	if sc, mc := errorClass(serr, store.ErrInvalidPeriod, txn.ErrInvalidAttr), errorClass(merr, model.ErrInvalidPeriod, model.ErrInvalidAttr); sc != mc || sc == "other" {
		return fmt.Sprintf("store error %v, model error %v", serr, merr)
	}
	if got != want {
		return fmt.Sprintf("store says %s, model %s", got, want)
	}
	stat := op.Kind.String()
	if got != "" {
		stat += " " + got
	}
	if serr != nil {
		stat += ", " + errorClass(serr, store.ErrInvalidPeriod, txn.ErrInvalidAttr)
	}
	r.Stats[stat]++
	if r.erased[tableKey{op.Table, op.Key}] {
		return "" // neither side shows an erased key inside its transaction
	}
	return r.compareTxView(tx, mt, op.Table, op.Key)
}

// applyErase runs an erasure on both sides: they must agree on whether it is
// refused and why. Later operations on the key in the transaction are refused
// on both sides (compared by the operations themselves).
func (r *Runner) applyErase(tx *txn.Tx, mt *model.Txn, op Op) string {
	class := func(err, unknown, erased error) string {
		switch {
		case err == nil:
			return "erased"
		case errors.Is(err, unknown):
			return "unknown key"
		case errors.Is(err, erased):
			return "conflict"
		}
		return "other: " + err.Error()
	}
	got := class(tx.Erase(op.Table, store.Key{op.Key}), store.ErrUnknownKey, txn.ErrErased)
	want := class(mt.Erase(op.Table, op.Key), model.ErrUnknownKey, model.ErrErased)
	if got != want {
		return fmt.Sprintf("erase: store says %s, model %s", got, want)
	}
	r.Stats["erase "+got]++
	if got == "erased" {
		r.erased[tableKey{op.Table, op.Key}] = true
	}
	return ""
}

// errorClass names the kind of an operation's error, so errors of the store and
// the model can be compared.
func errorClass(err, period, attr error) string {
	switch {
	case err == nil:
		return "none"
	case errors.Is(err, period):
		return "invalid period"
	case errors.Is(err, attr):
		return "invalid attribute"
	}
	return "other"
}

// compareTxView compares the key's timeline inside the transaction (read your
// writes), by content: transaction times are not assigned yet.
func (r *Runner) compareTxView(tx *txn.Tx, mt *model.Txn, table, key string) string {
	sv, err := tx.Versions(table, store.Key{key})
	if err != nil {
		return fmt.Sprintf("tx.Versions: %v", err)
	}
	mv, _ := mt.Versions(table, key)
	got := records(sv)
	if !slices.EqualFunc(got, mv, model.Record.SameContent) {
		return fmt.Sprintf("timeline in the transaction differs:\n  store %v\n  model %v", got, mv)
	}
	for _, v := range validPoints(mv) {
		s, sreason, err := tx.Get(table, store.Key{key}, v)
		if err != nil {
			return fmt.Sprintf("tx.Get: %v", err)
		}
		m, mreason, _ := mt.Get(table, key, v)
		if missOf(sreason) != mreason || (mreason == model.Found && !record(s).SameContent(m)) {
			return fmt.Sprintf("tx.Get at valid %s: store %v (%v), model %v (%v)", model.Tick(v), record(s), sreason, m, mreason)
		}
	}
	return ""
}

// record converts a store version to a model record.
func record(v store.Version) model.Record {
	var key string
	if len(v.Key) == 1 {
		key, _ = v.Key[0].(string)
	}
	return model.Record{Key: key, ValidFrom: v.ValidFrom, ValidTo: v.ValidTo, TxFrom: v.TxFrom, TxTo: v.TxTo,
		SK: v.SK, Attrs: model.Attrs(v.Attrs), Inferred: v.Inferred}
}

func records(vs []store.Version) []model.Record {
	out := make([]model.Record, len(vs))
	for i, v := range vs {
		out[i] = record(v)
	}
	return out
}

// missOf maps the store's miss reasons to the model's.
func missOf(r store.MissReason) model.Miss {
	switch r {
	case store.Found:
		return model.Found
	case store.UnknownKey:
		return model.UnknownKey
	case store.BeforeFirst:
		return model.BeforeFirst
	case store.InGap:
		return model.InGap
	case store.AfterLast:
		return model.AfterLast
	}
	return model.Miss(255)
}

// sameRecord compares two records field by field, transaction times included.
func sameRecord(a, b model.Record) bool {
	return a.SameContent(b) && a.TxFrom == b.TxFrom && a.TxTo == b.TxTo
}

// validPoints returns the valid times worth reading on a timeline: every
// boundary, the instants just inside and outside it, and the extremes.
func validPoints(vs []model.Record) []int64 {
	pts := []int64{model.NegInfinity, model.NegInfinity + 1, -1, 0, MaxValid + 1, model.Infinity - 1, model.Infinity}
	for _, v := range vs {
		for _, b := range []int64{v.ValidFrom, v.ValidTo} {
			pts = append(pts, b)
			if b > model.NegInfinity {
				pts = append(pts, b-1)
			}
			if b < model.Infinity {
				pts = append(pts, b+1)
			}
		}
	}
	slices.Sort(pts)
	return slices.Compact(pts)
}

// Check compares the store with the model after transaction i: Verify must be
// clean, the last transaction times agree, and for the keys checked, the audit
// trail agrees, and so do the versions alive at sampled transaction times (the
// latest, the one before the newest commit, a random past one) and Get at
// every boundary instant of those versions, just inside and just outside it.
func (r *Runner) Check(i int, t Txn) error {
	fail := func(format string, args ...any) error {
		return &Mismatch{Txn: i, Detail: fmt.Sprintf(format, args...)}
	}
	rep, err := store.Verify(r.DB)
	if err != nil {
		return fail("verify: %v", err)
	}
	if !rep.OK() {
		return fail("verify: %s", rep)
	}
	if got, want := r.DB.LastTx(), r.Model.LastTx(); got != want {
		return fail("last tx: store %d, model %d", got, want)
	}
	snap, err := r.DB.Snapshot()
	if err != nil {
		return fail("snapshot: %v", err)
	}
	defer snap.Close()
	for _, tk := range r.keysToCheck(t) {
		if d := r.checkKey(snap, tk.table, tk.key); d != "" {
			return fail("table %s key %s: %s", tk.table, tk.key, d)
		}
	}
	if d := r.checkSnapshot(snap); d != "" {
		return fail("%s", d)
	}
	return nil
}

type tableKey struct{ table, key string }

func (r *Runner) keysToCheck(t Txn) []tableKey {
	var out []tableKey
	if r.Full {
		for _, spec := range r.tables {
			for _, k := range r.keys {
				out = append(out, tableKey{spec.Name, k})
			}
		}
		return out
	}
	for _, op := range t.Ops {
		if tk := (tableKey{op.Table, op.Key}); !slices.Contains(out, tk) {
			out = append(out, tk)
		}
	}
	return append(out, tableKey{r.tables[r.rng.IntN(len(r.tables))].Name, r.keys[r.rng.IntN(len(r.keys))]})
}

// txPoints returns the transaction times to read at: the latest (query.Latest),
// just before the newest commit (the state it replaced), and one sampled past
// instant (around an earlier commit, before the first, or +∞).
func (r *Runner) txPoints() []int64 {
	pts := []int64{query.Latest}
	n := len(r.txs)
	if n == 0 {
		return append(pts, store.Infinity)
	}
	pts = append(pts, r.txs[n-1]-1)
	switch k := r.rng.IntN(8); k {
	case 0:
		pts = append(pts, 1)
	case 1:
		pts = append(pts, store.Infinity)
	default:
		pts = append(pts, r.txs[r.rng.IntN(n)]+int64(k%3)-1)
	}
	return pts
}

// resolve maps query.Latest to the newest commit, as query.Get does.
func (r *Runner) resolve(tx int64) int64 {
	if tx == query.Latest {
		return r.Model.LastTx()
	}
	return tx
}

func (r *Runner) checkKey(snap *store.Snapshot, table, key string) string {
	t, err := snap.Table(table)
	if err != nil {
		return err.Error()
	}
	tuple, err := t.AppendKey(nil, store.Key{key})
	if err != nil {
		return err.Error()
	}
	got, err := collect(query.Audit(snap, table, store.Key{key}, query.AuditOptions{}))
	if err != nil {
		return fmt.Sprintf("query.Audit: %v", err)
	}
	mr, _ := r.Model.Records(table, key)
	if !slices.EqualFunc(got, mr, sameRecord) {
		return fmt.Sprintf("audit trail differs:\n  store %v\n  model %v", got, mr)
	}
	for _, tx := range r.txPoints() {
		at := r.resolve(tx)
		sv, err := snap.KeyVersions(t, tuple, at)
		mv, merr := r.Model.VersionsAt(table, key, at)
		if beforeHorizon(err, merr) {
			continue
		}
		if err != nil || merr != nil {
			return fmt.Sprintf("KeyVersions at tx %d: store %v, model %v", at, err, merr)
		}
		if got := records(sv); !slices.EqualFunc(got, mv, sameRecord) {
			return fmt.Sprintf("versions at tx %d differ:\n  store %v\n  model %v", at, got, mv)
		}
		for _, valid := range validPoints(mv) {
			if d := r.checkGet(snap, table, key, valid, tx); d != "" {
				return d
			}
		}
	}
	return ""
}

// checkGet compares query.Get with the model at one point; reader is a snapshot
// or, now and then, the DB itself.
func (r *Runner) checkGet(reader store.Reader, table, key string, valid, tx int64) string {
	if r.rng.IntN(32) == 0 {
		reader = r.DB
	}
	got, err := query.Get(reader, table, store.Key{key}, query.AsOf{Valid: valid, Tx: tx}, query.GetOptions{})
	want, reason, merr := r.Model.Get(table, key, valid, r.resolve(tx))
	var miss *query.Miss
	switch {
	case beforeHorizon(err, merr):
		return ""
	case merr != nil:
		return fmt.Sprintf("Get at valid %s tx %s: store %v, model %v", model.Tick(valid), model.Tick(tx), err, merr)
	case err == nil && reason == model.Found && sameRecord(record(got), want):
		return ""
	case errors.As(err, &miss) && missOf(miss.Reason) == reason && reason != model.Found:
		return ""
	}
	return fmt.Sprintf("Get at valid %s tx %s: store %v, %v; model %v, %v", model.Tick(valid), model.Tick(tx), record(got), err, want, reason)
}

// checkSnapshot compares a table snapshot (query.Snapshot) and a history window
// of one key (query.History) at a sampled (valid, tx) point with the model.
func (r *Runner) checkSnapshot(snap *store.Snapshot) string {
	spec := r.tables[r.rng.IntN(len(r.tables))]
	valid := int64(r.rng.IntN(MaxValid+3)) - 1
	txs := r.txPoints()
	tx := txs[r.rng.IntN(len(txs))]
	want, merr := r.Model.Snapshot(spec.Name, valid, r.resolve(tx))
	got, err := collect(query.Snapshot(snap, spec.Name, query.AsOf{Valid: valid, Tx: tx}, query.KeyRange{}, query.SnapshotOptions{}))
	if beforeHorizon(err, merr) {
		return ""
	}
	if err != nil || merr != nil {
		return fmt.Sprintf("query.Snapshot: store %v, model %v", err, merr)
	}
	if !slices.EqualFunc(got, want, sameRecord) {
		return fmt.Sprintf("snapshot of %s at valid %d tx %d differs:\n  store %v\n  model %v", spec.Name, valid, tx, got, want)
	}
	key := r.keys[r.rng.IntN(len(r.keys))]
	a := int64(r.rng.IntN(MaxValid+1)) - 1
	b := a + 1 + int64(r.rng.IntN(8))
	if r.rng.IntN(4) == 0 {
		a, b = store.NegInfinity, store.Infinity
	}
	wantH, _ := r.Model.History(spec.Name, key, a, b, r.resolve(tx))
	gotH, err := collect(query.History(snap, spec.Name, store.Key{key}, a, b, query.HistoryOptions{Tx: tx}))
	if err != nil {
		return fmt.Sprintf("query.History: %v", err)
	}
	if !slices.EqualFunc(gotH, wantH, sameRecord) {
		return fmt.Sprintf("history of %s/%s over [%s, %s) at tx %d differs:\n  store %v\n  model %v",
			spec.Name, key, model.Tick(a), model.Tick(b), tx, gotH, wantH)
	}
	return ""
}

// beforeHorizon reports whether the store and the model both refused a read
// before a table's retention horizon.
func beforeHorizon(serr, merr error) bool {
	return errors.Is(serr, store.ErrBeforeHorizon) && errors.Is(merr, model.ErrBeforeHorizon)
}

// collect drains a scan into model records.
func collect(seq iter.Seq2[store.Version, error]) ([]model.Record, error) {
	var out []model.Record
	for v, err := range seq {
		if err != nil {
			return nil, err
		}
		out = append(out, record(v))
	}
	return out, nil
}

// Run applies every transaction of l to the attached store and checks after
// each one. It returns the first *Mismatch, or another error if
// the run could not proceed.
func (r *Runner) Run(l Log) error {
	for i, t := range l.Txns {
		if err := r.Apply(i, t); err != nil {
			return err
		}
		if err := r.Check(i, t); err != nil {
			return err
		}
	}
	return nil
}
