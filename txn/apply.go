package txn

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/store"
)

// Apply on changes tables: the CDC write path. The derivation itself is in
// store/derive.go (shared with Verify), and where a re-derivation resumes and
// which surrogate keys its versions keep in place.go; this file validates
// batches, reads what a batch needs, and writes the event log, batch ids,
// checkpoints and versions.
//
// Semantics decided here (docs/semantics.md leaves them open; the reasoning is
// in docs/design/cdc-same-instant-events.md and cdc-per-key-lateness.md):
//
//   - Several events of one key at the same valid time (same at, different seq)
//     count as one instant: the last by seq decides the state there, exactly as
//     a granularity collapses the events of a granule, and the collapse is
//     counted (not a zero-width version per event, which would split one run
//     into adjacent tracked-equal versions).
//   - A delete's attributes are ignored; Seq defaults to 0, and an event whose
//     source sequence was null says so with SeqNull and is rejected.
//   - The lateness horizon is per key: newest at among the key's events already
//     applied, minus Lateness. A batch holding an event before it is rejected
//     whole with ErrTooLate (not a table-wide horizon, which would make a key's
//     corrections depend on other keys' traffic). Events that fall behind the
//     horizon are compacted into a per-key checkpoint, the derivation state at
//     the horizon's granule.
//   - A batch id is recorded in the same commit as its events; re-applying it
//     returns Replayed with the original commit's transaction time and writes
//     nothing, whatever events it carries this time.

// Op is the operation of a CDC event.
type Op uint8

// Event operations. The zero Op is invalid, so an event whose operation was never
// set is rejected rather than applied as an upsert.
const (
	OpUpsert Op = Op(store.EventUpsert)
	OpDelete Op = Op(store.EventDelete)
)

func (op Op) String() string { return store.EventOp(op).String() }

// Event is one change of a CDC feed: the key's attributes become Attrs (upsert),
// or the key stops existing (delete), at valid time At. Seq orders events of the
// key with equal At (default 0).
type Event struct {
	Key store.Key
	At  int64
	Seq int64
	// SeqNull marks an event whose source sequence was null (an empty cell of a
	// sequence column, say). Apply rejects it: ordering it as 0 would be a guess.
	SeqNull bool
	Op      Op
	// Attrs of an upsert. With the table's IgnoreNulls, an absent attribute keeps
	// the value of the key's previous event and an explicit nil sets it to null.
	// Ignored for a delete.
	Attrs store.Attrs
}

// ApplyResult says what one Apply did. Event counts are about the batch's
// events; version counts compare each touched key's versions before and after.
type ApplyResult struct {
	// Replayed: the batch id had been applied already; nothing was written and
	// Tx is the transaction that applied it.
	Replayed bool
	// Tx is the transaction time of the commit that holds the batch.
	Tx int64

	// Accepted events entered the event set: new at their (at, seq), or winning
	// a tie against the event there.
	Accepted int
	// Duplicates were identical to the event already at their (at, seq).
	Duplicates int
	// Conflicts met a different event at their (at, seq): an upsert and a delete
	// (the delete wins) or two upserts (the smaller attribute encoding wins).
	// A batch event that won is also counted as accepted.
	Conflicts int
	// Collapsed is how many more events the granules the batch touched hold
	// beyond their one winner, compared with before the batch (without a
	// granularity, a granule is one instant).
	Collapsed int
	// Tombstones are the batch's deletes that end no version: remembered, they
	// end any run an earlier upsert arriving later starts before them.
	Tombstones int
	// Compacted events fell behind the lateness horizon and were folded into the
	// key's checkpoint.
	Compacted int

	// Inserted versions are new (a new surrogate key), other than split pieces.
	Inserted int
	// Closed versions kept their surrogate key and now end earlier (closed by a
	// change or a delete).
	Closed int
	// Split versions were cut in two by a late event inside them: the earlier
	// piece keeps the surrogate key, the later piece has a new one.
	Split int
	// Merged versions were retired because a late event fused their run with a
	// tracked-equal neighbour, which now covers them under its surrogate key.
	Merged int
	// Updated versions kept their surrogate key but were extended, lost their
	// first instants to a correction, or took new untracked attribute values.
	Updated int
	// Removed versions were retired with nothing tracked-equal taking their
	// place (their tracked attributes were corrected, or a delete covers them).
	Removed int
}

