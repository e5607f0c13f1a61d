package store

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/bitempo/bitempo/encoding"
)

// maxProblems caps a report, so a badly damaged store gives a readable answer.
const maxProblems = 1000

// Problem is one invariant violation found by Verify.
type Problem struct {
	// Invariant is the number of the violated invariant in the package doc
	// (0: a key or value that cannot be decoded).
	Invariant int
	Table     string
	Key       Key
	Records   []Version
	Detail    string
}

func (p Problem) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "invariant %d: table %q", p.Invariant, p.Table)
	if p.Key != nil {
		fmt.Fprintf(&b, " key %s", p.Key)
	}
	fmt.Fprintf(&b, ": %s", p.Detail)
	for _, r := range p.Records {
		fmt.Fprintf(&b, "\n    %s", r.String())
	}
	return b.String()
}

// Report is the result of Verify.
type Report struct {
	Tables   int
	Keys     int
	Records  int
	Problems []Problem
	// Truncated is set when more than maxProblems problems were found.
	Truncated bool
}

// OK reports whether no problem was found.
func (r *Report) OK() bool { return len(r.Problems) == 0 }

func (r *Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d tables, %d keys, %d records: ", r.Tables, r.Keys, r.Records)
	if r.OK() {
		b.WriteString("ok")
		return b.String()
	}
	fmt.Fprintf(&b, "%d problems", len(r.Problems))
	if r.Truncated {
		b.WriteString(" (truncated)")
	}
	for _, p := range r.Problems {
		b.WriteString("\n  ")
		b.WriteString(p.String())
	}
	return b.String()
}

func (r *Report) add(p Problem) {
	if len(r.Problems) >= maxProblems {
		r.Truncated = true
		return
	}
	r.Problems = append(r.Problems, p)
}

// Verify checks invariants 1-5 of the package doc over the whole store, on one
// snapshot. The error is for failures to read; everything wrong with the content is
// a Problem in the report. Checkers registered by higher layers (RegisterCheck)
// run after the built-in ones.
func Verify(r Reader) (*Report, error) {
	s, release, err := r.AcquireSnapshot()
	if err != nil {
		return nil, err
	}
	defer release()
	rep := &Report{}
	known := map[uint32]bool{}
	for _, t := range s.db.Tables() {
		known[t.ID] = true
		rep.Tables++
		if err := verifyTable(s, t, rep); err != nil {
			return nil, err
		}
	}
	for _, ks := range perTableKeyspaces() {
		if ks == ksGroups {
			continue // verifyGroups also checks that the table is grouped
		}
		if err := verifyTableIDs(s, ks, known, rep); err != nil {
			return nil, err
		}
	}
	for _, check := range checks {
		if err := check(s, rep); err != nil {
			return nil, err
		}
	}
	return rep, nil
}

var checks []func(*Snapshot, *Report) error

// RegisterCheck adds a check that Verify runs after the built-in ones; higher
// layers use it for the structures they own (e.g. invariant 6 of changes tables).
// It must be called from an init function.
func RegisterCheck(check func(s *Snapshot, rep *Report) error) { checks = append(checks, check) }

// AddProblem records a problem in a report (for registered checks).
func (r *Report) AddProblem(p Problem) { r.add(p) }

// verifyTableIDs reports keys of keyspace ks whose table id is not in the catalog.
func verifyTableIDs(s *Snapshot, ks byte, known map[uint32]bool, rep *Report) error {
	it, err := s.newIter([]byte{ks}, []byte{ks + 1})
	if err != nil {
		return err
	}
	defer it.Close()
	for ok := it.First(); ok; {
		tid, _, err := splitTableID(it.Key())
		if err != nil {
			rep.add(Problem{Invariant: 0, Detail: fmt.Sprintf("%s key %x: %v", KeyspaceName(ks), it.Key(), err)})
			ok = it.Next()
			continue
		}
		if !known[tid] {
			rep.add(Problem{Invariant: 5, Detail: fmt.Sprintf("%s keys of table id %d, which is not in the catalog", KeyspaceName(ks), tid)})
		}
		if tid == ^uint32(0) {
			break
		}
		ok = it.SeekGE(tablePrefix(nil, ks, tid+1))
	}
	return it.Error()
}

