package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bitempo/bitempo/internal/sealed"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/layout"
)

// This file owns transaction-time retention. A table declared with
// TableDef.RetainTx keeps its retired records for that long: Vacuum drops the
// records retired at or before its horizon, now - RetainTx (never later than the
// newest commit), together with what only they needed:
//
//   - their group-index copies;
//   - the transaction-log entries of transactions at or before the horizon
//     (Changes of a window that starts before the horizon fails);
//   - sk-index entries that no read at or after the horizon can reach: for
//     each surrogate key, every entry older than its newest entry at or before
//     the horizon, and all of them when the key has no record left.
//
// and records the horizon at 0x42 | tid. Every read at a transaction time at
// or after the horizon answers exactly as before: a record alive at such a
// time has tx_to after the horizon and stays. A read before the horizon fails
// with a *HorizonError (ErrBeforeHorizon) rather than answer from partial
// history. Two exceptions, by design: Audit (KeyRecords) lists the records
// that remain, and GetBySK of a surrogate key whose records were all dropped
// answers "unknown" at every time (its retirement was dropped with it).
// Valid-time history is never dropped: a version closed in valid time long
// ago, but still believed, is a current record.
//
// Readers hold Pebble snapshots, so a reader that started before a Vacuum
// keeps its whole view, the dropped records included, until it closes;
// it reads the horizon from its own view too.
//
// The horizon is the stored time through which records were dropped, not the
// clock minus the retention, so reads never fail for data the store still
// holds; refusing reads older than now - RetainTx even before a Vacuum would
// make reads depend on the clock.

// ErrBeforeHorizon: a read at a transaction time older than the table's
// retention horizon, whose records Vacuum dropped. The error is a
// *HorizonError.
var ErrBeforeHorizon = errors.New("bitempo: transaction time before the retention horizon")

// HorizonError is a read before a table's retention horizon.
type HorizonError struct {
	Table   string
	Tx      int64 // the transaction time of the read
	Horizon int64 // reads at or after it are complete
}

func (e *HorizonError) Error() string {
	return fmt.Sprintf("bitempo: table %q: transaction time %s is before the retention horizon %s (records retired by then were vacuumed)", e.Table, txInstant(e.Tx), txInstant(e.Horizon))
}

// txInstant prints a transaction time (microseconds since the Unix epoch, UTC)
// as RFC 3339 to the microsecond, the form the tool prints and parses.
func txInstant(tx int64) string {
	return time.UnixMicro(tx).UTC().Format("2006-01-02T15:04:05.999999Z07:00")
}

// Is makes errors.Is(err, ErrBeforeHorizon) true.
func (e *HorizonError) Is(target error) bool { return target == ErrBeforeHorizon }

// Horizon returns the table's retention horizon as of the snapshot: reads at a
// transaction time before it fail; 0 when nothing was ever vacuumed.
func (s *Snapshot) Horizon(t *Table) (int64, error) {
	if t.RetainTx == 0 {
		return 0, nil
	}
	if h, ok := s.horizons[t.ID]; ok {
		return h, nil
	}
	raw, ok, err := s.view.Get(layout.HorizonKey(t.ID))
	if err != nil {
		return 0, err
	}
	var h int64
	if ok {
		if h, _, err = encoding.DecodeTimeAsc(raw); err != nil {
			return 0, fmt.Errorf("%w: table %q horizon: %v", ErrCorrupt, t.Name, err)
		}
	}
	if s.horizons == nil {
		s.horizons = map[uint32]int64{}
	}
	s.horizons[t.ID] = h
	return h, nil
}

// checkHorizon fails a read of t at transaction time tx before the horizon.
func (s *Snapshot) checkHorizon(t *Table, tx int64) error {
	if t.RetainTx == 0 {
		return nil
	}
	h, err := s.Horizon(t)
	if err != nil || tx >= h {
		return err
	}
	return &HorizonError{Table: t.Name, Tx: tx, Horizon: h}
}

// VacuumResult says what Vacuum dropped from one table.
type VacuumResult struct {
	Table string
	// Horizon is the table's new horizon (0 when nothing moved it).
	Horizon int64
	// Records, LogEntries and SKEntries count the retired records, the
	// transaction-log entries and the sk-index entries dropped.
	Records, LogEntries, SKEntries int
}

