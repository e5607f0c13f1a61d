package pebble

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/bitempo/bitempo/engine"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// This file keeps the store's synced watermark: a small file beside the
// write-ahead logs saying how much of the newest log was synced when a synced
// commit was acknowledged (the log's number, the bytes synced, the records in
// them). A log shorter than that on the next Open lost acknowledged commits:
// truncated, emptied or deleted by something other than a crash, which never
// takes back synced bytes. The log itself cannot tell: a log cut at a record
// boundary reads exactly like one whose unsynced tail a crash lost.
//
// The watermark is a file outside the log, rewritten in place (no fsync) after
// every synced commit and fsynced on Close and every watermarkSyncEvery synced
// commits. It never claims more than the log holds durably, since each value
// is written only after the sync it describes returned: after a power loss
// the file holds an older value or the newest, both true. Pebble's
// FormatWALSyncChunks cannot replace it: it reads a log cut short as a clean
// end (docs/design/wal-synced-watermark.md).

// watermarkFile is the name of the synced watermark in the store's directory.
const watermarkFile = "BITEMPO-WAL-SYNCED"

// watermarkSyncEvery is how many synced commits may update the watermark
// without an fsync of it; Close always syncs it.
const watermarkSyncEvery = 64

// watermarkSize is the length of the watermark: magic, log number, synced
// bytes, records, CRC-32C of the rest.
const watermarkSize = 4 + 8 + 8 + 8 + 4

var watermarkMagic = [4]byte{'b', 't', 'w', '1'}

// watermark says that the first Synced bytes of log LogNum were synced and
// hold Records complete records (commits; every Pebble batch is one record).
type watermark struct {
	LogNum  uint64
	Synced  uint64
	Records uint64
}

func (w watermark) encode() []byte {
	b := make([]byte, 0, watermarkSize)
	b = append(b, watermarkMagic[:]...)
	b = binary.LittleEndian.AppendUint64(b, w.LogNum)
	b = binary.LittleEndian.AppendUint64(b, w.Synced)
	b = binary.LittleEndian.AppendUint64(b, w.Records)
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// decodeWatermark reads a watermark; ok is false for anything else (a torn
// write of it, another file): no watermark, no claim.
func decodeWatermark(b []byte) (w watermark, ok bool) {
	if len(b) != watermarkSize || [4]byte(b[:4]) != watermarkMagic ||
		crc32.Checksum(b[:watermarkSize-4], castagnoli) != binary.LittleEndian.Uint32(b[watermarkSize-4:]) {
		return w, false
	}
	return watermark{
		LogNum:  binary.LittleEndian.Uint64(b[4:]),
		Synced:  binary.LittleEndian.Uint64(b[12:]),
		Records: binary.LittleEndian.Uint64(b[20:]),
	}, true
}

// readWatermark reads the store's watermark, if it has a valid one.
func readWatermark(fsys vfs.FS, dir string) (watermark, bool) {
	f, err := fsys.Open(fsys.PathJoin(dir, watermarkFile))
	if err != nil {
		return watermark{}, false
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, watermarkSize+1))
	if err != nil {
		return watermark{}, false
	}
	return decodeWatermark(b)
}

// walWatch follows the write-ahead log Pebble writes (through walFile) and
// writes the watermark. One exists per engine, from Open to Close, across the
// reopens of a purge (purge.go).
type walWatch struct {
	fsys   vfs.FS
	dir    string
	logger *slog.Logger

	mu       sync.Mutex
	cur      *walFile  // the newest log, nil before Pebble creates one
	synced   watermark // the newest log's synced state
	written  watermark // the last value written to the file
	file     vfs.File  // the watermark file, open for writing
	unsynced int       // watermark writes since the last fsync of it
	failed   bool      // a write of the watermark failed: it is no longer kept
}

