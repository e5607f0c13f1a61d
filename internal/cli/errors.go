package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/bitempo/bitempo/store"
)

// Exit statuses.
const (
	exitOK      = 0
	exitFailure = 1   // the command ran and failed, or found a problem (a miss, a bad store)
	exitUsage   = 2   // the command line is wrong
	exitSignal  = 130 // interrupted by SIGINT or SIGTERM (128 + SIGINT, as shells report it)
)

// interruptedError is a command stopped by a signal: exit status 130. Its text
// says what was left done and undone.
type interruptedError struct{ msg string }

func (e *interruptedError) Error() string { return e.msg }

// usageError is a mistake on the command line: exit status 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// usagef returns a usage error.
func usagef(format string, args ...any) error {
	return &usageError{fmt.Sprintf(format, args...)}
}

// failure marks an error returned by a command's own work (exit status 1), as
// opposed to errors of the parser (exit status 2).
type failure struct {
	err error
}

func (f *failure) Error() string { return f.err.Error() }
func (f *failure) Unwrap() error { return f.err }

// exitStatus maps an error of the command tree to the process exit status.
func exitStatus(err error) int {
	var u *usageError
	var f *failure
	var sig *interruptedError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &sig):
		return exitSignal
	case errors.As(err, &u):
		return exitUsage
	case errors.As(err, &f):
		return exitFailure
	}
	return exitUsage // errors raised by the parser itself: unknown command, bad flag
}

// message renders an error as the one line printed on stderr. The four ways a
// store can fail to open each get their own wording; everything else is the
// error's text with the library's repeated "bitempo: " prefixes removed.
func message(err error, dir string, wait time.Duration) string {
	var msg string
	switch {
	case errors.Is(err, store.ErrNotExist):
		msg = fmt.Sprintf("no bitempo store at %s (create one with: bitempo create TABLE --key COL --db %s)", dir, dir)
	case (errors.Is(err, fs.ErrPermission) && syscall.Access(dir, 5 /* R_OK|X_OK */) != nil) ||
		(errors.Is(err, store.ErrLocked) && permissionDenied(dir)):
		msg = fmt.Sprintf("permission denied: cannot open store %s as user %d; bitempo needs read access to the store directory and its files to read it, and write access to write it", dir, os.Getuid())
	case errors.Is(err, store.ErrLocked):
		msg = fmt.Sprintf("store %s is locked by another process", dir)
		if pid := lockHolder(dir); pid > 0 {
			msg += fmt.Sprintf(" (pid %d)", pid)
		}
		if wait > 0 {
			msg += fmt.Sprintf("; waited %s for it", wait)
		}
		msg += "; close it and try again"
	case errors.Is(err, store.ErrNotBitempo):
		msg = fmt.Sprintf("%s is not a bitempo store: %s", dir, detail(err, store.ErrNotBitempo))
	case errors.Is(err, store.ErrDamagedWAL):
		msg = fmt.Sprintf("store %s has a damaged write-ahead log: %s. Nothing was changed. "+
			"To keep every transaction before the damage (the rest is reported and set aside), run: bitempo recover --db %s",
			dir, detail(err, store.ErrCorrupt, store.ErrDamagedWAL), dir)
	case errors.Is(err, store.ErrCorrupt):
		msg = fmt.Sprintf("store %s is corrupt: %s (its files were left as they were; bitempo verify --db %s shows what else is damaged; restore the store from a backup)",
			dir, detail(err, store.ErrCorrupt), dir)
	case errors.Is(err, store.ErrIO):
		msg = fmt.Sprintf("cannot read or write the files of store %s: %s (check permissions and free space)", dir, detail(err, store.ErrIO))
	default:
		msg = clean(err)
	}
	return "bitempo: " + msg
}

// clean strips the library's "bitempo: " prefixes (one per wrapping layer) and
// folds the message onto one line.
func clean(err error) string {
	s := strings.ReplaceAll(err.Error(), "bitempo: ", "")
	s = strings.ReplaceAll(s, "\n", "; ")
	return strings.TrimSpace(s)
}

// detail is the message of err without the text of its sentinel, which the
// caller has already said in its own words.
func detail(err error, sentinels ...error) string {
	s := clean(err)
	for _, sentinel := range sentinels {
		s = strings.ReplaceAll(s, clean(sentinel)+": ", "")
		s = strings.ReplaceAll(s, clean(sentinel), "")
	}
	return strings.Trim(s, " :;")
}

// permissionDenied reports whether the user may not open the store's LOCK file
// (or create it) for writing: Pebble reports that as a failure to take the lock,
// which the user must not read as "locked by another process".
func permissionDenied(dir string) bool {
	f, err := os.OpenFile(filepath.Join(dir, "LOCK"), os.O_RDWR, 0)
	if err == nil {
		_ = f.Close()
		return false
	}
	if errors.Is(err, fs.ErrPermission) {
		return true
	}
	return errors.Is(err, fs.ErrNotExist) && syscall.Access(dir, 2 /* W_OK */) != nil
}

// lockHolder returns the process holding the store's LOCK file, read from
// /proc/locks on Linux, or 0 when it cannot tell. Pebble only says the lock is
// taken; the kernel knows by whom.
func lockHolder(dir string) int {
	st, err := os.Stat(filepath.Join(dir, "LOCK"))
	if err != nil {
		return 0
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return 0
	}
	f, err := os.Open("/proc/locks")
	if err != nil {
		return 0
	}
	defer f.Close()
	// Lines look like: "1: POSIX  ADVISORY  WRITE 4242 00:2d:1234 0 EOF"; the
	// device:inode field identifies the file.
	want := ":" + strconv.FormatUint(sys.Ino, 10)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || fields[1] == "->" {
			continue
		}
		if strings.HasSuffix(fields[5], want) {
			if pid, err := strconv.Atoi(fields[4]); err == nil && pid != os.Getpid() {
				return pid
			}
		}
	}
	return 0
}