var (
	// ErrInvalidEvent: an event Apply cannot take (null or badly shaped key, null
	// sequence, unknown op, valid time out of range, attribute that cannot be
	// stored). The batch is rejected whole.
	ErrInvalidEvent = errors.New("bitempo: invalid event")
	// ErrTooLate: an event older than the table's lateness horizon. The batch is
	// rejected whole.
	ErrTooLate = errors.New("bitempo: event is older than the lateness horizon")
	// ErrInvalidBatch: a batch id that is empty or too long.
	ErrInvalidBatch = errors.New("bitempo: invalid batch id")
)

// EventError names the event that made Apply reject its batch. It matches
// ErrInvalidEvent or ErrTooLate, and the underlying cause (store.ErrKeyShape,
// ErrInvalidAttr, ...).
type EventError struct {
	Table string
	Index int // position of the event in the batch
	Err   error
}

func (e *EventError) Error() string {
	return fmt.Sprintf("bitempo: table %q event %d: %v", e.Table, e.Index, e.Err)
}

// Unwrap returns the cause.
func (e *EventError) Unwrap() error { return e.Err }

// Apply runs Tx.Apply in a transaction of its own.
func Apply(db *store.DB, table, batchID string, events []Event) (ApplyResult, error) {
	var res ApplyResult
	_, err := Update(db, func(tx *Tx) error {
		var err error
		res, err = tx.Apply(table, batchID, events)
		return err
	})
	if err != nil {
		return ApplyResult{}, err
	}
	return res, nil
}

// Apply applies a batch of CDC events to a changes table. The table's versions
// are a deterministic function of the set of events applied so far (see
// store/derive.go), whatever their arrival order and batching; only the suffix of each
// touched key's timeline that the batch can affect is re-derived, and versions
// that do not change are not rewritten. The batch id is recorded in the same
// commit; re-applying it returns Replayed and changes nothing.
//
// A batch with an invalid event, or one older than the lateness horizon, is
// rejected whole with an *EventError and leaves the transaction untouched.
// Several batches may be applied in one transaction; each sees the ones before.
func (tx *Tx) Apply(table, batchID string, events []Event) (ApplyResult, error) {
	t, err := tx.table(table, store.Changes)
	if err != nil {
		return ApplyResult{}, err
	}
	if batchID == "" || len(batchID) > store.MaxBatchIDLen {
		return ApplyResult{}, fmt.Errorf("%w: table %q: batch id must be 1-%d bytes, got %d", ErrInvalidBatch, t.Name, store.MaxBatchIDLen, len(batchID))
	}
	cs := tx.changesState()
	if applied, ok, err := cs.batchTx(tx.w.Snapshot(), t, batchID); err != nil || ok {
		return ApplyResult{Replayed: ok, Tx: applied}, err
	}
	keys, err := tx.groupEvents(t, events)
	if err != nil {
		return ApplyResult{}, err
	}
	// Read everything first: a batch that fails leaves no trace in the transaction.
	plans := make([]*keyPlan, len(keys))
	for i, kev := range keys {
		if plans[i], err = tx.planKey(t, kev); err != nil {
			return ApplyResult{}, err
		}
	}
	if err := firstTooLate(plans); err != nil {
		return ApplyResult{}, err
	}
	var res ApplyResult
	for _, p := range plans {
		if err := tx.applyKey(p, &res); err != nil {
			return ApplyResult{}, err
		}
	}
	if err := tx.w.PutBatch(t, batchID); err != nil {
		return ApplyResult{}, err
	}
	res.Tx = tx.w.Tx()
	cs.batches[logKey(t, []byte(batchID))] = res.Tx
	return res, nil
}

// keyEvents is the validated events of one key in a batch, sorted by (at, seq)
// and, at one (at, seq), tie winner first.
type keyEvents struct {
	key    store.Key
	tuple  []byte
	events []store.CDCEvent
}

// groupEvents validates a batch and groups it by key, in key order.
func (tx *Tx) groupEvents(t *store.Table, events []Event) ([]*keyEvents, error) {
	byKey := map[string]*keyEvents{}
	var buf []byte
	for i := range events {
		e := &events[i]
		ev, err := tx.validateEvent(t, e, &buf)
		if err != nil {
			return nil, &EventError{Table: t.Name, Index: i, Err: err}
		}
		ev.Index = i
		ke := byKey[string(buf)]
		if ke == nil {
			ke = &keyEvents{key: slices.Clone(e.Key), tuple: bytes.Clone(buf)}
			byKey[string(buf)] = ke
		}
		ke.events = append(ke.events, ev)
	}
	out := make([]*keyEvents, 0, len(byKey))
	for _, ke := range byKey {
		slices.SortStableFunc(ke.events, compareFresh)
		out = append(out, ke)
	}
	slices.SortFunc(out, func(a, b *keyEvents) int { return bytes.Compare(a.tuple, b.tuple) })
	return out, nil
}