// track starts following a newly created write-ahead log, the newest.
func (w *walWatch) track(name string) *walFile {
	num, ok := parseLogName(w.fsys.PathBase(name))
	if !ok {
		return nil
	}
	wf := &walFile{w: w, num: num}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.cur = wf
	w.synced = watermark{LogNum: num}
	// Said at once, and synced, before Pebble writes to the log: from now on
	// unreadable bytes in this log, the newest, are a torn tail unless a
	// later watermark says they were synced.
	w.writeLocked(true)
	return wf
}

// noteSync records that wf's first n bytes, holding records records, are synced.
func (w *walWatch) noteSync(wf *walFile, n, records uint64) {
	w.mu.Lock()
	if w.cur == wf && n >= w.synced.Synced {
		w.synced = watermark{LogNum: wf.num, Synced: n, Records: records}
	}
	w.mu.Unlock()
}

// persist writes the newest log's synced state to the watermark file, after a
// synced commit (sync false) or at Close (sync true).
func (w *walWatch) persist(sync bool) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writeLocked(sync)
}

// writeLocked writes w.synced to the watermark file if it changed, and fsyncs
// it when sync is set, when the log changed since the last write, or every
// watermarkSyncEvery writes. A failure stops the watermark from being kept:
// the file is removed, so that it claims nothing stale, and the failure logged
// (the commit it follows is durable whatever happens here: detection is lost,
// never data).
func (w *walWatch) writeLocked(sync bool) {
	if w.failed || w.synced == w.written {
		return
	}
	if w.file == nil {
		f, err := w.fsys.Create(w.fsys.PathJoin(w.dir, watermarkFile), vfs.WriteCategoryUnspecified)
		if err != nil {
			w.fail(err)
			return
		}
		w.file = f
		sync = true
	}
	if w.synced.LogNum != w.written.LogNum || w.unsynced+1 >= watermarkSyncEvery {
		sync = true
	}
	if _, err := w.file.WriteAt(w.synced.encode(), 0); err != nil {
		w.fail(err)
		return
	}
	w.unsynced++
	if sync {
		if err := w.file.Sync(); err != nil {
			w.fail(err)
			return
		}
		w.unsynced = 0
	}
	w.written = w.synced
}

func (w *walWatch) fail(err error) {
	w.failed = true
	if w.file != nil {
		_ = w.file.Close()
		w.file = nil
	}
	_ = w.fsys.Remove(w.fsys.PathJoin(w.dir, watermarkFile))
	w.logger.Error("bitempo: the synced watermark is no longer kept: a write-ahead log cut short will not be detected until the store is reopened",
		"component", "bitempo", "file", watermarkFile, "error", oneLine(err.Error()))
}

// close syncs the final state (Pebble's Close synced the log) and closes the file.
func (w *walWatch) close() {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writeLocked(true)
	if w.file != nil {
		_ = w.file.Close()
		w.file = nil
	}
}

// abandon closes the watermark file without writing it: Pebble did not close
// cleanly, so what it last synced is not known beyond what the file says.
func (w *walWatch) abandon() {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.file != nil {
		_ = w.file.Close()
		w.file = nil
	}
}

// walFile is the watermark's view of a write-ahead log as Pebble writes it
// (through stopFile, fence.go): it counts the bytes and the complete records
// written, and reports each successful sync to its walWatch. Pebble's log
// writer appends whole chunks and pads blocks with zeros; the count follows
// the chunk headers as they pass (logscan.go has the format), carrying a
// header split across writes.
type walFile struct {
	w   *walWatch
	num uint64

	mu   sync.Mutex
	off  uint64 // bytes written
	skip uint64 // bytes of the current chunk's payload or padding still to pass
	hdr  []byte // a chunk header split across writes
	// records counts the records whose last chunk has begun; end and prevEnd
	// are where the last two of them end.
	records      uint64
	end, prevEnd uint64
}

