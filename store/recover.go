package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/atomicfs"
	"github.com/vmihailenco/msgpack/v5"
)

// This file checks a store's MANIFEST and write-ahead logs before Pebble opens
// it read-write, and recovers a store whose log is damaged when the caller asks
// for it (Options.RecoverWAL). See "Failure model" in the package documentation.

// Recovery describes what Open with Options.RecoverWAL dropped from a damaged
// write-ahead log. Transactions are the store's commits, in commit order; those
// after the damage are dropped too, so that the store holds a prefix of its
// history and never a transaction whose predecessor is missing.
type Recovery struct {
	// Missing, if set, says that a live log was missing (deleted) rather than
	// damaged: the store opened with what its table files hold, nothing was
	// moved, File, Offset, SavedTo and LostTxs are unset, and Unreadable is set
	// (the missing log's commits cannot be counted).
	Missing string
	// File is the damaged log and Offset where its damage begins.
	File   string
	Offset int64
	// SavedTo is the directory the original log files were moved to, untouched.
	SavedTo string
	// KeptLastTx is the transaction time of the newest transaction that survived.
	KeptLastTx int64
	// LostTxs are the transaction times of the dropped transactions that could
	// still be read after the damage, ascending.
	LostTxs []int64
	// LostCommits counts the dropped commits that could be read (transactions,
	// and table or attribute declarations, which carry no transaction time).
	LostCommits int
	// Unreadable is set when part of the log could not be read at all, so that
	// more transactions than LostTxs may have been lost: those between
	// KeptLastTx and the first of LostTxs.
	Unreadable bool
}

func (r *Recovery) String() string {
	var b strings.Builder
	if r.Missing != "" {
		fmt.Fprintf(&b, "%s; kept every transaction through tx %d that the table files hold; the commits in the missing log are lost and cannot be listed", r.Missing, r.KeptLastTx)
		return b.String()
	}
	fmt.Fprintf(&b, "write-ahead log %s is damaged at offset %d; kept every transaction through tx %d", r.File, r.Offset, r.KeptLastTx)
	fmt.Fprintf(&b, "; dropped %d readable commit(s)", r.LostCommits)
	if len(r.LostTxs) > 0 {
		fmt.Fprintf(&b, " with transaction times %d..%d (%d transactions)", r.LostTxs[0], r.LostTxs[len(r.LostTxs)-1], len(r.LostTxs))
	}
	if r.Unreadable {
		b.WriteString(" and the unreadable commit(s) at the damage")
		if len(r.LostTxs) > 0 {
			fmt.Fprintf(&b, " (transaction times between %d and %d)", r.KeptLastTx, r.LostTxs[0])
		}
	}
	fmt.Fprintf(&b, "; the original log files are in %s", r.SavedTo)
	return b.String()
}

// walDamage is a damaged live write-ahead log found before opening.
type walDamage struct {
	// missing, if set, says which live log is missing (see missingLog); the
	// other fields are then unset.
	missing string
	path    string
	num     uint64
	scan    *logScan
	later   []string // live logs after it, in order
}

// checkFiles runs before Pebble opens an existing store. It refuses, with
// ErrCorrupt and before anything in the directory changes, a store whose
// MANIFEST marker is missing or dangling or whose current MANIFEST is damaged
// (Pebble would open the readable prefix and delete every table file the rest
// names). It returns the first damaged live write-ahead log, if any, for the
// caller to refuse or recover.
func checkFiles(fsys vfs.FS, dir string, names []string, readOnlyOpen func(vfs.FS) error) (*walDamage, error) {
	current, err := atomicfs.ReadMarker(fsys, dir, "manifest")
	if err != nil {
		return nil, fmt.Errorf("%w: %s: manifest marker: %v", ErrCorrupt, dir, err)
	}
	hasManifest := slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, "MANIFEST-") })
	switch {
	case current == "" && hasManifest:
		return nil, fmt.Errorf("%w: %s: the marker file naming the current MANIFEST (marker.manifest.*) is missing", ErrCorrupt, dir)
	case current == "":
		return nil, nil // CURRENT-era or empty: Pebble decides
	case !slices.Contains(names, current):
		return nil, fmt.Errorf("%w: %s: the current MANIFEST %s is missing", ErrCorrupt, dir, current)
	}
	path := fsys.PathJoin(dir, current)
	var edits manifestLogs
	s, err := scanLog(fsys, path, 0, edits.add)
	if err != nil {
		return nil, fmt.Errorf("%w: read %s: %v", ErrIO, path, err)
	}
	if s.damaged(true) {
		return nil, fmt.Errorf("%w: %s is damaged at offset %d (of %d bytes); the store was not opened and nothing was changed", ErrCorrupt, path, s.damageAt, s.size)
	}
	if missing := missingLog(names, &edits); missing != "" {
		return &walDamage{missing: missing}, nil
	}

	logs := logFiles(names)
	var damaged []*walDamage
	for i, l := range logs {
		p := fsys.PathJoin(dir, l.name)
		s, err := scanLog(fsys, p, uint32(l.num), nil)
		if err != nil {
			return nil, fmt.Errorf("%w: read %s: %v", ErrIO, p, err)
		}
		// Only the newest log can have a torn tail: an older one was closed,
		// with an end-of-log trailer, before the next was started.
		if s.damaged(false) || (s.damageAt >= 0 && i < len(logs)-1) {
			damaged = append(damaged, &walDamage{path: p, num: l.num, scan: s})
		}
	}
	if len(damaged) == 0 {
		return nil, nil
	}
	// Damage matters only in a live log, one Pebble replays. Which are live is
	// in the MANIFEST (the oldest unflushed log); a read-only open, which writes
	// nothing, reveals it: Pebble reads exactly the live logs.
	opened, err := liveLogs(fsys, readOnlyOpen)
	if err != nil {
		return nil, err
	}
	for _, d := range damaged {
		if !opened(d.num) {
			continue
		}
		for _, l := range logs {
			if l.num > d.num {
				d.later = append(d.later, fsys.PathJoin(dir, l.name))
			}
		}
		return d, nil
	}
	return nil, nil
}