// tableRecords streams every record of table t in record keyspace keys (current
// or history), grouped by key: fn gets each key's records in stored order.
func tableRecords(s *Snapshot, t *Table, keys recordKeys, rep *Report, fn func(tuple []byte, recs []Version)) error {
	prefix := keys.tablePrefix(nil, t.ID)
	it, err := s.newIter(prefix, encoding.PrefixEnd(prefix))
	if err != nil {
		return err
	}
	defer it.Close()
	var cur []byte
	var recs []Version
	flush := func() {
		if cur != nil {
			fn(cur, recs)
		}
		recs = nil
	}
	for ok := it.First(); ok; ok = it.Next() {
		tuple, from, txFrom, err := keys.decode(t, it.Key()[len(prefix):])
		var v Version
		if err == nil {
			v, err = s.decodeVersion(t, tuple, from, txFrom, it.Value())
		}
		if err == nil && keys.ks == ksHistory && txFrom != v.TxFrom {
			err = fmt.Errorf("%w: key says tx_from %d, value %d", ErrCorrupt, txFrom, v.TxFrom)
		}
		if err != nil {
			rep.add(Problem{Invariant: 0, Table: t.Name, Detail: fmt.Sprintf("%s record %x: %v", KeyspaceName(keys.ks), it.Key(), err)})
			continue
		}
		if !bytes.Equal(tuple, cur) {
			flush()
			cur = bytes.Clone(tuple)
		}
		recs = append(recs, v)
	}
	flush()
	return it.Error()
}

func verifyTable(s *Snapshot, t *Table, rep *Report) error {
	byKey := map[string][]Version{}
	collect := func(tuple []byte, recs []Version) { byKey[string(tuple)] = append(byKey[string(tuple)], recs...) }
	if err := tableRecords(s, t, currentKeys, rep, collect); err != nil {
		return err
	}
	for _, recs := range byKey {
		for _, v := range recs {
			if v.TxTo != Infinity {
				rep.add(Problem{Invariant: 5, Table: t.Name, Key: v.Key, Records: []Version{v}, Detail: "record in the current index has tx_to set"})
			}
		}
	}
	if err := tableRecords(s, t, historyKeys, rep, collect); err != nil {
		return err
	}
	skOwner := map[uint64]string{}
	bySK := map[uint64][]Version{}
	var maxSK uint64
	for _, recs := range byKey {
		rep.Keys++
		rep.Records += len(recs)
		verifyKey(s, t, recs, rep)
		for _, v := range recs {
			if owner, ok := skOwner[v.SK]; ok && owner != string(v.tuple) {
				rep.add(Problem{Invariant: 3, Table: t.Name, Key: v.Key, Records: []Version{v}, Detail: fmt.Sprintf("sk %d also names another key", v.SK)})
			}
			skOwner[v.SK] = string(v.tuple)
			bySK[v.SK] = append(bySK[v.SK], v)
			maxSK = max(maxSK, v.SK)
		}
	}
	for sk, recs := range bySK {
		if a, b, ok := overlapping(recs, func(a, b *Version) bool { return true }); ok {
			rep.add(Problem{Invariant: 3, Table: t.Name, Key: a.Key, Records: []Version{a, b}, Detail: fmt.Sprintf("sk %d names two records alive at the same transaction time", sk)})
		}
	}
	if next := s.db.nextSKCommitted(s, t.ID); maxSK >= next {
		rep.add(Problem{Invariant: 5, Table: t.Name, Detail: fmt.Sprintf("sk counter %d is not above the largest sk %d", next, maxSK)})
	}
	if err := verifySKIndex(s, t, byKey, rep); err != nil {
		return err
	}
	if err := verifyErasures(s, t, byKey, rep); err != nil {
		return err
	}
	return verifyTxLog(s, t, byKey, rep)
}

// verifyKey checks invariants 1, 2 and 4 for the records of one key.
func verifyKey(s *Snapshot, t *Table, recs []Version, rep *Report) {
	for _, v := range recs {
		if v.ValidFrom >= v.ValidTo || v.TxFrom >= v.TxTo {
			rep.add(Problem{Invariant: 1, Table: t.Name, Key: v.Key, Records: []Version{v}, Detail: "empty or inverted valid or transaction period"})
		}
		if v.TxFrom > s.lastTx || (v.TxTo != Infinity && v.TxTo > s.lastTx) {
			rep.add(Problem{Invariant: 4, Table: t.Name, Key: v.Key, Records: []Version{v}, Detail: fmt.Sprintf("record is newer than the last commit %d", s.lastTx)})
		}
	}
	validOverlap := func(a, b *Version) bool { return a.ValidFrom < b.ValidTo && b.ValidFrom < a.ValidTo }
	if a, b, ok := overlapping(recs, validOverlap); ok {
		rep.add(Problem{Invariant: 2, Table: t.Name, Key: a.Key, Records: []Version{a, b}, Detail: "two records alive at the same transaction time overlap in valid time"})
	}
}

