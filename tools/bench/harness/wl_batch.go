package main

// Workloads 5 and 6: batch reads of the base table. Workload 5 resolves a batch
// of facts (random keys and valid times, unsorted) to the version in effect at
// each fact's time, delivering every answer to Go; the facts are staged where
// each engine reads them (Go memory, or a table for SQL engines) before timing.
// Workload 6 reads every key's version in effect at one valid time in the middle
// of the keys' histories; workload 10 at the newest valid time, after every
// change, where each key's newest version is the answer (the snapshot most
// readers take). Checksums:
// workload 5 covers each fact's index and the attributes it resolved to (bitempo
// returns attributes and a surrogate key, not the period); workload 6 covers
// each key's version.

func runResolve(h *harness, k engineKind) (measurement, error) {
	e, err := h.baseFor(k)
	if err != nil {
		return measurement{}, err
	}
	if !e.factsStaged {
		h.logf("  %s: staging %d facts (not timed)", k.name, len(h.d.facts))
		if err := e.stageFacts(h.d.facts); err != nil {
			return measurement{}, err
		}
		e.factsStaged = true
	}
	out := make([]answer, len(h.d.facts))
	times, err := timeFill(h, out, e.resolve)
	m := measurement{ops: len(out), times: times}
	for i, a := range out {
		if a.found {
			m.sum.add(hashAttrs(mix(uint64(i)), a.v.attrs))
		} else {
			m.sum.add(hashMiss(uint64(i)))
		}
	}
	return m, err
}

// keyVersion is one row of a snapshot.
type keyVersion struct {
	key string
	v   version
}

func runSnapshot(h *harness, k engineKind) (measurement, error) {
	return snapshotAt(h, k, h.d.snapAt)
}

func runSnapshotNewest(h *harness, k engineKind) (measurement, error) {
	return snapshotAt(h, k, h.d.snapNow)
}

func snapshotAt(h *harness, k engineKind, valid int64) (measurement, error) {
	e, err := h.baseFor(k)
	if err != nil {
		return measurement{}, err
	}
	rows := make([]keyVersion, 0, len(h.d.keys))
	times, err := h.timeRuns(func(int) error {
		rows = rows[:0]
		return nil
	}, func(int) error {
		return e.snapshot(valid, func(key string, v version) { rows = append(rows, keyVersion{key: key, v: v}) })
	})
	m := measurement{ops: len(h.d.keys), times: times}
	for _, r := range rows {
		m.sum.add(hashVersion(r.key, r.v))
	}
	return m, err
}
