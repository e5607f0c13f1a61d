package pebble

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

	"github.com/bitempo/bitempo/engine"
	"github.com/bitempo/bitempo/layout"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/atomicfs"
	"github.com/vmihailenco/msgpack/v5"
)

// This file checks a store's MANIFEST and write-ahead logs before Pebble opens
// it read-write, and recovers a store whose log is damaged when the caller asks
// for it (Options.RecoverWAL). See "Failure model" in the package documentation.

// walDamage is a damaged live write-ahead log found before opening.
type walDamage struct {
	// missing, if set, says which live log is missing (see missingLog);
	// shortened, that the newest log lost synced commits, lost of them (see
	// shortenedLog). The other fields are then unset.
	missing   string
	shortened string
	lost      int
	path      string
	num       uint64
	scan      *logScan
	later     []string // live logs after it, in order
}

// checkFiles runs before Pebble opens an existing store. It refuses, with
// engine.ErrCorrupt and before anything in the directory changes, a store whose
// MANIFEST marker is missing or dangling or whose current MANIFEST is damaged
// (Pebble would open the readable prefix and delete every table file the rest
// names). It returns the first damaged live write-ahead log, if any, for the
// caller to refuse or recover.
func checkFiles(fsys vfs.FS, dir string, names []string, readOnlyOpen func(vfs.FS) error) (*walDamage, error) {
	current, err := atomicfs.ReadMarker(fsys, dir, "manifest")
	if err != nil {
		return nil, fmt.Errorf("%w: %s: manifest marker: %v", engine.ErrCorrupt, dir, err)
	}
	hasManifest := slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, "MANIFEST-") })
	switch {
	case current == "" && hasManifest:
		return nil, fmt.Errorf("%w: %s: the marker file naming the current MANIFEST (marker.manifest.*) is missing", engine.ErrCorrupt, dir)
	case current == "":
		return nil, nil // CURRENT-era or empty: Pebble decides
	case !slices.Contains(names, current):
		return nil, fmt.Errorf("%w: %s: the current MANIFEST %s is missing", engine.ErrCorrupt, dir, current)
	}
	path := fsys.PathJoin(dir, current)
	var edits manifestLogs
	s, err := scanLog(fsys, path, 0, edits.add)
	if err != nil {
		return nil, fmt.Errorf("%w: read %s: %v", engine.ErrIO, path, err)
	}
	if s.damaged(true) {
		return nil, fmt.Errorf("%w: %s is damaged at offset %d (of %d bytes); the store was not opened and nothing was changed", engine.ErrCorrupt, path, s.damageAt, s.size)
	}
	short, lost, err := shortenedLog(fsys, dir, names, &edits)
	if err != nil {
		return nil, fmt.Errorf("%w: read %s: %v", engine.ErrIO, dir, err)
	}
	if missing := missingLog(names, &edits); missing != "" {
		if lost > 0 {
			missing += fmt.Sprintf("; %d synced, acknowledged commit(s) in it are lost (%s)", lost, watermarkFile)
		}
		return &walDamage{missing: missing, lost: lost}, nil
	}
	if short != "" {
		return &walDamage{shortened: short, lost: lost}, nil
	}

	logs := logFiles(names)
	wm, hasWM := readWatermark(fsys, dir)
	var damaged []*walDamage
	for i, l := range logs {
		p := fsys.PathJoin(dir, l.name)
		s, err := scanLog(fsys, p, uint32(l.num), nil)
		if err != nil {
			return nil, fmt.Errorf("%w: read %s: %v", engine.ErrIO, p, err)
		}
		// Only the newest log can have a torn tail: an older one was closed,
		// with an end-of-log trailer, before the next was started. In the
		// newest log, unreadable bytes past what the watermark says was
		// synced are a torn tail whatever follows them: after a power loss
		// the unsynced pages of a file may survive in any order.
		newest := i == len(logs)-1
		if newest && hasWM && wm.LogNum == l.num && s.damageAt >= 0 && uint64(s.damageAt) >= wm.Synced {
			continue
		}
		if s.damaged(false) || (s.damageAt >= 0 && !newest) {
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
func recoverWAL(fsys vfs.FS, dir string, d *walDamage) (*engine.Recovery, error) {
	saved := fsys.PathJoin(dir, "lost-wal-"+time.Now().UTC().Format("20060102T150405Z"))
	if err := fsys.MkdirAll(saved, 0o755); err != nil {
		return nil, fmt.Errorf("%w: recover: %v", engine.ErrIO, err)
	}
	r := &engine.Recovery{File: d.path, Offset: int64(d.scan.damageAt), SavedTo: saved, Unreadable: true}
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
			return nil, fmt.Errorf("%w: recover: read %s: %v", engine.ErrIO, p, err)
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
			return nil, fmt.Errorf("%w: recover: move %s aside: %v", engine.ErrIO, p, err)
		}
	}
	f, err := fsys.Create(d.path, vfs.WriteCategoryUnspecified)
	if err == nil {
		_, err = f.Write(prefix)
		err = errors.Join(err, f.Sync(), f.Close())
	}
	if err != nil {
		return nil, fmt.Errorf("%w: recover: write %s: %v", engine.ErrIO, d.path, err)
	}
	return r, nil
}

