package main

import (
	"errors"
	"fmt"
)

// Workload 7: CDC apply. The feed (every key's events, a twentieth deletes, a
// tenth sent twice, shuffled) is applied in batches of sc.batch events, one
// durable commit each, into a fresh database per run; after every batch the
// versions of the keys it touched are up to date. bitempo derives them
// incrementally (txn.Apply); Pebble re-derives each touched key from its stored
// event log in Go; SQLite and DuckDB recompute each touched key's versions from
// the event table with window functions. The checksum covers every derived
// version after the last batch.

func runCDC(h *harness, k engineKind) (measurement, error) {
	var batches [][]cdcEvent
	for lo := 0; lo < len(h.d.cdc); lo += h.sc.batch {
		batches = append(batches, h.d.cdc[lo:min(lo+h.sc.batch, len(h.d.cdc))])
	}
	m := measurement{ops: len(h.d.cdc)}
	for run := range h.sc.writeRuns {
		e, err := h.fresh(k, "cdc")
		if err != nil {
			return m, err
		}
		if err := e.createChanges(); err != nil {
			return m, errors.Join(err, h.discard(e))
		}
		s, err := h.timed(func() error {
			for i, b := range batches {
				if err := e.applyCDC(fmt.Sprintf("batch-%06d", i), b); err != nil {
					return err
				}
			}
			return nil
		})
		m.times = append(m.times, s)
		if err == nil && run == h.sc.writeRuns-1 {
			m.sum, err = tableChecksum(e.changesVersions)
		}
		if err := errors.Join(err, h.discard(e)); err != nil {
			return m, err
		}
	}
	return m, nil
}
