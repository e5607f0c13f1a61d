package store

// The Verify of before the streaming redesign (every version of a table in maps),
// kept as a test oracle: TestVerifyMatchesLegacy checks that the streaming Verify
// reports the same problems on damaged stores, and BenchmarkVerifyMemory measures
// both.

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/layout"
)

func legacyVerify(r Reader) (*Report, error) {
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
		if err := legacyVerifyTable(s, t, rep); err != nil {
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

func legacyVerifyTable(s *Snapshot, t *Table, rep *Report) error {
	byKey := map[string][]Version{}
	collect := func(tuple []byte, recs []Version) { byKey[string(tuple)] = append(byKey[string(tuple)], recs...) }
	if err := legacyTableRecords(s, t, layout.CurrentKeys, rep, collect); err != nil {
		return err
	}
	for _, recs := range byKey {
		for _, v := range recs {
			if v.TxTo != Infinity {
				rep.add(Problem{Invariant: 5, Table: t.Name, Key: v.Key, Records: []Version{v}, Detail: "record in the current index has tx_to set"})
			}
		}
	}
	if err := legacyTableRecords(s, t, layout.HistoryKeys, rep, collect); err != nil {
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
	if err := legacyVerifyNewest(s, t, rep); err != nil {
		return err
	}
	if err := legacyVerifySKIndex(s, t, byKey, rep); err != nil {
		return err
	}
	if err := legacyVerifyErasures(s, t, byKey, rep); err != nil {
		return err
	}
	return legacyVerifyTxLog(s, t, byKey, rep)
}

func legacyVerifySKIndex(s *Snapshot, t *Table, byKey map[string][]Version, rep *Report) error {
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
func legacyVerifyTxLog(s *Snapshot, t *Table, byKey map[string][]Version, rep *Report) error {
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
	prefix := layout.TxLogKeys.TablePrefix(t.ID)
	it, err := s.newIter(prefix, encoding.PrefixEnd(prefix))
	if err != nil {
		return err
	}
	defer it.Close()
	var changes []logChange
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

func legacyVerifyErasures(s *Snapshot, t *Table, byKey map[string][]Version, rep *Report) error {
	live := map[uint64]bool{}
	for _, recs := range byKey {
		for _, v := range recs {
			live[v.SK] = true
		}
	}
	next := s.db.nextSKCommitted(s, t.ID)
	horizon, err := s.Horizon(t)
	if err != nil {
		return err
	}
	pfx := layout.AppendTablePrefix(nil, layout.ErasedSK, t.ID)
	it, err := s.newIter(pfx, encoding.PrefixEnd(pfx))
	if err != nil {
		return err
	}
	for ok := it.First(); ok; ok = it.Next() {
		sk, err := layout.ErasedSKKeys.DecodeKey(it.Key()[len(pfx):])
		if err != nil {
			rep.add(Problem{Invariant: 0, Table: t.Name, Detail: err.Error()})
			continue
		}
		switch {
		case sk >= next:
			rep.add(Problem{Invariant: 3, Table: t.Name, Detail: fmt.Sprintf("erased sk %d was never handed out (next %d)", sk, next)})
		case live[sk]:
			rep.add(Problem{Invariant: 5, Table: t.Name, Detail: fmt.Sprintf("erased sk %d still names a record", sk)})
		}
		ipfx := layout.SKIndexKeys.Prefix(nil, t.ID, sk)
		if keys, err := s.collectKeys(ipfx, nil, nil); err != nil {
			return firstError(err, it.Close())
		} else if len(keys) > 0 {
			rep.add(Problem{Invariant: 5, Table: t.Name, Detail: fmt.Sprintf("erased sk %d still has %d sk-index entries", sk, len(keys))})
		}
	}
	if err := firstError(it.Error(), it.Close()); err != nil {
		return err
	}
	pfx = layout.AppendTablePrefix(nil, layout.ErasedKey, t.ID)
	it, err = s.newIter(pfx, encoding.PrefixEnd(pfx))
	if err != nil {
		return err
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		hash, tx, err := layout.ErasedKeyKeys.DecodeKey(it.Key()[len(pfx):])
		if err != nil {
			rep.add(Problem{Invariant: 0, Table: t.Name, Detail: err.Error()})
			continue
		}
		if tx <= horizon {
			continue // its log entry was vacuumed
		}
		found := false
		for e, err := range s.TxLog(t, LogPos{Tx: tx}, tx) {
			if err != nil {
				return err
			}
			if e.Op == LogErase && bytes.Equal(e.Erasure.KeyHash, hash) {
				found = true
				break
			}
		}
		if !found {
			rep.add(Problem{Invariant: 5, Table: t.Name, Detail: fmt.Sprintf("erased-key entry of tx %d has no erasure in the transaction log", tx)})
		}
	}
	return it.Error()
}
func legacyTableRecords(s *Snapshot, t *Table, keys layout.RecordCodec, rep *Report, fn func(tuple []byte, recs []Version)) error {
	prefix := keys.TablePrefix(nil, t.ID)
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
		tuple, from, txFrom, err := keys.Decode(t.splitTuple, it.Key()[len(prefix):])
		var v Version
		if err == nil {
			v, err = s.decodeVersion(t, tuple, from, txFrom, it.Value())
		}
		if err == nil && keys.Keyspace() == layout.History && txFrom != v.TxFrom {
			err = fmt.Errorf("%w: key says tx_from %d, value %d", ErrCorrupt, txFrom, v.TxFrom)
		}
		if err != nil {
			rep.add(Problem{Invariant: 0, Table: t.Name, Detail: fmt.Sprintf("%s record %x: %v", layout.KeyspaceName(keys.Keyspace()), it.Key(), err)})
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

// legacyVerifyNewest is verifyNewest with maps: each key's first record in the
// current index, by key prefix, matched against the newest-version entries.
func legacyVerifyNewest(s *Snapshot, t *Table, rep *Report) error {
	type first struct {
		from  int64
		value []byte
	}
	firsts := map[string]first{}
	curLower := layout.CurrentKeys.TablePrefix(nil, t.ID)
	cur, err := legacyRaw(s, curLower)
	if err != nil {
		return err
	}
	for _, kv := range cur {
		k, v := kv[0], kv[1]
		kp, from, err := layout.CurrentKeys.Split(k, len(curLower))
		if err != nil {
			rep.add(Problem{Invariant: 0, Table: t.Name, Detail: err.Error()})
			continue
		}
		if _, ok := firsts[string(kp)]; !ok {
			firsts[string(kp)] = first{from, v}
		}
	}
	nwLower := layout.NewestKeys.TablePrefix(nil, t.ID)
	newest, err := legacyRaw(s, nwLower)
	if err != nil {
		return err
	}
	for _, kv := range newest {
		k, v := kv[0], kv[1]
		tuple := k[len(nwLower):]
		kp := string(layout.CurrentKeys.KeyPrefix(nil, t.ID, tuple))
		f, ok := firsts[kp]
		if !ok {
			newestProblem(t, tuple, newestOrphan, rep)
			continue
		}
		delete(firsts, kp)
		if from, record, err := layout.NewestKeys.DecodeValue(v); err != nil || from != f.from || !bytes.Equal(record, f.value) {
			newestProblem(t, tuple, fmt.Sprintf(newestStale, from, f.from), rep)
		}
	}
	for kp := range firsts {
		newestProblem(t, []byte(kp[len(curLower):]), newestMissing, rep)
	}
	return nil
}

// legacyRaw returns a copy of every key and value of the table whose prefix in
// its keyspace is lower, in key order.
func legacyRaw(s *Snapshot, lower []byte) ([][2][]byte, error) {
	var out [][2][]byte
	it, err := s.newIter(lower, encoding.PrefixEnd(lower))
	if err != nil {
		return nil, err
	}
	for ok := it.First(); ok; ok = it.Next() {
		out = append(out, [2][]byte{bytes.Clone(it.Key()), bytes.Clone(it.Value())})
	}
	return out, firstError(it.Error(), it.Close())
}