type logFile struct {
	name string
	num  uint64
}

// logFiles returns the write-ahead logs among names, in number order.
func logFiles(names []string) []logFile {
	var out []logFile
	for _, n := range names {
		base, ok := strings.CutSuffix(n, ".log")
		if !ok {
			continue
		}
		if num, err := strconv.ParseUint(base, 10, 64); err == nil {
			out = append(out, logFile{n, num})
		}
	}
	slices.SortFunc(out, func(a, b logFile) int { return int(a.num) - int(b.num) })
	return out
}

// liveLogs opens the store read-only on a file system that records which logs
// Pebble reads, and returns a test for a log number being live: the oldest
// log Pebble read and every later one are.
func liveLogs(fsys vfs.FS, readOnlyOpen func(vfs.FS) error) (func(uint64) bool, error) {
	rec := &recordingFS{FS: fsys}
	// The open fails when the damaged log is not the newest (Pebble then knows a
	// log must read to its end); by then it has read it, which is all we need.
	_ = readOnlyOpen(rec)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.logs) == 0 {
		return func(uint64) bool { return false }, nil
	}
	oldest := slices.Min(rec.logs)
	return func(n uint64) bool { return n >= oldest }, nil
}

// recordingFS records the write-ahead logs opened through it.
type recordingFS struct {
	vfs.FS
	mu   sync.Mutex
	logs []uint64
}

func (r *recordingFS) Open(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	if base, ok := strings.CutSuffix(r.PathBase(name), ".log"); ok {
		if n, err := strconv.ParseUint(base, 10, 64); err == nil {
			r.mu.Lock()
			r.logs = append(r.logs, n)
			r.mu.Unlock()
		}
	}
	return r.FS.Open(name, opts...)
}

// recoverWAL moves the damaged log and every later live log into a new
// directory of the store, writes back the damaged log's readable prefix, and
// reports what was dropped. KeptLastTx is filled in after the store opens.
func recoverWAL(fsys vfs.FS, dir string, d *walDamage) (*Recovery, error) {
	saved := fsys.PathJoin(dir, "lost-wal-"+time.Now().UTC().Format("20060102T150405Z"))
	if err := fsys.MkdirAll(saved, 0o755); err != nil {
		return nil, fmt.Errorf("%w: recover: %v", ErrIO, err)
	}
	r := &Recovery{File: d.path, Offset: int64(d.scan.damageAt), SavedTo: saved, Unreadable: true}
	note := func(rec []byte) {
		r.LostCommits++
		if tx, ok := batchLastTx(rec); ok {
			r.LostTxs = append(r.LostTxs, tx)
		}
	}
	for _, rec := range d.scan.lost {
		note(rec)
	}
	for _, p := range d.later {
		s, err := scanLog(fsys, p, uint32(logNumber(fsys.PathBase(p))), note)
		if err != nil {
			return nil, fmt.Errorf("%w: recover: read %s: %v", ErrIO, p, err)
		}
		for _, rec := range s.lost {
			note(rec)
		}
	}
	slices.Sort(r.LostTxs)

	prefix, err := readPrefix(fsys, d.path, d.scan.goodEnd)
	if err != nil {
		return nil, err
	}
	for _, p := range append([]string{d.path}, d.later...) {
		if err := fsys.Rename(p, fsys.PathJoin(saved, fsys.PathBase(p))); err != nil {
			return nil, fmt.Errorf("%w: recover: move %s aside: %v", ErrIO, p, err)
		}
	}
	f, err := fsys.Create(d.path, vfs.WriteCategoryUnspecified)
	if err == nil {
		_, err = f.Write(prefix)
		err = errors.Join(err, f.Sync(), f.Close())
	}
	if err != nil {
		return nil, fmt.Errorf("%w: recover: write %s: %v", ErrIO, d.path, err)
	}
	return r, nil
}

