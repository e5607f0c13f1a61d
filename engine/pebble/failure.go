package pebble

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/bitempo/bitempo/engine"
	"github.com/bitempo/bitempo/internal/callstack"
	"github.com/bitempo/bitempo/layout"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// This file is how the store fails: what it does when Pebble reports on-disk
// corruption or an unrecoverable error, on a caller's goroutine or on one of
// Pebble's background goroutines. The rule is that no panic reaches a caller and
// no background goroutine ends the process; the DB instead remembers the first
// failure and refuses every later read and write with a typed error until it is
// reopened. See "Failure model" in the package documentation.

// health is the failure state of one open store, shared by the engine, Pebble's
// event listener and Pebble's logger (which exist before the engine does: Pebble
// may report corruption while it opens).
type health struct {
	logger  *slog.Logger
	failed  atomic.Pointer[string]     // the first fatal error Pebble reported
	corrupt atomic.Pointer[corruption] // the first corruption Pebble reported
	limiter logLimiter                 // rate-limits Pebble's error lines
	// bgFail is the newest failure of a flush or compaction, nil again once a
	// flush succeeds; stuck is set when a commit gave up waiting behind it.
	bgFail atomic.Pointer[bgFailure]
	stuck  atomic.Pointer[string]
	// opening is set while Pebble's Open runs (fence.go, stoppedWriting).
	opening atomic.Bool
}

// bgFailure is a failed flush or compaction.
type bgFailure struct {
	at  time.Time
	msg string
}

// corruption is one on-disk corruption: the damaged file and what is wrong with it.
type corruption struct {
	path, detail string
}

// stopped reports whether the store has failed or met a corruption: from then
// on it changes nothing in its directory (fence.go).
func (h *health) stopped() bool { return h.failed.Load() != nil || h.corrupt.Load() != nil }

// err returns the error every call of a failed store returns, or nil while the
// store is healthy. Corruption takes precedence: it says which file to look at.
func (h *health) err() error {
	if c := h.corrupt.Load(); c != nil {
		return fmt.Errorf("%w: %s: %s; the store refuses reads and writes until it is reopened", engine.ErrCorrupt, c.path, c.detail)
	}
	if msg := h.failed.Load(); msg != nil {
		return fmt.Errorf("%w: %s", engine.ErrFailed, *msg)
	}
	if msg := h.stuck.Load(); msg != nil {
		return fmt.Errorf("%w: %s", engine.ErrIO, *msg)
	}
	return nil
}

// noteBackground records a failed flush or compaction (Pebble retries them) and
// logs it, rate-limited.
func (h *health) noteBackground(what string, err error) {
	f := &bgFailure{at: time.Now(), msg: what + ": " + oneLine(err.Error())}
	h.bgFail.Store(f)
	if n, ok := h.limiter.allow(); ok {
		h.logger.Error("bitempo: "+f.msg, "component", "pebble", "suppressed", n)
	}
}

// listener returns the Pebble event listener of a store with health h.
func (h *health) listener() *pebble.EventListener {
	return &pebble.EventListener{
		DataCorruption: h.noteCorruption,
		BackgroundError: func(err error) {
			h.noteBackground("background error", err)
			// Pebble v2.1.7 reschedules a failed compaction at once, with no
			// backoff: a compaction that keeps failing (a failed store's
			// refused output files, a full disk) would spin, each failure
			// formatted and reported, until Close. The pause bounds it at
			// about 50 retries a second.
			time.Sleep(failedPause)
		},
		FlushEnd: func(info pebble.FlushInfo) {
			// A flush whose keys all cancelled out writes no table and reports
			// "pebble: empty table", which is no failure. Pebble does not
			// export that error; its own tests match it by message too.
			if info.Err != nil && !strings.Contains(info.Err.Error(), "pebble: empty table") {
				h.noteBackground("flush", info.Err)
			} else {
				h.bgFail.Store(nil)
			}
		},
		CompactionEnd: func(info pebble.CompactionInfo) {
			if info.Err != nil {
				h.noteBackground("compaction", info.Err)
			}
		},
	}
}

// stallPoll is how often a waiting commit checks whether it can make progress.
const stallPoll = 100 * time.Millisecond

// await waits for a commit running on another goroutine. A commit waits inside
// Pebble when the memtables are full until a flush makes room; with no space
// left on the device every flush fails, Pebble retries for ever and the commit
// would wait for ever. So once the commit has waited timeout while flushes or
// compactions keep failing, await gives up: the store refuses every later call
// with engine.ErrIO, and fenceFS stops it from creating files, so the flush the commit
// waits for never finishes and the commit never lands. A commit waiting behind
// flushes that make progress, however slowly, waits on.
func (h *health) await(done <-chan error, timeout time.Duration) error {
	select {
	case err := <-done:
		return err
	default:
	}
	start := time.Now()
	tick := time.NewTicker(stallPoll)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			return err
		case <-tick.C:
			f := h.bgFail.Load()
			if timeout <= 0 || f == nil || time.Since(start) < timeout {
				continue
			}
			msg := fmt.Sprintf("a commit made no progress for %s while the store's background writes failed (%s); "+
				"it did not commit, and the store stopped writing: free space, then restart the process to reopen it", time.Since(start).Round(time.Millisecond), f.msg)
			h.stuck.CompareAndSwap(nil, &msg)
			h.logger.Error("bitempo: "+msg, "component", "bitempo")
			return h.err()
		}
	}
}