// Vacuum drops, from every table declared with a RetainTx, the records retired
// longer ago than its retention (see vacuum.go's comment), in one commit, and
// then purges the dropped bytes from the store's files like an erasure. It
// returns what it dropped per table.
func (db *DB) Vacuum(ctx context.Context) ([]VacuumResult, error) {
	w, err := db.BeginWrite(sealed.Key{})
	if err != nil {
		return nil, err
	}
	defer w.Abort()
	now := db.opts.Clock()
	var out []VacuumResult
	for _, t := range db.Tables() {
		if t.RetainTx == 0 {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		r, err := w.vacuum(t, min(now-t.RetainTx, w.snap.lastTx))
		if err != nil {
			return nil, fmt.Errorf("bitempo: vacuum %q: %w", t.Name, err)
		}
		out = append(out, r)
	}
	if err := w.Commit(); err != nil {
		return nil, err
	}
	return out, db.Purge(ctx)
}

// vacuum drops table t's records retired at or before horizon h.
func (w *Writer) vacuum(t *Table, h int64) (VacuumResult, error) {
	r := VacuumResult{Table: t.Name}
	s := w.snap
	old, err := s.Horizon(t)
	if err != nil || h <= old {
		return r, err
	}
	r.Horizon = h
	start := time.Now()
	left := map[uint64]bool{} // surrogate keys with a record left
	if err := s.tableVersions(t, layout.CurrentKeys, func(v *Version) error {
		left[v.SK] = true
		return nil
	}); err != nil {
		return r, err
	}
	err = s.tableVersions(t, layout.HistoryKeys, func(v *Version) error {
		if v.TxTo > h {
			left[v.SK] = true
			return nil
		}
		w.del(layout.HistoryKeys.Key(nil, t.ID, v.tuple, v.ValidFrom, v.TxFrom))
		if k, ok, _ := groupEntryKey(t, v); ok && len(t.GroupBy) > 0 {
			w.del(k)
		}
		r.Records++
		return nil
	})
	if err != nil {
		return r, err
	}
	if r.SKEntries, err = w.vacuumSKIndex(t, h, left); err != nil {
		return r, err
	}
	lo, hi := layout.TxLogKeys.Key(nil, t.ID, NegInfinity, 0), layout.TxLogKeys.Key(nil, t.ID, h+1, 0)
	dels, err := s.collectKeys(lo, nil, nil, hi)
	if err != nil {
		return r, err
	}
	for _, k := range dels {
		w.del(k)
	}
	r.LogEntries = len(dels)
	w.set(layout.HorizonKey(t.ID), encoding.AppendTimeAsc(nil, h))
	tp := layout.AppendTablePrefix(nil, layout.History, t.ID)
	w.purge = append(w.purge, prefixSpan(tp), span{lo, hi}, prefixSpan(layout.AppendTablePrefix(nil, layout.SKIndex, t.ID)), prefixSpan(layout.AppendTablePrefix(nil, layout.Groups, t.ID)))
	w.db.opts.Logger.Info("bitempo: vacuum", "table", t.Name, "horizon", h, "records", r.Records, "took", time.Since(start))
	return r, nil
}

// vacuumSKIndex drops the sk-index entries no read at or after horizon h can
// reach: per surrogate key, those older than its newest entry at or before h,
// and every entry of a key with no record left.
func (w *Writer) vacuumSKIndex(t *Table, h int64, left map[uint64]bool) (int, error) {
	pfx := layout.AppendTablePrefix(nil, layout.SKIndex, t.ID)
	it, err := w.snap.newIter(pfx, encoding.PrefixEnd(pfx))
	if err != nil {
		return 0, err
	}
	n := 0
	var cur uint64
	first := true
	keptOld := false // the current sk's newest entry at or before h was kept
	for ok := it.First(); ok; ok = it.Next() {
		sk, txFrom, err := layout.SKIndexKeys.DecodeKey(it.Key()[len(pfx):])
		if err != nil {
			return n, firstError(err, it.Close())
		}
		if first || sk != cur {
			cur, keptOld, first = sk, false, false
		}
		drop := !left[sk]
		if !drop && txFrom <= h { // entries of one sk come newest first
			drop, keptOld = keptOld, true
		}
		if drop {
			w.del(bytes.Clone(it.Key()))
			n++
		}
	}
	return n, firstError(it.Error(), it.Close())
}

// tableVersions calls fn for every record of table t in keyspace keys.
func (s *Snapshot) tableVersions(t *Table, keys layout.RecordCodec, fn func(v *Version) error) error {
	pfx := keys.TablePrefix(nil, t.ID)
	it, err := s.newIter(pfx, encoding.PrefixEnd(pfx))
	if err != nil {
		return err
	}
	for ok := it.First(); ok; ok = it.Next() {
		tuple, from, keyTx, err := keys.Decode(t.splitTuple, it.Key()[len(pfx):])
		if err != nil {
			return firstError(err, it.Close())
		}
		v, err := s.decodeVersion(t, bytes.Clone(tuple), from, keyTx, it.Value())
		if err != nil {
			return firstError(err, it.Close())
		}
		if err := fn(&v); err != nil {
			return firstError(err, it.Close())
		}
	}
	return firstError(it.Error(), it.Close())
}
