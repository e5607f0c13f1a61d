package model

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"sort"
)

// Outcome says what an Upsert did (the same five cases as txn.Outcome).
type Outcome uint8

// Upsert outcomes.
const (
	Unchanged   Outcome = iota // the version in effect already held these attributes
	Overwritten                // tracked equal; untracked attributes overwritten in place
	Inserted                   // a new version where none was in effect
	Changed                    // the version in effect was closed or replaced, a new one inserted
	Merged                     // the change extended a tracked-equal neighbour
)

func (o Outcome) String() string {
	return [...]string{"unchanged", "overwritten", "inserted", "changed", "merged"}[o]
}

// Txn is a write transaction on the model. Operations rewrite in-memory
// timelines; nothing reaches the model's records before Commit. Dropping a Txn
// aborts it.
type Txn struct {
	m      *Model
	nextSK map[string]uint64              // per table
	lines  map[string]map[string][]Record // table -> key -> timeline
	erased map[string]map[string]bool     // table -> keys erased (Erase)
	done   bool
}

// Begin starts a transaction.
func (m *Model) Begin() *Txn {
	next := map[string]uint64{}
	for name, t := range m.tables {
		next[name] = t.nextSK
	}
	return &Txn{m: m, nextSK: next, lines: map[string]map[string][]Record{}, erased: map[string]map[string]bool{}}
}

// current returns the stored versions of a key (records with TxTo = +∞).
func (t *table) current(key string) []Record {
	return aliveAt(t.records, key, Infinity)
}

// timeline returns the transaction's copy of a key's timeline, loading it on
// first use. Versions the transaction writes have TxFrom = TxTo = Infinity.
func (tx *Txn) timeline(tableName, key string) (*table, []Record, error) {
	if tx.done {
		return nil, nil, ErrFinished
	}
	t, err := tx.m.table(tableName)
	if err != nil {
		return nil, nil, err
	}
	if tx.lines[tableName] == nil {
		tx.lines[tableName] = map[string][]Record{}
	}
	line, ok := tx.lines[tableName][key]
	if !ok {
		line = t.current(key)
		tx.lines[tableName][key] = line
	}
	return t, slices.Clone(line), nil
}

func (tx *Txn) store(tableName, key string, line []Record) {
	slices.SortFunc(line, func(a, b Record) int { return cmp.Compare(a.ValidFrom, b.ValidFrom) })
	tx.lines[tableName][key] = line
}

func (tx *Txn) allocSK(tableName string) uint64 {
	sk := tx.nextSK[tableName]
	tx.nextSK[tableName] = sk + 1
	return sk
}

func (tx *Txn) newVersion(tableName, key string, from, to int64, attrs Attrs) Record {
	return Record{Key: key, ValidFrom: from, ValidTo: to, TxFrom: Infinity, TxTo: Infinity,
		SK: tx.allocSK(tableName), Attrs: attrs}
}

// touched marks a version as rewritten by the transaction.
func touched(r Record) Record {
	r.TxFrom, r.TxTo = Infinity, Infinity
	return r
}

// Put asserts attrs over [from, to) (rule 1).
func (tx *Txn) Put(tableName, key string, attrs Attrs, from, to int64) error {
	t, line, err := tx.timeline(tableName, key)
	if err != nil {
		return err
	}
	if from >= to {
		return fmt.Errorf("%w: [%d, %d)", ErrInvalidPeriod, from, to)
	}
	if attrs, err = checkAttrs(&t.def, attrs); err != nil {
		return err
	}
	if err := tx.checkErased(tableName, key); err != nil {
		return err
	}
	for _, v := range line {
		if v.ValidFrom == from && v.ValidTo == to && !v.Inferred && Identical(v.Attrs, attrs) {
			return nil
		}
	}
	fresh := tx.newVersion(tableName, key, from, to, attrs)
	line = tx.carve(tableName, line, from, to)
	tx.store(tableName, key, append(line, fresh))
	return nil
}

// Delete removes [from, to) from the key's timeline (rule 2).
func (tx *Txn) Delete(tableName, key string, from, to int64) error {
	_, line, err := tx.timeline(tableName, key)
	if err != nil {
		return err
	}
	if from >= to {
		return fmt.Errorf("%w: [%d, %d)", ErrInvalidPeriod, from, to)
	}
	if err := tx.checkErased(tableName, key); err != nil {
		return err
	}
	tx.store(tableName, key, tx.carve(tableName, line, from, to))
	return nil
}

