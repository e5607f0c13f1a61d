package main

import (
	"fmt"
)

// Workload 9: resolve at one past transaction time. Workload 5's facts are
// resolved against the base table as it was known after the first half of
// workload 1's commits (every fact at that one transaction time: a
// point-in-time training set), so its time per fact over workload 5's is what
// resolving as known then costs against resolving as known now (the target:
// at most 1.2x). Only engines that keep transaction time on the base
// table run it (pastResolver: bitempo); the others' base tables are SCD2
// without a transaction period. With one engine there is no checksum to
// compare, so the workload checks every answer against the model: the table
// the first half of the feed's commits builds (finalDim of that prefix).

// pastResolver is an engine that can resolve the staged facts at the
// transaction time its base table had after a number of its ingest's commits.
type pastResolver interface {
	// stagePast prepares the staged facts for resolving as known after the
	// first commits commits of the base table's ingest (not timed), as
	// stageFacts prepares them for workload 5.
	stagePast(commits int) error
	// resolvePast resolves the facts stagePast prepared, filling out[i] for
	// fact i.
	resolvePast(out []answer) error
}

func runResolveOldTx(h *harness, k engineKind) (measurement, error) {
	e, err := h.baseFor(k)
	if err != nil {
		return measurement{}, err
	}
	pr, ok := e.engine.(pastResolver)
	if !ok {
		return measurement{}, fmt.Errorf("%s does not keep transaction time on the base table", k.name)
	}
	if !e.factsStaged {
		h.logf("  %s: staging %d facts (not timed)", k.name, len(h.d.facts))
		if err := e.stageFacts(h.d.facts); err != nil {
			return measurement{}, err
		}
		e.factsStaged = true
	}
	commits := (len(h.d.inOrder) + h.sc.batch - 1) / h.sc.batch / 2
	if err := pr.stagePast(commits); err != nil {
		return measurement{}, err
	}
	out := make([]answer, len(h.d.facts))
	times, err := timeFill(h, out, pr.resolvePast)
	if err != nil {
		return measurement{}, err
	}
	want := finalDim(h.d.inOrder[:min(len(h.d.inOrder), commits*h.sc.batch)])
	m := measurement{ops: len(out), times: times}
	for i, a := range out {
		f := h.d.facts[i]
		j, found := covering(want[f.key], f.valid)
		if found != a.found || (found && want[f.key][j].attrs != a.v.attrs) {
			return measurement{}, fmt.Errorf("fact %d (%s at %d) as known after %d commits: got %v %+v, the model %v", i, f.key, f.valid, commits, a.found, a.v.attrs, found)
		}
		if a.found {
			m.sum.add(hashAttrs(mix(uint64(i)), a.v.attrs))
		} else {
			m.sum.add(hashMiss(uint64(i)))
		}
	}
	return m, nil
}