// overlapping returns a pair of records whose transaction periods overlap and for
// which also(a, b) holds. Records are swept in tx_from order, keeping those still
// alive.
func overlapping(recs []Version, also func(a, b *Version) bool) (Version, Version, bool) {
	sorted := slices.Clone(recs)
	slices.SortFunc(sorted, func(a, b Version) int { return cmp.Compare(a.TxFrom, b.TxFrom) })
	var alive []*Version
	for i := range sorted {
		r := &sorted[i]
		kept := alive[:0]
		for _, a := range alive {
			if a.TxTo > r.TxFrom {
				kept = append(kept, a)
			}
		}
		alive = kept
		for _, a := range alive {
			if also(a, r) {
				return *a, *r, true
			}
		}
		alive = append(alive, r)
	}
	return Version{}, Version{}, false
}

// verifySKIndex checks that the sk index holds exactly one entry per record,
// pointing at it, except for a record that re-asserts, with the same surrogate
// key, key and valid_from, a record retired by the same transaction (an SCD2
// close), which the entry of the retired record already names.
func verifySKIndex(s *Snapshot, t *Table, byKey map[string][]Version, rep *Report) error {
	type ref struct {
		tuple    string
		from, tx int64
	}
	retired := map[skRef]map[int64]bool{} // the tx_to of each sk, key and valid_from's retired records
	for tuple, recs := range byKey {
		for _, v := range recs {
			if v.TxTo != Infinity {
				r := skRef{t.ID, v.SK, tuple, v.ValidFrom}
				if retired[r] == nil {
					retired[r] = map[int64]bool{}
				}
				retired[r][v.TxTo] = true
			}
		}
	}
	want := map[ref]uint64{}
	for tuple, recs := range byKey {
		for _, v := range recs {
			if !retired[skRef{t.ID, v.SK, tuple, v.ValidFrom}][v.TxFrom] {
				want[ref{tuple, v.ValidFrom, v.TxFrom}] = v.SK
			}
		}
	}
	horizon, err := s.Horizon(t)
	if err != nil {
		return err
	}
	// Through the horizon Vacuum keeps, per surrogate key, only the newest
	// entry (vacuum.go): such an entry must name records of its key and
	// valid_from asserted since, and a record asserted by then needs an entry
	// of its sk and place at or before it.
	locs := map[skRef][]Version{}
	if horizon > 0 {
		for tuple, recs := range byKey {
			for _, v := range recs {
				r := skRef{t.ID, v.SK, tuple, v.ValidFrom}
				locs[r] = append(locs[r], v)
			}
		}
	}
	oldEntries := map[skRef][]int64{}
	prefix := tablePrefix(nil, ksSKIndex, t.ID)
	it, err := s.newIter(prefix, encoding.PrefixEnd(prefix))
	if err != nil {
		return err
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		sk, txFrom, err := skIndex.decodeKey(it.Key()[len(prefix):])
		var from int64
		var tuple []byte
		if err == nil {
			tuple, from, err = skIndex.decodeValue(t, it.Value())
		}
		if err != nil {
			rep.add(Problem{Invariant: 0, Table: t.Name, Detail: fmt.Sprintf("sk index entry %x: %v", it.Key(), err)})
			continue
		}
		r := ref{string(tuple), from, txFrom}
		if txFrom <= horizon {
			loc := skRef{t.ID, sk, string(tuple), from}
			if !slices.ContainsFunc(locs[loc], func(v Version) bool { return v.TxFrom >= txFrom }) {
				key, _ := t.DecodeKey(tuple)
				rep.add(Problem{Invariant: 5, Table: t.Name, Key: key, Detail: fmt.Sprintf("sk index entry (sk %d, tx_from %d, valid_from %d) names no record", sk, txFrom, from)})
			}
			oldEntries[loc] = append(oldEntries[loc], txFrom)
			delete(want, r)
			continue
		}
		if got, ok := want[r]; !ok || got != sk {
			key, _ := t.DecodeKey(tuple)
			rep.add(Problem{Invariant: 5, Table: t.Name, Key: key, Detail: fmt.Sprintf("sk index entry (sk %d, tx_from %d, valid_from %d) has no matching record", sk, txFrom, from)})
			continue
		}
		delete(want, r)
	}
	for r, sk := range want {
		if r.tx <= horizon && slices.ContainsFunc(oldEntries[skRef{t.ID, sk, r.tuple, r.from}], func(tx int64) bool { return tx <= r.tx }) {
			continue
		}
		key, _ := t.DecodeKey([]byte(r.tuple))
		rep.add(Problem{Invariant: 5, Table: t.Name, Key: key, Detail: fmt.Sprintf("record (sk %d, valid_from %d, tx_from %d) is missing from the sk index", sk, r.from, r.tx)})
	}
	return it.Error()
}