func readPrefix(fsys vfs.FS, path string, n int) ([]byte, error) {
	f, err := fsys.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: recover: %v", engine.ErrIO, err)
	}
	defer f.Close()
	b := make([]byte, n)
	if _, err := io.ReadFull(f, b); err != nil {
		return nil, fmt.Errorf("%w: recover: %v", engine.ErrIO, err)
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
		if bytes.Equal(key, layout.MetaLastTx) {
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
func checkBeforeOpen(fsys vfs.FS, dir string, popts *pebble.Options, opts Options) (*engine.Recovery, error) {
	names, err := fsys.List(dir)
	if err != nil {
		return nil, fmt.Errorf("%w: read %s: %v", engine.ErrIO, dir, err)
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
	if d.shortened != "" {
		if !opts.RecoverWAL {
			return nil, fmt.Errorf("%w: %w: %s: %s; the store was not opened and nothing was changed "+
				"(restore the log if you can; open it with RecoverWAL, or run bitempo recover, to accept the loss and open what is left)",
				engine.ErrCorrupt, engine.ErrDamagedWAL, dir, d.shortened)
		}
		if opts.ReadOnly {
			return nil, fmt.Errorf("%w: %w: %s: %s; accepting the loss writes, so it needs a read-write open", engine.ErrCorrupt, engine.ErrDamagedWAL, dir, d.shortened)
		}
		if err := dropWatermark(fsys, dir); err != nil {
			return nil, err
		}
		return &engine.Recovery{Shortened: d.shortened, LostCommits: d.lost, Unreadable: true}, nil
	}
	if opts.RecoverWAL && !opts.ReadOnly {
		// The recovered store has fewer commits than the watermark claims.
		if err := dropWatermark(fsys, dir); err != nil {
			return nil, err
		}
	}
	if d.missing != "" {
		if !opts.RecoverWAL {
			return nil, fmt.Errorf("%w: %w: %s: %s, so acknowledged commits would be lost; "+
				"the store was not opened and nothing was changed (restore the log if you can; open it with RecoverWAL, or run bitempo recover, to keep what the table files hold)",
				engine.ErrCorrupt, engine.ErrDamagedWAL, dir, d.missing)
		}
		// Nothing to move aside or rewrite: Pebble opens what is there.
		return &engine.Recovery{Missing: d.missing, LostCommits: d.lost, Unreadable: true}, nil
	}
	lost := len(d.scan.lost)
	if !opts.RecoverWAL {
		return nil, fmt.Errorf("%w: %w: %s is damaged at offset %d, with %d readable commit(s) after the damage and %d later log file(s); "+
			"the store was not opened and nothing was changed (open it with RecoverWAL, or run bitempo recover, to keep the transactions before the damage)",
			engine.ErrCorrupt, engine.ErrDamagedWAL, d.path, d.scan.damageAt, lost, len(d.later))
	}
	if opts.ReadOnly {
		return nil, fmt.Errorf("%w: write-ahead log %s is damaged; recovering it writes, so it needs a read-write open", engine.ErrCorrupt, d.path)
	}
	return recoverWAL(fsys, dir, d)
}
