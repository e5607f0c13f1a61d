package cli

import (
	bin "encoding/binary"
	"errors"
	"sync/atomic"
)

// The streamed --batch-size load of a changes table (a file of more than
// --spill-rows rows; on an engine that bounds one commit, of more rows than
// the commit holds writes). Its batches are those of the in-memory path
// (commitEvents): of the file's rows, bad rows left out, only the last row of
// each event (key, --at, --seq) is kept (lastPerEvent), and the rest are cut
// into --batch-size runs in file order, batch k applied as batch id ID#k. So a
// load that stops midway is finished by the same command again, which skips
// the committed batches by their ids, and the store ends byte for byte as
// after the in-memory load.
//
// Pass 2 (load_stream.go) writes the checked rows into runs sorted by event,
// file order breaking ties. Merging them keeps the last row of each event and
// writes it into runs sorted by file order; merging those gives the rows in
// file order, one batch at a time. Memory is the runs' budget and one batch's
// rows, whatever the file's size.

// eventTupleSuffix is the length of what eventTuple appends to a key tuple.
const eventTupleSuffix = 16

// eventTuple is the sort key of a row in the runs of a streamed batched
// changes load: its key tuple followed by its --at and --seq, each 8 bytes, so
// that two rows have equal event tuples exactly when they are one event.
func eventTuple(row *loadRow) string {
	b := make([]byte, 0, len(row.tuple)+eventTupleSuffix)
	b = append(b, row.tuple...)
	b = bin.BigEndian.AppendUint64(b, uint64(row.at))
	b = bin.BigEndian.AppendUint64(b, uint64(row.seq))
	return string(b)
}

// lastOfEvents merges byEvent's runs, sorted by event, and holds the last row
// of each event in the file, with its key tuple, in a sorter in file order:
// the rows lastPerEvent keeps. It returns that sorter (to be closed by the
// caller) and the number of rows in it.
func (r *loadRun) lastOfEvents(byEvent *runSorter) (*runSorter, int, error) {
	fo := &runSorter{dir: byEvent.dir, budget: byEvent.budget, fileOrder: true, attrCols: byEvent.attrCols}
	m, err := byEvent.merge()
	if err != nil {
		return fo, 0, err
	}
	defer m.close()
	var prev runRow
	has, kept := false, 0
	for n := 1; ; n++ {
		row, ok, err := m.next()
		if err != nil {
			return fo, 0, err
		}
		if n%streamCheckRows == 0 && r.ctx.Err() != nil {
			return fo, 0, errInterrupted
		}
		if has && (!ok || row.tuple != prev.tuple) {
			prev.tuple = prev.tuple[:len(prev.tuple)-eventTupleSuffix]
			if err := fo.hold(prev); err != nil {
				return fo, 0, err
			}
			kept++
		}
		if !ok {
			return fo, kept, fo.finish()
		}
		prev, has = row, true
	}
}

// commitEventsInFileOrder commits the rows of byEvent (pass 2's runs of a
// batched changes load, nrows rows) as the in-memory path's CDC batches of
// the batch id batchID, one batch in memory at a time.
func (r *loadRun) commitEventsInFileOrder(byEvent *runSorter, nrows int, in *input, batchID string) error {
	fo, kept, err := r.lastOfEvents(byEvent)
	defer fo.close()
	byEvent.close() // its rows are all in fo now
	switch {
	case errors.Is(err, errInterrupted):
		return r.interrupted()
	case err != nil:
		return r.midway(err)
	}
	r.streamed, r.total = true, kept
	r.batchID, r.parts = batchID, len(batches(kept, r.size))
	r.bar = r.a.newProgress("loading "+r.t.Name, kept)
	defer r.bar.finish()
	m, err := fo.merge()
	if err != nil {
		return r.midway(err)
	}
	defer m.close()
	rows := make([]loadRow, 0, min(r.size, kept))
	for {
		rows = rows[:0]
		for len(rows) < r.size {
			rr, ok, err := m.next()
			if err != nil {
				return r.midway(err)
			}
			if !ok {
				break
			}
			row, err := decodeRow(rr.rec, rr.tuple, in, fo.attrCols)
			if err != nil {
				return r.midway(err)
			}
			row.at = rr.at
			rows = append(rows, row)
		}
		if len(rows) == 0 {
			break
		}
		noteRowsHeld(len(rows))
		r.rows = rows
		if err := r.commitEventRows(); err != nil {
			return err
		}
	}
	r.eventsDone(nil, nrows-kept)
	return nil
}

// rowsHeldPeak is the most rows a load of this process has held in memory at
// once since LoadRowsHeldPeak last read it.
var rowsHeldPeak atomic.Int64

// noteRowsHeld records that a load holds n rows at once: the rows of an
// in-memory load, those waiting to go into a run, one key's rows, or a batch.
func noteRowsHeld(n int) {
	for {
		peak := rowsHeldPeak.Load()
		if int64(n) <= peak || rowsHeldPeak.CompareAndSwap(peak, int64(n)) {
			return
		}
	}
}

// LoadRowsHeldPeak returns the most rows that the loads run in this process
// held in memory at once (read from their file, waiting to go into a sorted
// run, of one key, or of one batch) since it was last called, and starts
// counting again from zero. A load in memory holds its file's rows; a
// streamed load only as many as its --spill-bytes budget, a key and a batch
// take. Tests use it to show that a load is bounded.
func LoadRowsHeldPeak() int {
	return int(rowsHeldPeak.Swap(0))
}
