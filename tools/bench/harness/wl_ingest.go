package main

import "errors"

// Workloads 1 and 2: SCD2 ingest with change detection, K keys x V changes in
// commits of sc.batch changes, each run into a fresh database. Workload 1's feed
// arrives in valid-time order; workload 2's has a tenth of its changes one to
// three rounds late. The checksum covers every version of the final table. The
// last run of workload 1 stays open as the engine's base table for workloads 3,
// 5 and 6.

func runIngestInOrder(h *harness, k engineKind) (measurement, error) {
	return runIngest(h, k, h.d.inOrder, true)
}

func runIngestLate(h *harness, k engineKind) (measurement, error) {
	return runIngest(h, k, h.d.late, false)
}

func runIngest(h *harness, k engineKind, feed []change, keepBase bool) (measurement, error) {
	m := measurement{ops: len(feed)}
	for run := range h.sc.writeRuns {
		last := run == h.sc.writeRuns-1
		e, err := h.fresh(k, "ingest")
		if err != nil {
			return m, err
		}
		if err := e.createDim(); err != nil {
			return m, errors.Join(err, h.discard(e))
		}
		s, err := h.timed(func() error { return e.ingest(feed, h.sc.batch) })
		m.times = append(m.times, s)
		if err == nil && last {
			m.sum, err = tableChecksum(e.dimVersions)
		}
		if err != nil {
			return m, errors.Join(err, h.discard(e))
		}
		if last && keepBase {
			err = h.keepBase(k, e)
		} else {
			err = h.discard(e)
		}
		if err != nil {
			return m, err
		}
	}
	return m, nil
}

// tableChecksum digests every version a table scan yields.
func tableChecksum(scan func(fn func(string, version)) error) (checksum, error) {
	var c checksum
	err := scan(func(key string, v version) { c.add(hashVersion(key, v)) })
	return c, err
}