// verifyTxLog checks that the transaction log holds one assert change per record
// at its tx_from and one retire change per retired record at its tx_to, and
// nothing else, and that the changes of one transaction have distinct ordinals.
func verifyTxLog(s *Snapshot, t *Table, byKey map[string][]Version, rep *Report) error {
	type entry struct {
		op       LogOp
		tuple    string
		from, tx int64 // tx: the tx of the log key
		txFrom   int64
	}
	horizon, err := s.Horizon(t)
	if err != nil {
		return err
	}
	want := map[entry]bool{}
	for tuple, recs := range byKey {
		for _, v := range recs {
			if v.TxFrom > horizon { // Vacuum dropped the log through the horizon
				want[entry{LogAssert, tuple, v.ValidFrom, v.TxFrom, v.TxFrom}] = true
			}
			if v.TxTo != Infinity {
				want[entry{LogRetire, tuple, v.ValidFrom, v.TxTo, v.TxFrom}] = true
			}
		}
	}
	prefix := txLogKey.tablePrefix(t.ID)
	it, err := s.newIter(prefix, encoding.PrefixEnd(prefix))
	if err != nil {
		return err
	}
	defer it.Close()
	var changes []logChange
	var lastTx int64
	var nextOrd uint64 // the least ordinal the next entry of lastTx may start at
	for ok := it.First(); ok; ok = it.Next() {
		tx, first, err := txLogKey.decode(it.Key()[len(prefix):])
		if err == nil && isErasure(it.Value()) {
			if _, err := decodeErasure(t, tx, it.Value()); err != nil {
				rep.add(Problem{Invariant: 0, Table: t.Name, Detail: fmt.Sprintf("txlog entry %x: %v", it.Key(), err)})
			}
			if tx == lastTx && uint64(first) < nextOrd {
				rep.add(Problem{Invariant: 5, Table: t.Name, Detail: fmt.Sprintf("txlog erasure at tx %d ordinal %d overlaps the previous entry's changes", tx, first)})
			}
			lastTx, nextOrd = tx, uint64(first)+1
			continue
		}
		var tuple []byte
		if err == nil {
			tuple, changes, err = decodeLogEntry(t, tx, it.Value(), changes)
		}
		if err != nil {
			rep.add(Problem{Invariant: 0, Table: t.Name, Detail: fmt.Sprintf("txlog entry %x: %v", it.Key(), err)})
			continue
		}
		key, _ := t.DecodeKey(tuple)
		if tx > s.lastTx {
			rep.add(Problem{Invariant: 4, Table: t.Name, Detail: fmt.Sprintf("txlog entry at tx %d is newer than the last commit %d", tx, s.lastTx)})
		}
		if tx <= horizon {
			rep.add(Problem{Invariant: 5, Table: t.Name, Key: key, Detail: fmt.Sprintf("txlog entry at tx %d is not after the retention horizon %d", tx, horizon)})
		}
		if tx == lastTx && uint64(first) < nextOrd {
			rep.add(Problem{Invariant: 5, Table: t.Name, Key: key, Detail: fmt.Sprintf("txlog entry at tx %d ordinal %d overlaps the previous entry's changes", tx, first)})
		}
		lastTx, nextOrd = tx, uint64(first)+uint64(len(changes))
		for _, c := range changes {
			k := entry{c.op, string(tuple), c.validFrom, tx, c.txFrom}
			if !want[k] {
				rep.add(Problem{Invariant: 5, Table: t.Name, Key: key, Detail: fmt.Sprintf("txlog change (%s, tx %d, valid_from %d) has no matching record", c.op, tx, c.validFrom)})
				continue
			}
			delete(want, k)
		}
	}
	for e := range want {
		key, _ := t.DecodeKey([]byte(e.tuple))
		rep.add(Problem{Invariant: 5, Table: t.Name, Key: key, Detail: fmt.Sprintf("record (valid_from %d) has no txlog change %s at tx %d", e.from, e.op, e.tx)})
	}
	return it.Error()
}

// nextSKCommitted reads the persisted sk counter of a table in snapshot s.
func (db *DB) nextSKCommitted(s *Snapshot, tid uint32) uint64 {
	raw, ok, err := s.view.Get(skCounterKey(tid))
	if err != nil || !ok {
		return 1
	}
	next, _, err := encoding.DecodeUint64(raw)
	if err != nil {
		return 0
	}
	return next
}