// compareFresh orders a batch's events of one key by (at, seq), and at one
// (at, seq) puts the tie winner first (deletes, then upserts by encoding), so
// counting duplicates and conflicts does not depend on the order within the batch.
func compareFresh(a, b store.CDCEvent) int {
	switch {
	case a.At != b.At:
		return cmp.Compare(a.At, b.At)
	case a.Seq != b.Seq:
		return cmp.Compare(a.Seq, b.Seq)
	case a.Op != b.Op:
		return cmp.Compare(-int64(a.Op), -int64(b.Op))
	}
	return bytes.Compare(a.Enc, b.Enc)
}

// validateEvent checks one event and returns it in derivation form; *tuple is
// set to the encoded key.
func (tx *Tx) validateEvent(t *store.Table, e *Event, tuple *[]byte) (store.CDCEvent, error) {
	for i, c := range e.Key {
		if c == nil {
			return store.CDCEvent{}, fmt.Errorf("%w: key component %d is null", ErrInvalidEvent, i)
		}
	}
	var err error
	if *tuple, err = t.AppendKey((*tuple)[:0], e.Key); err != nil {
		return store.CDCEvent{}, fmt.Errorf("%w: %w", ErrInvalidEvent, err)
	}
	if e.SeqNull {
		return store.CDCEvent{}, fmt.Errorf("%w: sequence is null", ErrInvalidEvent)
	}
	if e.At == store.Infinity {
		return store.CDCEvent{}, fmt.Errorf("%w: valid time is +inf", ErrInvalidEvent)
	}
	if _, ok := store.GranuleOf(e.At, t.Granularity); !ok {
		return store.CDCEvent{}, fmt.Errorf("%w: valid time %d has no granule of %d", ErrInvalidEvent, e.At, t.Granularity)
	}
	ev := store.CDCEvent{At: e.At, Seq: e.Seq, Op: store.EventOp(e.Op), Fresh: true}
	switch e.Op {
	case OpDelete:
	case OpUpsert:
		if ev.Attrs, err = tx.checkAttrs(t, e.Attrs); err != nil {
			return store.CDCEvent{}, fmt.Errorf("%w: %w", ErrInvalidEvent, err)
		}
		if ev.Enc, err = encoding.AppendAttrs(nil, ev.Attrs); err != nil {
			return store.CDCEvent{}, fmt.Errorf("%w: %w", ErrInvalidEvent, &AttrError{t.Name, "", err})
		}
	default:
		return store.CDCEvent{}, fmt.Errorf("%w: unknown op %d", ErrInvalidEvent, e.Op)
	}
	return ev, nil
}

// keyPlan is what Apply read about one key before changing anything.
type keyPlan struct {
	table *store.Table
	ks    *keyState
	log   *keyLog
	fresh []store.CDCEvent

	newest    store.LogEvent // the newest logged event, before the batch
	hasNewest bool
	cp        store.Checkpoint
	hasCP     bool

	p      int64            // re-derivation starts at granule p ...
	st     store.RunState   // ... in this state
	stored []store.CDCEvent // logged events at or after p

	compact bool             // the horizon passes some logged events
	through int64            // new checkpoint boundary when compact
	below   []store.CDCEvent // logged events in [old checkpoint, min(p, through))
}