// carve returns line without [from, to): overlapping versions are trimmed, and a
// version containing the period is split, its right piece getting a new sk.
func (tx *Txn) carve(tableName string, line []Record, from, to int64) []Record {
	var out []Record
	for _, v := range line {
		if v.ValidTo <= from || v.ValidFrom >= to {
			out = append(out, v)
			continue
		}
		if v.ValidFrom < from {
			left := touched(v)
			left.ValidTo = from
			out = append(out, left)
		}
		if v.ValidTo > to {
			right := touched(v)
			right.ValidFrom = to
			if v.ValidFrom < from {
				right.SK = tx.allocSK(tableName)
			}
			out = append(out, right)
		}
	}
	return out
}

// Upsert is the SCD2 change effective at at (rule 3).
func (tx *Txn) Upsert(tableName, key string, attrs Attrs, at int64) (Outcome, error) {
	t, line, err := tx.timeline(tableName, key)
	if err != nil {
		return 0, err
	}
	if attrs, err = checkAttrs(&t.def, attrs); err != nil {
		return 0, err
	}
	if err := tx.checkErased(tableName, key); err != nil {
		return 0, err
	}
	for i, v := range line {
		if !v.Covers(at) {
			continue
		}
		if t.def.TrackedEqual(v.Attrs, attrs) {
			merged := Attrs{}
			for name, val := range attrs {
				if !t.def.Tracked(name) {
					merged[name] = val
				}
			}
			for name, val := range v.Attrs {
				if t.def.Tracked(name) {
					merged[name] = val
				}
			}
			if Identical(merged, v.Attrs) {
				return Unchanged, nil
			}
			line[i] = touched(v)
			line[i].Attrs = merged
			tx.store(tableName, key, line)
			return Overwritten, nil
		}
		end := v.ValidTo
		if v.ValidFrom == at {
			line = slices.Delete(line, i, i+1)
		} else {
			line[i] = touched(v)
			line[i].ValidTo = at
		}
		return tx.place(t, key, line, at, end, attrs, Changed), nil
	}
	end := Infinity
	for _, v := range line {
		if v.ValidFrom > at && v.ValidFrom < end {
			end = v.ValidFrom
		}
	}
	if at >= end {
		return 0, fmt.Errorf("%w: [%d, %d)", ErrInvalidPeriod, at, end)
	}
	return tx.place(t, key, line, at, end, attrs, Inserted), nil
}

// place adds the version [from, to) with attrs where nothing covers it, or
// extends a touching tracked-equal neighbour instead.
func (tx *Txn) place(t *table, key string, line []Record, from, to int64, attrs Attrs, outcome Outcome) Outcome {
	prev, next := -1, -1
	for i, v := range line {
		if v.ValidTo == from && t.def.TrackedEqual(v.Attrs, attrs) {
			prev = i
		}
		if v.ValidFrom == to && t.def.TrackedEqual(v.Attrs, attrs) {
			next = i
		}
	}
	switch {
	case prev >= 0:
		end := to
		if next >= 0 {
			end = line[next].ValidTo
		}
		line[prev] = touched(line[prev])
		line[prev].ValidTo = end
		if next >= 0 {
			line = slices.Delete(line, next, next+1)
		}
		outcome = Merged
	case next >= 0:
		line[next] = touched(line[next])
		line[next].ValidFrom = from
		outcome = Merged
	default:
		line = append(line, tx.newVersion(t.def.Name, key, from, to, attrs))
	}
	tx.store(t.def.Name, key, line)
	return outcome
}

// DeleteAt ends the version in effect at at (rule 4).
func (tx *Txn) DeleteAt(tableName, key string, at int64) (bool, error) {
	_, line, err := tx.timeline(tableName, key)
	if err == nil {
		err = tx.checkErased(tableName, key)
	}
	if err != nil {
		return false, err
	}
	for i, v := range line {
		if !v.Covers(at) {
			continue
		}
		if v.ValidFrom == at {
			line = slices.Delete(line, i, i+1)
		} else {
			line[i] = touched(v)
			line[i].ValidTo = at
		}
		tx.store(tableName, key, line)
		return true, nil
	}
	return false, nil
}

// Versions returns the key's timeline as the transaction sees it.
func (tx *Txn) Versions(tableName, key string) ([]Record, error) {
	_, line, err := tx.timeline(tableName, key)
	if err == nil {
		err = tx.checkErased(tableName, key)
	}
	return line, err
}