func readPrefix(fsys vfs.FS, path string, n int) ([]byte, error) {
	f, err := fsys.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: recover: %v", ErrIO, err)
	}
	defer f.Close()
	b := make([]byte, n)
	if _, err := io.ReadFull(f, b); err != nil {
		return nil, fmt.Errorf("%w: recover: %v", ErrIO, err)
	}
	return b, nil
}

func logNumber(name string) uint64 {
	n, _ := strconv.ParseUint(strings.TrimSuffix(name, ".log"), 10, 64)
	return n
}

// batchLastTx returns the meta last_tx a WAL record (a Pebble batch) sets, if
// any: every bitempo transaction writes it. A batch is a 12-byte header
// (sequence number, count) and entries of a kind byte, a varint-prefixed key
// and, for a set, a varint-prefixed value; bitempo writes only sets and deletes.
func batchLastTx(rec []byte) (int64, bool) {
	if len(rec) < 12 {
		return 0, false
	}
	b := rec[12:]
	for len(b) > 0 {
		kind := pebble.InternalKeyKind(b[0])
		b = b[1:]
		key, rest, ok := varBytes(b)
		if !ok {
			return 0, false
		}
		b = rest
		switch kind {
		case pebble.InternalKeyKindDelete:
			continue
		case pebble.InternalKeyKindSet:
		default:
			return 0, false
		}
		value, rest, ok := varBytes(b)
		if !ok {
			return 0, false
		}
		b = rest
		if bytes.Equal(key, metaLastTx) {
			var tx int64
			if msgpack.Unmarshal(value, &tx) == nil {
				return tx, true
			}
		}
	}
	return 0, false
}

func varBytes(b []byte) (v, rest []byte, ok bool) {
	n, k := binary.Uvarint(b)
	if k <= 0 || uint64(len(b)-k) < n {
		return nil, nil, false
	}
	return b[k : k+int(n)], b[k+int(n):], true
}

// checkBeforeOpen runs checkFiles on an existing store and refuses a damaged
// live write-ahead log, or recovers it when opts.RecoverWAL is set.
func checkBeforeOpen(fsys vfs.FS, dir string, popts *pebble.Options, opts Options) (*Recovery, error) {
	names, err := fsys.List(dir)
	if err != nil {
		return nil, fmt.Errorf("%w: read %s: %v", ErrIO, dir, err)
	}
	d, err := checkFiles(fsys, dir, names, func(rfs vfs.FS) error {
		probe := &health{logger: slog.New(slog.DiscardHandler)}
		ro := popts.Clone()
		ro.FS, ro.ReadOnly = rfs, true
		ro.Logger = slogLogger{probe.logger, probe}
		ro.EventListener = &pebble.EventListener{DataCorruption: probe.noteCorruption}
		ro.EnsureDefaults()
		return probe.guard(func() error {
			pdb, err := pebble.Open(dir, ro)
			if err != nil {
				return err
			}
			return pdb.Close()
		})
	})
	if err != nil || d == nil {
		return nil, err
	}
	if d.missing != "" {
		if !opts.RecoverWAL {
			return nil, fmt.Errorf("%w: %w: %s: %s, so acknowledged commits would be lost; "+
				"the store was not opened and nothing was changed (restore the log if you can; open it with RecoverWAL, or run bitempo recover, to keep what the table files hold)",
				ErrCorrupt, ErrDamagedWAL, dir, d.missing)
		}
		// Nothing to move aside or rewrite: Pebble opens what is there.
		return &Recovery{Missing: d.missing, Unreadable: true}, nil
	}
	lost := len(d.scan.lost)
	if !opts.RecoverWAL {
		return nil, fmt.Errorf("%w: %w: %s is damaged at offset %d, with %d readable commit(s) after the damage and %d later log file(s); "+
			"the store was not opened and nothing was changed (open it with RecoverWAL, or run bitempo recover, to keep the transactions before the damage)",
			ErrCorrupt, ErrDamagedWAL, d.path, d.scan.damageAt, lost, len(d.later))
	}
	if opts.ReadOnly {
		return nil, fmt.Errorf("%w: write-ahead log %s is damaged; recovering it writes, so it needs a read-write open", ErrCorrupt, d.path)
	}
	return recoverWAL(fsys, dir, d)
}
