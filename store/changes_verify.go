package store

import (
	"errors"
	"fmt"
	"strings"
)

// verifyChanges checks every table: changes tables against their event logs,
// periods tables for event-log data they must not have, and applied batch ids
// for transaction times after the last commit. Its memory is bounded by one
// key's events, checkpoint and current versions, whatever the size of a table
// (verifyChangesKeys).
func verifyChanges(s *Snapshot, rep *Report) error {
	for _, t := range s.DB().Tables() {
		if t.Kind != Changes {
			has, err := s.HasChangesData(t)
			if err != nil {
				return err
			}
			if has {
				rep.add(Problem{Invariant: 5, Table: t.Name, Detail: "a periods table holds event-log, batch or checkpoint entries"})
			}
			continue
		}
		if err := verifyBatches(s, t, rep); err != nil {
			return err
		}
		if err := verifyChangesKeys(s, t, rep); err != nil {
			return err
		}
	}
	return nil
}

// verifyChangesKeys derives every key of changes table t (verifyChangesKey) as
// Snapshot.ScanChangesKeys yields them, one at a time: its memory is
// bounded by one key's events, checkpoint and versions, never by the number
// of keys. A key that does not parse ends the table's check with a problem;
// the keys before it have been checked (docs/design/verify-changes-streaming.md).
func verifyChangesKeys(s *Snapshot, t *Table, rep *Report) error {
	for tuple, err := range s.ScanChangesKeys(t) {
		if errors.Is(err, ErrCorrupt) {
			rep.add(Problem{Invariant: 0, Table: t.Name, Detail: err.Error()})
			return nil
		}
		if err != nil {
			return err
		}
		if err := verifyChangesKey(s, t, tuple, rep); err != nil {
			return err
		}
	}
	return nil
}

func verifyBatches(s *Snapshot, t *Table, rep *Report) error {
	for b, err := range s.Batches(t) {
		if errors.Is(err, ErrCorrupt) {
			rep.add(Problem{Invariant: 0, Table: t.Name, Detail: err.Error()})
			continue
		}
		if err != nil {
			return err
		}
		if b.Tx <= 0 || b.Tx > s.LastTx() {
			rep.add(Problem{Invariant: 4, Table: t.Name, Detail: fmt.Sprintf("batch %q was applied at tx %d, outside (0, last commit %d]", b.ID, b.Tx, s.LastTx())})
		}
	}
	return nil
}

// verifyChangesKey derives one key from scratch and compares the result with
// its current versions: valid periods and attributes, not surrogate keys (those
// depend on the order in which events arrived).
func verifyChangesKey(s *Snapshot, t *Table, tuple []byte, rep *Report) error {
	key, err := t.DecodeKey(tuple)
	problem := func(inv int, detail string, recs []Version) {
		rep.add(Problem{Invariant: inv, Table: t.Name, Key: key, Records: recs, Detail: detail})
	}
	if err != nil {
		problem(0, err.Error(), nil)
		return nil
	}
	cp, hasCP, err := s.Checkpoint(t, tuple)
	if errors.Is(err, ErrCorrupt) {
		problem(0, err.Error(), nil)
		return nil
	}
	if err != nil {
		return err
	}
	st, cut := RunState{}, NegInfinity
	if hasCP {
		st, cut = CheckpointState(cp), cp.Through
	}
	var evs []CDCEvent
	for e, err := range s.KeyEvents(t, tuple, NegInfinity, NegInfinity) {
		if errors.Is(err, ErrCorrupt) {
			problem(0, err.Error(), nil)
			return nil
		}
		if err != nil {
			return err
		}
		g, ok := GranuleOf(e.At, t.Granularity)
		if !ok || e.At == Infinity || (hasCP && g < cp.Through) {
			problem(6, fmt.Sprintf("event at %d seq %d is outside the derivable range (checkpoint through %d)", e.At, e.Seq, cp.Through), nil)
			return nil
		}
		evs = append(evs, LoggedEvent(e))
	}
	runs, _, _ := Derive(t, st, evs)
	if st.Open {
		cut = st.From
	}
	stored, err := s.KeyVersions(t, tuple, Infinity)
	if err != nil {
		return err
	}
	i := 0
	for ; i < len(stored) && stored[i].ValidFrom < cut; i++ {
		if stored[i].ValidTo > cut {
			problem(6, fmt.Sprintf("compacted version reaches past the checkpoint boundary %d", cut), stored[i:i+1])
		}
	}
	if !runsMatch(runs, stored[i:]) {
		problem(6, "current versions differ from a derivation of the event log, which gives "+formatRuns(runs), stored[i:])
	}
	return nil
}

// runsMatch reports whether versions have exactly the runs' periods and
// attributes.
func runsMatch(runs []DerivedRun, versions []Version) bool {
	if len(runs) != len(versions) {
		return false
	}
	for i, r := range runs {
		v := &versions[i]
		if v.ValidFrom != r.From || v.ValidTo != r.To || v.Inferred || !v.Attrs.Equal(r.Attrs) {
			return false
		}
	}
	return true
}

func formatRuns(runs []DerivedRun) string {
	if len(runs) == 0 {
		return "no versions"
	}
	parts := make([]string, len(runs))
	for i, r := range runs {
		to := "+inf"
		if r.To != Infinity {
			to = fmt.Sprint(r.To)
		}
		parts[i] = fmt.Sprintf("[%d, %s) %v", r.From, to, map[string]any(r.Attrs))
	}
	return strings.Join(parts, ", ")
}