// planKey reads what applying the batch's events of one key needs: the tail of
// the key's versions from the batch's earliest granule on, its newest event and
// checkpoint, and the logged events from the resume point on (and those the
// horizon newly passes).
func (tx *Tx) planKey(t *store.Table, kev *keyEvents) (*keyPlan, error) {
	m, _ := store.GranuleOf(kev.events[0].At, t.Granularity) // the batch's earliest granule
	ks, err := tx.stateTail(t, kev.key, m)
	if err != nil {
		return nil, err
	}
	s := tx.w.Snapshot()
	p := &keyPlan{table: t, ks: ks, log: tx.changesState().keyLog(t, ks.tuple), fresh: kev.events}
	if p.newest, p.hasNewest, err = p.log.lastBefore(s, t, ks.tuple, store.Infinity, store.Infinity); err != nil {
		return nil, err
	}
	if t.Lateness > 0 { // only a lateness horizon compacts into checkpoints
		if p.cp, p.hasCP, err = p.log.checkpoint(s, t, ks.tuple); err != nil {
			return nil, err
		}
	}
	if p.tooLate() != nil {
		return p, nil // reported by firstTooLate; nothing else is needed
	}
	newest := p.granule(p.newest.At)
	rp := resume(ks.cur, m, newest, p.hasNewest)
	p.p, p.st = rp.p, rp.st
	if rp.within != nil && !t.IgnoreNulls {
		// Without partial updates the last event before m holds its run's
		// attributes as they are at m: re-derive from m, not from the run's start.
		e, ok, err := p.log.lastBefore(s, t, ks.tuple, m, math.MinInt64)
		if err != nil {
			return nil, err
		}
		if ok && e.Op == store.EventUpsert && p.granule(e.At) >= rp.within.ValidFrom {
			p.p, p.st = m, store.RunState{Open: true, From: rp.within.ValidFrom, Attrs: e.Attrs}
		}
	}
	if p.hasCP && p.p < p.cp.Through {
		p.p, p.st = p.cp.Through, store.CheckpointState(p.cp)
	}
	if p.hasNewest && newest >= p.p {
		if p.stored, err = p.log.read(s, t, ks.tuple, p.p, store.Infinity); err != nil {
			return nil, err
		}
	}
	return p, p.planCompaction(s)
}

// granule is granuleOf for the plan's table.
func (p *keyPlan) granule(at int64) int64 {
	g, _ := store.GranuleOf(at, p.table.Granularity)
	return g
}

// horizon returns the lateness horizon of the key before the batch, if any.
func (p *keyPlan) horizon() (int64, bool) {
	if p.table.Lateness <= 0 || !p.hasNewest {
		return 0, false
	}
	if p.newest.At < math.MinInt64+p.table.Lateness {
		return math.MinInt64, true
	}
	return p.newest.At - p.table.Lateness, true
}

// tooLate returns the error for the batch's first event (by position) that is
// older than the horizon or the key's checkpoint.
func (p *keyPlan) tooLate() error {
	h, hasH := p.horizon()
	var first *store.CDCEvent
	var reason string
	for i := range p.fresh {
		e := &p.fresh[i]
		var why string
		switch {
		case hasH && e.At < h:
			why = fmt.Sprintf("valid time %d is before the horizon %d (newest event %d minus lateness %d)", e.At, h, p.newest.At, p.table.Lateness)
		case p.hasCP && p.granule(e.At) < p.cp.Through:
			why = fmt.Sprintf("valid time %d is before the compacted history, which ends at %d", e.At, p.cp.Through)
		default:
			continue
		}
		if first == nil || e.Index < first.Index {
			first, reason = e, why
		}
	}
	if first == nil {
		return nil
	}
	return &EventError{Table: p.table.Name, Index: first.Index, Err: fmt.Errorf("%w: %s", ErrTooLate, reason)}
}

// firstTooLate returns the too-late error of the lowest event index in the batch.
func firstTooLate(plans []*keyPlan) error {
	var first *EventError
	for _, p := range plans {
		var ee *EventError
		if err := p.tooLate(); errors.As(err, &ee) && (first == nil || ee.Index < first.Index) {
			first = ee
		}
	}
	if first == nil {
		return nil
	}
	return first
}

// planCompaction decides whether the horizon, moved by the batch, passes logged
// events, and reads those below the resume point.
func (p *keyPlan) planCompaction(s *store.Snapshot) error {
	t := p.table
	if t.Lateness <= 0 {
		return nil
	}
	newest := p.fresh[len(p.fresh)-1].At
	if p.hasNewest {
		newest = max(newest, p.newest.At)
	}
	if newest < math.MinInt64+t.Lateness {
		return nil
	}
	through := p.granule(newest - t.Lateness)
	from := int64(math.MinInt64)
	if p.hasCP {
		from = p.cp.Through
	}
	if through <= from {
		return nil
	}
	p.compact, p.through = true, through
	if upto := min(p.p, through); from < upto {
		var err error
		p.below, err = p.log.read(s, t, p.ks.tuple, from, upto)
		return err
	}
	return nil
}