// count follows the chunks in p, written at f.off.
func (f *walFile) count(p []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for len(p) > 0 {
		if f.skip > 0 {
			n := min(f.skip, uint64(len(p)))
			f.skip -= n
			f.off += n
			p = p[n:]
			continue
		}
		room := logBlockSize - f.off%logBlockSize
		if len(f.hdr) == 0 && room < recyclHeader {
			f.skip = room // the zero padding at a block's end
			continue
		}
		need := recyclHeader - len(f.hdr)
		n := min(need, len(p))
		f.hdr = append(f.hdr, p[:n]...)
		f.off += uint64(n)
		p = p[n:]
		if len(f.hdr) < recyclHeader {
			return
		}
		h := f.hdr
		f.hdr = f.hdr[:0]
		rest := logBlockSize - f.off%logBlockSize
		if f.off%logBlockSize == 0 {
			rest = 0
		}
		enc := h[6]
		switch {
		case enc == 0: // zeros: the rest of the block is padding
			f.skip = rest
			continue
		case enc < 5 || enc > 8 || uint64(binary.LittleEndian.Uint32(h[7:])) != f.num&0xffffffff:
			// Not a recyclable chunk of this log (the end-of-log trailer
			// carries the next log's number): nothing after it is counted.
			f.skip = 1 << 62
			continue
		}
		f.skip = uint64(binary.LittleEndian.Uint16(h[4:]))
		if pos := enc - 4; pos == 1 || pos == 4 {
			f.records++
			f.prevEnd, f.end = f.end, f.off+f.skip
		}
	}
}

// synced reports the records wholly written before a sync that succeeded.
func (f *walFile) synced() {
	f.mu.Lock()
	records, end := f.records, f.end
	if end > f.off { // the last record is not wholly written yet
		records, end = records-1, f.prevEnd
	}
	f.mu.Unlock()
	f.w.noteSync(f, end, records)
}

// parseLogName returns the number of a write-ahead log's file name.
func parseLogName(base string) (uint64, bool) {
	s, ok := strings.CutSuffix(base, ".log")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseUint(s, 10, 64)
	return n, err == nil
}

// shortenedLog compares the watermark with the logs in the directory before
// Pebble opens it, and describes acknowledged commits known to be lost: the
// watermark's log is live (numbered at least the MANIFEST's oldest unflushed
// log) but missing, or holds fewer complete records than were synced. It
// returns "" when nothing is known lost, or when there is no valid watermark.
func shortenedLog(fsys vfs.FS, dir string, names []string, m *manifestLogs) (msg string, lost int, err error) {
	wm, ok := readWatermark(fsys, dir)
	if !ok || wm.Records == 0 || m.unknown || wm.LogNum < m.min {
		return "", 0, nil
	}
	name := fmt.Sprintf("%06d.log", wm.LogNum)
	path := fsys.PathJoin(dir, name)
	if !containsName(names, name) {
		return fmt.Sprintf("the live write-ahead log %s is missing: %d synced, acknowledged commit(s) in it are lost (%s says %d bytes of it were synced)",
			path, wm.Records, watermarkFile, wm.Synced), int(wm.Records), nil
	}
	s, err := scanLog(fsys, path, uint32(wm.LogNum), nil)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", 0, nil
		}
		return "", 0, err
	}
	if uint64(s.records) >= wm.Records || s.damaged(false) {
		return "", 0, nil // intact, or damaged in the middle, which checkFiles reports
	}
	return fmt.Sprintf("the write-ahead log %s holds %d readable commit(s) in %d bytes, but %d commit(s) in %d bytes were synced and acknowledged (%s): %d acknowledged commit(s) are lost",
		path, s.records, s.size, wm.Records, wm.Synced, watermarkFile, wm.Records-uint64(s.records)), int(wm.Records) - s.records, nil
}

func containsName(names []string, name string) bool {
	for _, n := range names {
		if n == name {
			return true
		}
	}
	return false
}

// dropWatermark removes the watermark of a store whose loss of commits was
// accepted (Options.RecoverWAL): it describes a log that no longer holds them.
func dropWatermark(fsys vfs.FS, dir string) error {
	err := fsys.Remove(fsys.PathJoin(dir, watermarkFile))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%w: recover: remove %s: %v", engine.ErrIO, watermarkFile, err)
	}
	return nil
}