// noteCorruption is Pebble's EventListener.DataCorruption handler. Pebble's
// default handler calls Logger.Fatalf, which on a read path panicked the caller
// and on the background table-stats goroutine ended the process. Pebble calls it
// synchronously on the reading goroutine and then returns the corruption error to
// the read, so recording it is all there is to do here.
func (h *health) noteCorruption(info pebble.DataCorruptionInfo) {
	c := &corruption{path: info.Path, detail: oneLine(fmt.Sprint(info.Details))}
	if h.corrupt.CompareAndSwap(nil, c) {
		h.logger.Error("bitempo: on-disk corruption: the store refuses reads and writes until it is reopened",
			"file", c.path, "detail", c.detail)
	}
}

// fail records a fatal error reported by Pebble.
func (h *health) fail(msg string) {
	m := oneLine(msg)
	h.failed.CompareAndSwap(nil, &m)
}

// readErr turns an error of a Pebble read into the store's terms: a corruption
// error (Pebble marks them, and carries the damaged file's path) wraps engine.ErrCorrupt
// and names the file.
func (h *health) readErr(err error) error {
	if err == nil || wrapped(err) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if pebble.IsCorruptionError(err) {
		path := "a store file"
		if info := pebble.ExtractDataCorruptionInfo(err); info != nil {
			path = info.Path
		} else if c := h.corrupt.Load(); c != nil {
			path = c.path
		}
		detail := oneLine(err.Error())
		if h.corrupt.CompareAndSwap(nil, &corruption{path: path, detail: detail}) {
			h.logger.Error("bitempo: on-disk corruption: the store refuses reads and writes until it is reopened",
				"file", path, "detail", detail)
		}
		return fmt.Errorf("%w: %s: %s", engine.ErrCorrupt, path, detail)
	}
	return fmt.Errorf("%w: %s", engine.ErrIO, oneLine(err.Error()))
}

// fatalError is the panic value of slogLogger.Fatalf on a goroutine that runs a
// guarded call; guard recovers it.
type fatalError string

// guardName is the function name runtime.Callers reports for guard.
var guardName = callstack.NameOf(func(inner func() error) { _ = (*health).guard(nil, inner) })

// guard runs fn, a call into Pebble on the caller's goroutine, and turns a
// Fatalf of Pebble's inside it into an error (engine.ErrFailed, or engine.ErrCorrupt when the
// fatal error followed a corruption) instead of a panic. Any other panic continues.
//
//go:noinline
func (h *health) guard(fn func() error) (err error) {
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		if _, ok := r.(fatalError); !ok {
			panic(r)
		}
		err = h.err()
		if err == nil { // a fatal error Pebble reported before h existed; cannot happen
			err = fmt.Errorf("%w: %s", engine.ErrFailed, r)
		}
	}()
	return fn()
}

// onGuardedGoroutine reports whether the calling goroutine is inside guard: a
// Fatalf there can unwind to it. Pebble calls Fatalf rarely (failed log writes,
// invariant violations), so walking the stack costs nothing that matters.
func onGuardedGoroutine() bool { return callstack.Has(guardName()) }

// slogLogger routes Pebble's log lines to log/slog: Info as Debug, errors as
// Error (at most a few a second, see logLimiter), and Fatalf as described there.
type slogLogger struct {
	l *slog.Logger
	h *health
}

func (s slogLogger) Infof(format string, args ...any) {
	s.l.Debug(fmt.Sprintf(format, args...), "component", "pebble")
}

func (s slogLogger) Errorf(format string, args ...any) {
	if n, ok := s.h.limiter.allow(); ok {
		attrs := []any{"component", "pebble"}
		if n > 0 {
			attrs = append(attrs, "suppressed", n)
		}
		s.l.Error(fmt.Sprintf(format, args...), attrs...)
	}
}

// Fatalf is called by Pebble on errors it cannot recover from: a failed
// write-ahead log or MANIFEST write, or a broken internal invariant. Pebble's
// contract is that Fatalf does not return; a library must not exit the process
// either. So Fatalf records the failure (every later call on the DB returns it)
// and then:
//
//   - on a goroutine inside guard (a commit, Open, Compact or Close on the
//     caller's goroutine) it panics with a fatalError, which guard turns into the
//     call's error;
//   - on any other goroutine (Pebble's flushes, compactions, table-stats
//     collection) it returns. Pebble's background paths return an error right
//     after Fatalf, which fails the background job; the DB no longer serves
//     anything, so the state that job leaves is never read. The exception is
//     a version edit's MANIFEST write, after which a flush's or compaction's
//     own rollback reads that state: its failures never reach Pebble
//     (fence.go).
//
// It never panics on a background goroutine, which would end the process
// (docs/design/pebble-fatalf.md).
func (s slogLogger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if !strings.HasPrefix(msg, "pebble") {
		msg = "pebble: " + msg
	}
	s.l.Error(msg, "component", "pebble", "fatal", true)
	s.h.fail(msg)
	if onGuardedGoroutine() {
		panic(fatalError(msg))
	}
}