// applyKey merges the batch into the key's events, re-derives the affected
// suffix, sets the key's new versions and writes the log changes.
func (tx *Tx) applyKey(p *keyPlan, res *ApplyResult) error {
	t, ks := p.table, p.ks
	merged, changed := mergeFresh(p.stored, p.fresh, res)
	res.Collapsed += newCollapses(t, p.stored, merged)
	runs, _, tombstones := store.Derive(t, p.st, merged)
	res.Tombstones += tombstones

	cut := p.p
	if p.st.Open {
		cut = p.st.From
	}
	k, _ := slices.BinarySearchFunc(ks.cur, cut, func(v store.Version, cut int64) int { return cmp.Compare(v.ValidFrom, cut) })
	placed, counts := placeRuns(t, ks, ks.cur[k:], runs, func() uint64 { return tx.w.AllocSK(t) })
	ks.cur = append(slices.Clip(ks.cur[:k]), placed...)
	res.Inserted += counts.inserted
	res.Closed += counts.closed
	res.Split += counts.split
	res.Merged += counts.merged
	res.Updated += counts.updated
	res.Removed += counts.removed

	keepFrom := int64(math.MinInt64)
	if p.compact {
		keepFrom = p.through
		if err := tx.compactKey(p, merged, res); err != nil {
			return err
		}
	}
	for _, e := range changed {
		if p.granule(e.At) < keepFrom {
			continue // compacted in this very batch
		}
		le := store.LogEvent{At: e.At, Seq: e.Seq, Op: e.Op, Attrs: e.Attrs}
		if err := tx.w.PutEvent(t, ks.tuple, le); err != nil {
			return err
		}
		p.log.put(le)
	}
	return nil
}

// mergeFresh merges a key's fresh events into its logged events from the resume
// point on, resolving ties at each (at, seq), and returns the merged events and
// the winners that differ from what the log holds.
func mergeFresh(stored, fresh []store.CDCEvent, res *ApplyResult) (merged, changed []store.CDCEvent) {
	merged = make([]store.CDCEvent, 0, len(stored)+len(fresh))
	i := 0
	for j := 0; j < len(fresh); {
		for i < len(stored) && stored[i].Before(&fresh[j]) {
			merged = append(merged, stored[i])
			i++
		}
		var cur *store.CDCEvent
		logged := i < len(stored) && stored[i].SamePos(&fresh[j])
		if logged {
			cur = &stored[i]
			i++
		}
		win := cur
		for ; j < len(fresh) && (win == nil || fresh[j].SamePos(win)); j++ {
			f := &fresh[j]
			switch {
			case win == nil:
				win = f
				res.Accepted++
			case win.Identical(f):
				res.Duplicates++
			default:
				res.Conflicts++
				if store.TieWinner(win, f) == f {
					win = f
					res.Accepted++
				}
			}
		}
		w := *win
		w.Logged = logged
		merged = append(merged, w)
		if win != cur {
			changed = append(changed, w)
		}
	}
	return append(merged, stored[i:]...), changed
}

// newCollapses counts, over the granules holding a fresh event at a new
// (at, seq), how many more events they hold beyond their winner than before the
// batch. stored is a subset of merged, both sorted.
func newCollapses(t *store.Table, stored, merged []store.CDCEvent) int {
	total, i := 0, 0
	for j := 0; j < len(merged); {
		g, _ := store.GranuleOf(merged[j].At, t.Granularity)
		after, added := 0, false
		for ; j < len(merged); j++ {
			if gj, _ := store.GranuleOf(merged[j].At, t.Granularity); gj != g {
				break
			}
			after++
			added = added || !merged[j].Logged
		}
		before := 0
		for ; i < len(stored); i++ {
			gi, _ := store.GranuleOf(stored[i].At, t.Granularity)
			if gi > g {
				break
			}
			if gi == g {
				before++
			}
		}
		if added {
			total += after - max(before, 1)
		}
	}
	return total
}

// compactKey folds the key's events behind the new horizon into its checkpoint
// and removes them from the log.
func (tx *Tx) compactKey(p *keyPlan, merged []store.CDCEvent, res *ApplyResult) error {
	t, ks := p.table, p.ks
	evs := slices.Clone(p.below)
	for i := range merged {
		if p.granule(merged[i].At) < p.through {
			evs = append(evs, merged[i])
		}
	}
	if len(evs) == 0 {
		return nil
	}
	st := store.RunState{}
	if p.hasCP {
		st = store.CheckpointState(p.cp)
	}
	_, end, _ := store.Derive(t, st, evs)
	cp := store.Checkpoint{Through: p.through, Open: end.Open, From: end.From, Attrs: end.Attrs}
	if err := tx.w.PutCheckpoint(t, ks.tuple, cp); err != nil {
		return err
	}
	p.log.setCheckpoint(cp)
	for _, e := range evs {
		if e.Logged {
			tx.w.DeleteEvent(t, ks.tuple, e.At, e.Seq)
			p.log.del(e.At, e.Seq)
		}
	}
	res.Compacted += len(evs)
	return nil
}
