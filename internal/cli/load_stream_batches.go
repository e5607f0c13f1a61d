package cli

// The streamed --batch-size load of a store whose engine bounds one commit
// (etcd): the rows, checked and sorted by key through runs on disk as for a
// one-transaction bounded load (load_stream.go), are committed in
// transactions of at most --batch-size rows (sized down to the engine's
// commit, halved where a batch's bytes need it), each of whole keys where a
// key's rows fit. So memory is one batch's rows, not the file's. The batches
// are in key order, each key's rows in file order (--at order for changes):
// a load that stops names the rows committed in that order, and running it
// again finishes it, as for a batched load in memory. A versions load whose
// rows overlap fails before its first commit. Not for changes tables, whose
// batch ids follow the file order of --batch-size's batches: those read the
// file whole.

// commitMergedBatches commits the sorted rows of rs (nrows in all) in batches.
func (r *loadRun) commitMergedBatches(rs *runSorter, nrows int, in *input) error {
	r.streamed, r.total = true, nrows
	r.bar = r.a.newProgress("loading "+r.t.Name, nrows)
	defer r.bar.finish()
	r.fitBatches()
	if r.mode == modeVersions {
		if err := r.checkMergedOverlaps(rs, in); err != nil {
			return err
		}
	}
	m, err := rs.merge()
	if err != nil {
		return r.midway(err)
	}
	defer m.close()
	var group, pending []loadRow
	conflicts := 0
	for {
		if group, err = m.nextKey(group[:0], in); err != nil {
			return r.midway(err)
		}
		if r.mode == modeUpserts {
			for i := 1; i < len(group); i++ {
				if group[i].at == group[i-1].at && conflicting(&group[i-1], &group[i]) {
					conflicts++
				}
			}
			group = lastPerTime(group)
		}
		if len(pending) > 0 && (len(group) == 0 || len(pending)+len(group) > r.size) {
			r.rows = pending
			if r.mode == modeVersions {
				err = r.commitVersionRows()
			} else {
				err = r.commitUpsertRows()
			}
			if err != nil {
				return err
			}
			pending = pending[:0]
		}
		if len(group) == 0 {
			break
		}
		pending = append(pending, group...)
	}
	r.sum.conflicts = conflicts
	return nil
}

// checkMergedOverlaps reads the sorted rows of a versions load key by key and
// fails, before anything is written, if any two rows of a key overlap.
func (r *loadRun) checkMergedOverlaps(rs *runSorter, in *input) error {
	m, err := rs.merge()
	if err != nil {
		return r.midway(err)
	}
	defer m.close()
	var group []loadRow
	var idx []int
	var report []string
	for {
		if group, err = m.nextKey(group[:0], in); err != nil {
			return r.midway(err)
		}
		if len(group) == 0 {
			return r.a.overlapError(r.t, report)
		}
		idx = idx[:0]
		for i := range group {
			idx = append(idx, i)
		}
		report = keyOverlaps(report, in.name, r.t, group, idx)
	}
}
