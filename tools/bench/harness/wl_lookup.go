package main

import "errors"

// Workloads 3 and 4: point as-of lookups, random keys and valid times, one at a
// time, on a long-lived snapshot, iterator or prepared statement. Workload 3
// reads the base table as of now; workload 4 reads a table whose keys each had
// 100 corrections, as known at a random earlier correction round. Engines with
// millisecond lookups (DuckDB) run only the first sc.slowLookups lookups; every
// engine's checksum covers exactly those.

func runLookupLatest(h *harness, k engineKind) (measurement, error) {
	e, err := h.baseFor(k)
	if err != nil {
		return measurement{}, err
	}
	return runLookups(h, k, h.d.lookups, func(p probe) (version, bool, error) { return e.lookup(p.key, p.valid) })
}

func runLookupOldTx(h *harness, k engineKind) (measurement, error) {
	e, err := h.fresh(k, "old")
	if err != nil {
		return measurement{}, err
	}
	h.logf("  %s: loading %d keys with %d corrections each (not timed)", k.name, len(h.d.old.keys), h.sc.corrections)
	if err := e.loadCorrections(h.d.old); err != nil {
		return measurement{}, errors.Join(err, h.discard(e))
	}
	if err := h.settle(k, e, "the corrections"); err != nil {
		return measurement{}, errors.Join(err, h.discard(e))
	}
	m, err := runLookups(h, k, h.d.oldProbes, func(p probe) (version, bool, error) {
		return e.lookupAsOf(p.key, p.valid, p.round)
	})
	return m, errors.Join(err, h.discard(e))
}

func runLookups(h *harness, k engineKind, probes []probe, lookup func(probe) (version, bool, error)) (measurement, error) {
	n := len(probes)
	if k.slowPoint {
		n = min(n, h.sc.slowLookups)
	}
	checked := make([]answer, min(n, h.sc.slowLookups))
	times, err := h.timeRuns(nil, func(int) error {
		for i, p := range probes[:n] {
			v, ok, err := lookup(p)
			if err != nil {
				return err
			}
			if i < len(checked) {
				checked[i] = answer{found: ok, v: v}
			}
		}
		return nil
	})
	m := measurement{ops: n, times: times}
	for i, a := range checked {
		if a.found {
			m.sum.add(hashVersion(probes[i].key, a.v))
		} else {
			m.sum.add(hashMiss(uint64(i)))
		}
	}
	return m, err
}