// Get returns the version in effect at valid as the transaction sees it.
func (tx *Txn) Get(tableName, key string, valid int64) (Record, Miss, error) {
	_, line, err := tx.timeline(tableName, key)
	if err == nil {
		err = tx.checkErased(tableName, key)
	}
	if err != nil {
		return Record{}, 0, err
	}
	r, miss := lookup(line, valid)
	return r, miss, nil
}

// Commit is what a commit did.
type Commit struct {
	// Tx is the commit's transaction time; 0 when it wrote nothing.
	Tx                int64
	Asserted, Retired int
}

// Commit applies the transaction at transaction time at (rule 6): per touched
// key, stored versions that the final timeline no longer holds with the same
// content are retired at at, and final versions that are new or changed are
// asserted at at. A commit that writes nothing ignores at.
func (tx *Txn) Commit(at int64) (Commit, error) {
	if tx.done {
		return Commit{}, ErrFinished
	}
	tx.done = true
	type change struct {
		t                 *table
		retired, asserted []Record
	}
	var changes []change
	var c Commit
	for _, tableName := range sortedKeys(tx.lines) {
		t := tx.m.tables[tableName]
		for _, key := range sortedKeys(tx.lines[tableName]) {
			orig, final := t.current(key), tx.lines[tableName][key]
			var ch change
			ch.t = t
			for _, o := range orig {
				if !slices.ContainsFunc(final, o.SameContent) {
					ch.retired = append(ch.retired, o)
				}
			}
			for _, f := range final {
				if !slices.ContainsFunc(orig, f.SameContent) {
					ch.asserted = append(ch.asserted, f)
				}
			}
			c.Retired += len(ch.retired)
			c.Asserted += len(ch.asserted)
			changes = append(changes, ch)
		}
	}
	erasures := 0
	for _, keys := range tx.erased {
		erasures += len(keys)
	}
	if c.Retired+c.Asserted+erasures == 0 {
		return Commit{}, nil
	}
	if at <= tx.m.lastTx {
		return Commit{}, fmt.Errorf("%w: %d after %d", ErrTxOrder, at, tx.m.lastTx)
	}
	for _, ch := range changes {
		for _, r := range ch.retired {
			i := slices.IndexFunc(ch.t.records, func(x Record) bool { return x.TxTo == Infinity && x.SameContent(r) })
			ch.t.records[i].TxTo = at
		}
		for _, r := range ch.asserted {
			r.TxFrom, r.TxTo = at, Infinity
			ch.t.records = append(ch.t.records, r)
		}
	}
	for tableName, keys := range tx.erased {
		t := tx.m.tables[tableName]
		t.records = slices.DeleteFunc(t.records, func(r Record) bool { return keys[r.Key] })
	}
	for name, next := range tx.nextSK {
		tx.m.tables[name].nextSK = next
	}
	tx.m.lastTx = at
	c.Tx = at
	return c, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := slices.Collect(maps.Keys(m))
	sort.Strings(keys)
	return keys
}

// Erase removes every record of key, at every transaction time, when the
// transaction commits (rule 8): reads at every transaction time then answer as
// for a key that never existed; surrogate keys are not reused. It fails with
// ErrUnknownKey when the table never held the key (or an erasure removed all
// it held), and with ErrErased when the transaction changed the key or erased
// it already.
func (tx *Txn) Erase(tableName, key string) error {
	if tx.done {
		return ErrFinished
	}
	t, err := tx.m.table(tableName)
	if err != nil {
		return err
	}
	if tx.erased[tableName][key] {
		return fmt.Errorf("%w: %s %s", ErrErased, tableName, key)
	}
	if line, ok := tx.lines[tableName][key]; ok {
		cur := t.current(key)
		if len(line) != len(cur) {
			return fmt.Errorf("%w: %s %s", ErrErased, tableName, key)
		}
		for i := range line {
			if !line[i].SameContent(cur[i]) {
				return fmt.Errorf("%w: %s %s", ErrErased, tableName, key)
			}
		}
	}
	if !slices.ContainsFunc(t.records, func(r Record) bool { return r.Key == key }) {
		return fmt.Errorf("%w: %s %s", ErrUnknownKey, tableName, key)
	}
	delete(tx.lines[tableName], key)
	if tx.erased[tableName] == nil {
		tx.erased[tableName] = map[string]bool{}
	}
	tx.erased[tableName][key] = true
	return nil
}

// checkErased refuses an operation on a key the transaction erased, after the
// operation's own validation (the order in which package txn reports them).
func (tx *Txn) checkErased(tableName, key string) error {
	if tx.erased[tableName][key] {
		return fmt.Errorf("%w: %s %s", ErrErased, tableName, key)
	}
	return nil
}