// logLimiter lets through at most logBurst error lines per logWindow and counts
// the rest: with a full disk Pebble retries a failing flush thousands of times a
// second and logs every failure.
type logLimiter struct {
	mu         sync.Mutex
	start      time.Time
	n          int
	suppressed int
}

const (
	logWindow = 10 * time.Second
	logBurst  = 10
)

// allow reports whether a line may be logged now, and how many were suppressed
// since the last one that was.
func (l *logLimiter) allow() (suppressed int, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	if now.Sub(l.start) >= logWindow {
		l.start, l.n = now, 0
	}
	if l.n >= logBurst {
		l.suppressed++
		return 0, false
	}
	l.n++
	suppressed, l.suppressed = l.suppressed, 0
	return suppressed, true
}

// oneLine folds a multi-line message (Pebble's errors carry stack details).
func oneLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return strings.TrimSpace(s)
}

// openError classifies an error of pebble.Open on a directory that holds a
// Pebble store (checkDir has ruled out foreign directories).
func openError(fsys vfs.FS, dir string, err error, h *health) error {
	switch {
	case errors.Is(err, engine.ErrCorrupt) || errors.Is(err, engine.ErrFailed):
		return fmt.Errorf("bitempo: open %s: %w", dir, err)
	case errors.Is(err, pebble.ErrDBDoesNotExist):
		return fmt.Errorf("%w: %s", engine.ErrNotExist, dir)
	case isIOError(err):
		return fmt.Errorf("%w: open %s: %v", engine.ErrIO, dir, oneLine(err.Error()))
	}
	if herr := h.err(); herr != nil {
		return fmt.Errorf("bitempo: open %s: %w", dir, herr)
	}
	// Anything else Pebble refuses in a directory that has its MANIFEST (a
	// missing or swapped table file, an OPTIONS file it cannot parse, a file
	// that is not what the MANIFEST says) is damage to the store.
	msg := oneLine(err.Error())
	if info := pebble.ExtractDataCorruptionInfo(err); info != nil {
		msg = info.Path + ": " + msg
	} else if opt := badOptionsFile(fsys, dir); opt != "" {
		msg = opt + ": " + msg
	}
	return fmt.Errorf("%w: open %s: %s", engine.ErrCorrupt, dir, msg)
}

// badOptionsFile returns the store's newest OPTIONS file if Pebble cannot
// parse it, so that the error can name it.
func badOptionsFile(fsys vfs.FS, dir string) string {
	desc, err := pebble.Peek(dir, fsys)
	if err != nil || desc.OptionsFilename == "" {
		return ""
	}
	f, err := fsys.Open(desc.OptionsFilename)
	if err != nil {
		return ""
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return ""
	}
	if err := (&pebble.Options{}).Parse(string(b), optionsParseHooks); err != nil {
		return desc.OptionsFilename
	}
	return ""
}

// isIOError reports whether err is the operating system refusing a file
// operation, rather than damage Pebble found in a file's content.
func isIOError(err error) bool {
	for _, target := range []error{fs.ErrPermission, syscall.ENOSPC, syscall.EDQUOT, syscall.EIO, syscall.EROFS,
		syscall.ENOTDIR, syscall.ELOOP, syscall.EMFILE, syscall.ENFILE, syscall.EFBIG} {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}

// fenceFS is the file system a store's Pebble writes through. Once a commit has
// given up waiting (health.stuck), it refuses to create files, after a pause:
// Pebble retries a failed flush at once and for ever (the fault probe counted
// about 4,000 retries a second), so without the pause the doomed instance would
// spin a core, and without the refusal a flush that succeeded later, when space
// was freed, could still land the commit its caller was told had failed.
// Once the store has failed (health.failed) it also refuses to change the
// directory, and it keeps Pebble from panicking on a failed write-ahead log,
// MANIFEST or directory sync (fence.go).
type fenceFS struct {
	vfs.FS
	h *health
	w *walWatch // follows the write-ahead logs for the synced watermark (watermark.go); nil read-only
	// dir is the store's directory as the file system's PathDir gives it for
	// the store's files (storeDir).
	dir string
}

// storeDir returns dir as fsys's PathDir gives it for a file in it.
func storeDir(fsys vfs.FS, dir string) string {
	return fsys.PathDir(fsys.PathJoin(dir, "MANIFEST-000001"))
}

// wrapped reports whether err already says what kind of failure it is: one
// of the engine's sentinels, or a store of another layout.
func wrapped(err error) bool {
	return engine.Wrapped(err) || errors.Is(err, layout.ErrFormat)
}
