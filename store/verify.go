package store

import (
	"bytes"
	"cmp"
	"fmt"
	"hash/maphash"
	"slices"
	"strings"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/engine"
	"github.com/bitempo/bitempo/layout"
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

// Verify checks invariants 1-7 of the package doc over the whole store, on one
// snapshot. The error is for failures to read; everything wrong with the content is
// a Problem in the report. It checks invariant 6 (changes tables against a
// from-scratch derivation of their event logs, changes_verify.go) too.
//
// Memory: Verify streams. It reads a table's records key by key in key order
// (the current index and history merged), so the checks within one key
// (invariants 1, 2 and 4) hold that key's records and nothing more. The checks
// that meet records again in a keyspace ordered otherwise (surrogate keys, the
// sk index, the transaction log) hold fixed-size entries, sorted, one check at
// a time, each built by its own pass over the records: 32 bytes per record plus
// 8 per surrogate key for invariant 3; 40 per record that needs an sk-index
// entry, plus 32 per surrogate key, key and valid_from when the table has a
// retention horizon, for the sk index; 40 per assert and per retire change the
// log must hold (so at most 80 per record) for the log. The last two are sized
// exactly from counts of the first pass; the first grows by appending. A
// table's peak is thus about 80 bytes per record, never the
// records themselves, plus one key's records. Problems name their records by
// (key number, place) and fetch them with one more pass. Keys are matched across
// keyspaces by a 64-bit hash of their tuple, seeded per call; a collision
// (2^-64 per pair of keys) could hide a problem, which the rejected
// alternative, a map from every tuple, avoided at the cost of holding them all.
// The group-index check (groups.go) holds 24 bytes per record that has a
// group: the hashes of the index key and value it needs, sorted, against
// which the index is matched. The changes-table check holds one key's events, checkpoint and versions at a time.
func Verify(r Reader) (*Report, error) {
	s, release, err := r.AcquireSnapshot()
	if err != nil {
		return nil, err
	}
	defer release()
	s.db.commits.reset() // decode through the map as this view holds it
	s.commitBase, s.commitPage = 0, nil
	rep := &Report{}
	known := map[uint32]bool{}
	for _, t := range s.db.Tables() {
		known[t.ID] = true
		rep.Tables++
		if err := verifyTable(s, t, rep); err != nil {
			return nil, err
		}
	}
	for _, ks := range layout.PerTableKeyspaces() {
		if ks == layout.Groups {
			continue // verifyGroups also checks that the table is grouped
		}
		if err := verifyTableIDs(s, ks, known, rep); err != nil {
			return nil, err
		}
	}
	if err := verifyGroups(s, rep); err != nil {
		return nil, err
	}
	if err := verifyCommits(s, rep); err != nil {
		return nil, err
	}
	if err := verifyChanges(s, rep); err != nil {
		return nil, err
	}
	return rep, nil
}

// verifyTableIDs reports keys of keyspace ks whose table id is not in the catalog.
func verifyTableIDs(s *Snapshot, ks byte, known map[uint32]bool, rep *Report) error {
	return eachTableID(s, ks, rep, func(tid uint32) {
		if !known[tid] {
			rep.add(Problem{Invariant: 5, Detail: fmt.Sprintf("%s keys of table id %d, which is not in the catalog", layout.KeyspaceName(ks), tid)})
		}
	})
}

// eachTableID calls fn with every table id that keys of keyspace ks start
// with, in order, seeking past each table's keys; a key too short to hold a
// table id is reported as invariant 0.
func eachTableID(s *Snapshot, ks byte, rep *Report, fn func(tid uint32)) error {
	it, err := s.newIter([]byte{ks}, []byte{ks + 1})
	if err != nil {
		return err
	}
	defer it.Close()
	for ok := it.First(); ok; {
		tid, _, err := layout.SplitTableID(it.Key())
		if err != nil {
			rep.add(Problem{Invariant: 0, Detail: fmt.Sprintf("%s key %x: %v", layout.KeyspaceName(ks), it.Key(), err)})
			ok = it.Next()
			continue
		}
		fn(tid)
		if tid == ^uint32(0) {
			break
		}
		ok = it.SeekGE(layout.AppendTablePrefix(nil, ks, tid+1))
	}
	return it.Error()
}

// keyGroup is the records of one natural key: those of the current index, then
// those of history, each in stored order. ord numbers the keys of a table in key
// order from 0; a later pass over the same snapshot gives every key the same ord.
type keyGroup struct {
	ord     uint32
	tuple   []byte
	recs    []Version
	current int // recs[:current] come from the current index
}

// verRef names one record by its key's ord and its place in the key's recs, so
// a check can hold fixed-size references and fetch the records it reports.
type verRef struct{ ord, idx uint32 }

// recStream reads one record keyspace of a table a key at a time.
type recStream struct {
	s      *Snapshot
	t      *Table
	keys   layout.RecordCodec
	prefix []byte
	it     engine.Iter
	valid  bool
	report *Report // where records that do not decode are reported; nil: skipped
	// The first record of the next key, already decoded.
	next      Version
	nextTuple []byte
	hasNext   bool
}

// group returns the next key's tuple and records (appended to recs[:0]), or
// ok false at the end of the table.
func (r *recStream) group(recs []Version) (tuple []byte, out []Version, ok bool) {
	out = recs[:0]
	if r.hasNext {
		tuple, out, r.hasNext = r.nextTuple, append(out, r.next), false
	}
	for ; r.valid; r.valid = r.it.Next() {
		tup, from, txFrom, err := r.keys.Decode(r.t.splitTuple, r.it.Key()[len(r.prefix):])
		var v Version
		if err == nil {
			v, err = r.s.decodeVersion(r.t, tup, from, txFrom, r.it.Value())
		}
		if err == nil && r.keys.Keyspace() == layout.History && txFrom != v.TxFrom {
			err = fmt.Errorf("%w: key says tx_from %d, value %d", ErrCorrupt, txFrom, v.TxFrom)
		}
		if err != nil {
			if r.report != nil {
				r.report.add(Problem{Invariant: 0, Table: r.t.Name, Detail: fmt.Sprintf("%s record %x: %v", layout.KeyspaceName(r.keys.Keyspace()), r.it.Key(), err)})
			}
			continue
		}
		if tuple != nil && !bytes.Equal(tup, tuple) {
			r.next, r.nextTuple, r.hasNext = v, v.tuple, true
			r.valid = r.it.Next()
			return tuple, out, true
		}
		if tuple == nil {
			tuple = v.tuple // decodeVersion cloned it
		}
		out = append(out, v)
	}
	return tuple, out, tuple != nil
}

// forEachKey calls fn with the records of every key of table t, key by key in
// key order, holding one key's records at a time. The current index and history
// both order their records by tuple first, and tuples are self-delimiting, so
// the two keyspaces are merged by comparing tuples. report is where records
// that do not decode are reported (nil on the later passes, which skip them).
// fn must not keep g or its records.
func forEachKey(s *Snapshot, t *Table, report *Report, fn func(g *keyGroup)) error {
	streams := make([]*recStream, 2)
	for i, keys := range []layout.RecordCodec{layout.CurrentKeys, layout.HistoryKeys} {
		prefix := keys.TablePrefix(nil, t.ID)
		it, err := s.newIter(prefix, encoding.PrefixEnd(prefix))
		if err != nil {
			return err
		}
		defer it.Close()
		streams[i] = &recStream{s: s, t: t, keys: keys, prefix: prefix, it: it, valid: it.First(), report: report}
	}
	cur, hist := streams[0], streams[1]
	var curBuf, histBuf []Version
	ct, crecs, cok := cur.group(curBuf)
	ht, hrecs, hok := hist.group(histBuf)
	g := &keyGroup{}
	for cok || hok {
		c := 0
		switch {
		case !hok:
			c = -1
		case !cok:
			c = 1
		default:
			c = bytes.Compare(ct, ht)
		}
		switch {
		case c < 0:
			g.tuple, g.recs, g.current = ct, crecs, len(crecs)
		case c > 0:
			g.tuple, g.recs, g.current = ht, hrecs, 0
		default:
			g.tuple, g.recs, g.current = ct, append(crecs, hrecs...), len(crecs)
		}
		fn(g)
		g.ord++
		if c <= 0 {
			curBuf = g.recs[:0]
			ct, crecs, cok = cur.group(curBuf)
		}
		if c >= 0 {
			histBuf = hrecs[:0]
			ht, hrecs, hok = hist.group(histBuf)
		}
	}
	for _, st := range streams {
		if err := st.it.Error(); err != nil {
			return err
		}
	}
	return nil
}

// pendingProblem is a problem whose records (or key) are fetched by a later
// pass over the records: the cross-keyspace checks hold only verRefs.
type pendingProblem struct {
	p       Problem
	refs    []verRef
	keyOnly bool // refs[0] names the key; Records stays empty
}

// pending collects the problems of one check of one table.
type pending struct {
	rep  *Report
	list []pendingProblem
}

func (p *pending) add(pp pendingProblem) {
	if len(p.rep.Problems)+len(p.list) >= maxProblems {
		p.rep.Truncated = true // the report is full: nothing to fetch for it
		return
	}
	p.list = append(p.list, pp)
}

// flush fetches the records the pending problems name with one more pass over
// the table and adds the problems to the report, in the order found.
func (p *pending) flush(s *Snapshot, t *Table) error {
	if len(p.list) == 0 {
		return nil
	}
	want := map[verRef]*Version{}
	ords := map[uint32]bool{}
	for _, pp := range p.list {
		for _, r := range pp.refs {
			want[r] = nil
			ords[r.ord] = true
		}
	}
	err := forEachKey(s, t, nil, func(g *keyGroup) {
		if !ords[g.ord] {
			return
		}
		for i := range g.recs {
			if _, ok := want[verRef{g.ord, uint32(i)}]; ok {
				v := g.recs[i]
				want[verRef{g.ord, uint32(i)}] = &v
			}
		}
	})
	if err != nil {
		return err
	}
	for _, pp := range p.list {
		for _, r := range pp.refs {
			v := want[r]
			if v == nil {
				return fmt.Errorf("%w: verify: record %d of key %d of table %q vanished from the snapshot", ErrCorrupt, r.idx, r.ord, t.Name)
			}
			if pp.p.Key == nil {
				pp.p.Key = v.Key
			}
			if !pp.keyOnly {
				pp.p.Records = append(pp.p.Records, *v)
			}
		}
		p.rep.add(pp.p)
	}
	p.list = nil
	return nil
}

// skUse is one record's surrogate key, for the checks of invariant 3.
type skUse struct {
	sk           uint64
	at           verRef
	txFrom, txTo int64
}

// verifyTable checks one table in passes over its records, each holding one
// key's records at a time plus the fixed-size entries its cross-keyspace check
// needs (see Verify).
func verifyTable(s *Snapshot, t *Table, rep *Report) error {
	horizon, err := s.Horizon(t)
	if err != nil {
		return err
	}
	decls, err := declaredTables(s, t)
	if err != nil {
		rep.add(Problem{Invariant: 7, Table: t.Name, Detail: err.Error()})
	}
	if n := len(decls); (n > 0 || t.Declared() || t.Strict) && (n == 0 || !sameDeclaration(decls[n-1].t, t)) {
		rep.add(Problem{Invariant: 7, Table: t.Name, Detail: "the catalog's declaration is not the newest recorded one"})
	}
	// Pass 1: invariants 1, 2, 4, 5 and 7 within each key; the surrogate keys.
	var uses []skUse
	var records, logChanges int // to size the later checks' entries exactly
	err = forEachKey(s, t, rep, func(g *keyGroup) {
		for _, v := range g.recs[:g.current] {
			if v.TxTo != Infinity {
				rep.add(Problem{Invariant: 5, Table: t.Name, Key: v.Key, Records: []Version{v}, Detail: "record in the current index has tx_to set"})
			}
		}
		rep.Keys++
		rep.Records += len(g.recs)
		verifyKey(s, t, g.recs, rep)
		for _, v := range g.recs {
			if err := fitsDeclaration(t, decls, v.TxFrom, v.Attrs); len(decls) > 0 && err != nil {
				rep.add(Problem{Invariant: 7, Table: t.Name, Key: v.Key, Records: []Version{v}, Detail: err.Error()})
			}
		}
		for i, v := range g.recs {
			uses = append(uses, skUse{sk: v.SK, at: verRef{g.ord, uint32(i)}, txFrom: v.TxFrom, txTo: v.TxTo})
			if v.TxFrom > horizon {
				logChanges++
			}
			if v.TxTo != Infinity {
				logChanges++
			}
		}
		records += len(g.recs)
	})
	if err != nil {
		return err
	}
	if err := verifyNewest(s, t, rep); err != nil {
		return err
	}
	live, err := verifySKs(s, t, uses, rep)
	if err != nil {
		return err
	}
	uses = nil
	if err := verifySKIndex(s, t, horizon, records, rep); err != nil {
		return err
	}
	if err := verifyErasures(s, t, func(sk uint64) bool { _, ok := slices.BinarySearch(live, sk); return ok }, rep); err != nil {
		return err
	}
	live = nil
	return verifyTxLog(s, t, horizon, logChanges, rep)
}

// verifySKs checks invariant 3 (a surrogate key names one key, and at most one
// of its records at any transaction time) and that the sk counter is above every
// surrogate key. uses are in key order; it returns the distinct surrogate keys,
// sorted.
func verifySKs(s *Snapshot, t *Table, uses []skUse, rep *Report) ([]uint64, error) {
	// Stable: within one sk, uses stay in key order, so "another key" is
	// reported for the first record of every key after the first, as the
	// map-based check of the whole table did for the order it met the keys in.
	slices.SortStableFunc(uses, func(a, b skUse) int { return cmp.Compare(a.sk, b.sk) })
	pend := &pending{rep: rep}
	var live []uint64
	var alive []*skUse
	for lo := 0; lo < len(uses); {
		sk := uses[lo].sk
		hi := lo + 1
		for hi < len(uses) && uses[hi].sk == sk {
			hi++
		}
		run := uses[lo:hi]
		live = append(live, sk)
		for i := 1; i < len(run); i++ {
			if run[i].at.ord != run[i-1].at.ord {
				pend.add(pendingProblem{p: Problem{Invariant: 3, Table: t.Name, Detail: fmt.Sprintf("sk %d also names another key", sk)}, refs: []verRef{run[i].at}})
			}
		}
		// Sweep in tx_from order keeping the records still alive.
		slices.SortFunc(run, func(a, b skUse) int { return cmp.Compare(a.txFrom, b.txFrom) })
		alive = alive[:0]
	sweep:
		for i := range run {
			r := &run[i]
			kept := alive[:0]
			for _, a := range alive {
				if a.txTo > r.txFrom {
					kept = append(kept, a)
				}
			}
			alive = kept
			if len(alive) > 0 {
				pend.add(pendingProblem{p: Problem{Invariant: 3, Table: t.Name, Detail: fmt.Sprintf("sk %d names two records alive at the same transaction time", sk)}, refs: []verRef{alive[0].at, r.at}})
				break sweep
			}
			alive = append(alive, r)
		}
		lo = hi
	}
	if len(live) > 0 {
		if next := s.db.nextSKCommitted(s, t.ID); live[len(live)-1] >= next {
			rep.add(Problem{Invariant: 5, Table: t.Name, Detail: fmt.Sprintf("sk counter %d is not above the largest sk %d", next, live[len(live)-1])})
		}
	} else if next := s.db.nextSKCommitted(s, t.ID); next == 0 {
		rep.add(Problem{Invariant: 5, Table: t.Name, Detail: fmt.Sprintf("sk counter %d is not above the largest sk %d", next, 0)})
	}
	return live, pend.flush(s, t)
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

// tupleHash hashes tuples for the fixed-size entries of the cross-keyspace
// checks, which meet a key again by its tuple in the sk index and the
// transaction log. The seed is fixed per Verify call, not per process, so two
// tuples that collide (probability 2^-64 per pair) do not collide again. The
// rejected alternative, a map from tuple to key ord, holds every tuple.
type tupleHash struct{ seed maphash.Seed }

func (h tupleHash) of(tuple []byte) uint64 { return maphash.Bytes(h.seed, tuple) }

// skWant is a record that needs an sk-index entry: the entries of a key are
// matched by (hash, from, tx).
type skWant struct {
	hash     uint64
	from, tx int64
	sk       uint64
	ord      uint32
	matched  bool
}

// skLoc is a surrogate key, key and valid_from, with the newest tx_from of its
// records (maxTx) or the oldest tx_from of its sk-index entries through the
// horizon (minTx).
type skLoc struct {
	sk       uint64
	hash     uint64
	from, tx int64
}

func cmpSKLoc(a, b skLoc) int {
	return cmp.Or(cmp.Compare(a.sk, b.sk), cmp.Compare(a.hash, b.hash), cmp.Compare(a.from, b.from))
}

// verifySKIndex checks that the sk index holds exactly one entry per record,
// pointing at it, except for a record that re-asserts, with the same surrogate
// key, key and valid_from, a record retired by the same transaction (an SCD2
// close), which the entry of the retired record already names.
//
// The index is in sk order and the records in key order, so the records that
// need an entry are collected as sorted fixed-size skWants (and, with a
// horizon, skLocs) in one pass over the records, and the index is matched
// against them.
// records is the table's number of records, which bounds the entries.
func verifySKIndex(s *Snapshot, t *Table, horizon int64, records int, rep *Report) error {
	h := tupleHash{maphash.MakeSeed()}
	wants := make([]skWant, 0, records)
	var locs []skLoc // with a horizon: per sk, key and valid_from, the newest tx_from
	if horizon > 0 {
		locs = make([]skLoc, 0, records)
	}
	type place struct {
		sk   uint64
		from int64
	}
	type wantKey struct{ from, tx int64 }
	retired := map[place]map[int64]bool{} // one key's: the tx_to of each sk and valid_from's retired records
	keyWants := map[wantKey]int{}         // one key's: index in wants
	err := forEachKey(s, t, nil, func(g *keyGroup) {
		hash := h.of(g.tuple)
		clear(retired)
		clear(keyWants)
		for _, v := range g.recs {
			if v.TxTo != Infinity {
				p := place{v.SK, v.ValidFrom}
				if retired[p] == nil {
					retired[p] = map[int64]bool{}
				}
				retired[p][v.TxTo] = true
			}
		}
		for _, v := range g.recs {
			if retired[place{v.SK, v.ValidFrom}][v.TxFrom] {
				continue
			}
			// One entry per key, valid_from and tx_from: a later record
			// replaces the sk an earlier one wanted.
			k := wantKey{v.ValidFrom, v.TxFrom}
			w := skWant{hash: hash, from: v.ValidFrom, tx: v.TxFrom, sk: v.SK, ord: g.ord}
			if i, ok := keyWants[k]; ok {
				wants[i] = w
				continue
			}
			keyWants[k] = len(wants)
			wants = append(wants, w)
		}
		if horizon > 0 {
			n := len(locs)
			for _, v := range g.recs {
				locs = append(locs, skLoc{v.SK, hash, v.ValidFrom, v.TxFrom})
			}
			key := locs[n:]
			slices.SortFunc(key, func(a, b skLoc) int { return cmp.Or(cmpSKLoc(a, b), cmp.Compare(b.tx, a.tx)) })
			key = slices.CompactFunc(key, func(a, b skLoc) bool { return cmpSKLoc(a, b) == 0 })
			locs = locs[:n+len(key)]
		}
	})
	if err != nil {
		return err
	}
	retired, keyWants = nil, nil
	cmpWant := func(a, b skWant) int {
		return cmp.Or(cmp.Compare(a.hash, b.hash), cmp.Compare(a.from, b.from), cmp.Compare(a.tx, b.tx))
	}
	slices.SortFunc(wants, cmpWant)
	slices.SortFunc(locs, cmpSKLoc)
	findWant := func(hash uint64, from, tx int64) *skWant {
		i, ok := slices.BinarySearchFunc(wants, skWant{hash: hash, from: from, tx: tx}, cmpWant)
		if !ok || wants[i].matched {
			return nil
		}
		return &wants[i]
	}
	// Through the horizon Vacuum keeps, per surrogate key, only the newest
	// entry (vacuum.go): such an entry must name records of its key and
	// valid_from asserted since, and a record asserted by then needs an entry
	// of its sk and place at or before it.
	var oldEntries []skLoc // per sk, key and valid_from, the oldest tx_from of entries through the horizon
	prefix := layout.AppendTablePrefix(nil, layout.SKIndex, t.ID)
	it, err := s.newIter(prefix, encoding.PrefixEnd(prefix))
	if err != nil {
		return err
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		sk, txFrom, err := layout.SKIndexKeys.DecodeKey(it.Key()[len(prefix):])
		var from int64
		var tuple []byte
		if err == nil {
			tuple, from, err = layout.SKIndexKeys.DecodeValue(t.splitTuple, it.Value())
		}
		if err != nil {
			rep.add(Problem{Invariant: 0, Table: t.Name, Detail: fmt.Sprintf("sk index entry %x: %v", it.Key(), err)})
			continue
		}
		hash := h.of(tuple)
		if txFrom <= horizon {
			loc := skLoc{sk, hash, from, 0}
			if i, ok := slices.BinarySearchFunc(locs, loc, cmpSKLoc); !ok || locs[i].tx < txFrom {
				key, _ := t.DecodeKey(tuple)
				rep.add(Problem{Invariant: 5, Table: t.Name, Key: key, Detail: fmt.Sprintf("sk index entry (sk %d, tx_from %d, valid_from %d) names no record", sk, txFrom, from)})
			}
			loc.tx = txFrom
			oldEntries = append(oldEntries, loc)
			if w := findWant(hash, from, txFrom); w != nil {
				w.matched = true
			}
			continue
		}
		w := findWant(hash, from, txFrom)
		if w == nil || w.sk != sk {
			key, _ := t.DecodeKey(tuple)
			rep.add(Problem{Invariant: 5, Table: t.Name, Key: key, Detail: fmt.Sprintf("sk index entry (sk %d, tx_from %d, valid_from %d) has no matching record", sk, txFrom, from)})
			continue
		}
		w.matched = true
	}
	if err := it.Error(); err != nil {
		return err
	}
	locs = nil
	slices.SortFunc(oldEntries, func(a, b skLoc) int { return cmp.Or(cmpSKLoc(a, b), cmp.Compare(a.tx, b.tx)) })
	oldEntries = slices.CompactFunc(oldEntries, func(a, b skLoc) bool { return cmpSKLoc(a, b) == 0 })
	pend := &pending{rep: rep}
	for _, w := range wants {
		if w.matched {
			continue
		}
		if w.tx <= horizon {
			if i, ok := slices.BinarySearchFunc(oldEntries, skLoc{w.sk, w.hash, w.from, 0}, cmpSKLoc); ok && oldEntries[i].tx <= w.tx {
				continue
			}
		}
		pend.add(pendingProblem{p: Problem{Invariant: 5, Table: t.Name, Detail: fmt.Sprintf("record (sk %d, valid_from %d, tx_from %d) is missing from the sk index", w.sk, w.from, w.tx)}, refs: []verRef{{w.ord, 0}}, keyOnly: true})
	}
	return pend.flush(s, t)
}

// logWant is a transaction-log change a record needs.
type logWant struct {
	hash     uint64
	from, tx int64 // tx: the tx of the log key
	txFrom   int64
	ord      uint32
	op       LogOp
	matched  bool
}

func cmpLogWant(a, b logWant) int {
	return cmp.Or(cmp.Compare(a.hash, b.hash), cmp.Compare(a.op, b.op), cmp.Compare(a.from, b.from), cmp.Compare(a.tx, b.tx), cmp.Compare(a.txFrom, b.txFrom))
}

// verifyTxLog checks that the transaction log holds one assert change per record
// at its tx_from and one retire change per retired record at its tx_to, and
// nothing else, and that the changes of one transaction have distinct ordinals.
// The log is in transaction order and the records in key order, so the changes
// the records need are collected as sorted fixed-size logWants and the log is
// matched against them. changes is the number of changes the records need.
func verifyTxLog(s *Snapshot, t *Table, horizon int64, changes int, rep *Report) error {
	h := tupleHash{maphash.MakeSeed()}
	wants := make([]logWant, 0, changes)
	err := forEachKey(s, t, nil, func(g *keyGroup) {
		hash := h.of(g.tuple)
		for _, v := range g.recs {
			if v.TxFrom > horizon { // Vacuum dropped the log through the horizon
				wants = append(wants, logWant{hash: hash, from: v.ValidFrom, tx: v.TxFrom, txFrom: v.TxFrom, ord: g.ord, op: LogAssert})
			}
			if v.TxTo != Infinity {
				wants = append(wants, logWant{hash: hash, from: v.ValidFrom, tx: v.TxTo, txFrom: v.TxFrom, ord: g.ord, op: LogRetire})
			}
		}
	})
	if err != nil {
		return err
	}
	slices.SortFunc(wants, cmpLogWant)
	wants = slices.CompactFunc(wants, func(a, b logWant) bool { return cmpLogWant(a, b) == 0 })
	prefix := layout.TxLogKeys.TablePrefix(t.ID)
	it, err := s.newIter(prefix, encoding.PrefixEnd(prefix))
	if err != nil {
		return err
	}
	defer it.Close()
	var logged []logChange
	var lastTx int64
	var nextOrd uint64 // the least ordinal the next entry of lastTx may start at
	for ok := it.First(); ok; ok = it.Next() {
		tx, first, err := layout.TxLogKeys.Decode(it.Key()[len(prefix):])
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
			tuple, logged, err = decodeLogEntry(t, tx, it.Value(), logged)
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
		lastTx, nextOrd = tx, uint64(first)+uint64(len(logged))
		hash := h.of(tuple)
		for _, c := range logged {
			i, ok := slices.BinarySearchFunc(wants, logWant{hash: hash, from: c.validFrom, tx: tx, txFrom: c.txFrom, op: c.op}, cmpLogWant)
			if !ok || wants[i].matched {
				rep.add(Problem{Invariant: 5, Table: t.Name, Key: key, Detail: fmt.Sprintf("txlog change (%s, tx %d, valid_from %d) has no matching record", c.op, tx, c.validFrom)})
				continue
			}
			wants[i].matched = true
		}
	}
	if err := it.Error(); err != nil {
		return err
	}
	pend := &pending{rep: rep}
	for _, w := range wants {
		if !w.matched {
			pend.add(pendingProblem{p: Problem{Invariant: 5, Table: t.Name, Detail: fmt.Sprintf("record (valid_from %d) has no txlog change %s at tx %d", w.from, w.op, w.tx)}, refs: []verRef{{w.ord, 0}}, keyOnly: true})
		}
	}
	return pend.flush(s, t)
}

// nextSKCommitted reads the persisted sk counter of a table in snapshot s.
func (db *DB) nextSKCommitted(s *Snapshot, tid uint32) uint64 {
	raw, ok, err := s.view.Get(layout.SKCounterKey(tid))
	if err != nil || !ok {
		return 1
	}
	next, _, err := encoding.DecodeUint64(raw)
	if err != nil {
		return 0
	}
	return next
}
