package store

import (
	"errors"
	"fmt"

	"github.com/bitempo/bitempo/encoding"
	"github.com/cockroachdb/pebble/v2"
)

// This file checks a store's layout version (meta "format") before anything is
// written to it.
//
// Format history:
//
//	1  the first layout: a full record value per record in the current index
//	   and in history, one sk-index entry and one transaction-log entry per
//	   record (about 360 logical bytes per SCD2 version).
//	2  the compact layout of the package doc.
//
// Decision: a store of another format is refused, not upgraded in place. An
// in-place rewrite would have to rewrite every record of a store users trust
// with their history, inside Open, with no way back if it were interrupted; an
// export and a reload into a new directory leave the old store untouched until
// the user deletes it. A read-only open of an old store is refused too: its
// readers would need the old codecs kept alive for ever.

// FormatError is returned by Open for a store whose layout version this build
// does not read. It matches ErrFormat, and also ErrNewerFormat when the store is
// newer than this build.
type FormatError struct {
	Dir   string
	Found uint64 // the store's format
	Want  uint64 // the format this build reads and writes
}

func (e *FormatError) Error() string {
	if e.Found > e.Want {
		return fmt.Sprintf("bitempo: %s has store format %d, this build reads format %d: open it with a newer bitempo", e.Dir, e.Found, e.Want)
	}
	if e.Found == 1 {
		// The builds that wrote format 1 had no full-fidelity export: their
		// scan writes the versions in effect, which load takes back.
		return fmt.Sprintf("bitempo: %s has store format %d, this build reads only format %d; "+
			"it was not changed. To move its data, export it with the bitempo version that wrote it "+
			"(`bitempo scan NAME --format json` per table, which keeps the versions in effect) "+
			"and load it into a new store (`bitempo load NAME FILE`); from format 2 on, "+
			"`bitempo export --all --history -o DIR` and `bitempo import DIR --db NEW` move a store "+
			"with every past record", e.Dir, e.Found, e.Want)
	}
	return fmt.Sprintf("bitempo: %s has store format %d, this build reads only format %d; "+
		"it was not changed. To move its data, export it with the bitempo version that wrote it "+
		"(`bitempo export --all --history -o DIR`, which keeps every past record) and import it "+
		"into a new store with this one (`bitempo import DIR --db NEW`)", e.Dir, e.Found, e.Want)
}

// Is makes errors.Is(err, ErrFormat) true, and errors.Is(err, ErrNewerFormat)
// for a newer store.
func (e *FormatError) Is(target error) bool {
	return target == ErrFormat || (target == ErrNewerFormat && e.Found > e.Want)
}

// checkFormat opens the existing store in dir read-only, with popts otherwise,
// and refuses it with a *FormatError when its format is not formatVersion. It
// runs before the read-write open, which would write new engine files (a log,
// an options file) into the directory of a store this build must not touch. A
// store without a format marker passes: load tells a fresh store from a
// foreign database.
func checkFormat(dir string, popts *pebble.Options) error {
	ro := popts.Clone()
	ro.ReadOnly = true
	pdb, err := pebble.Open(dir, ro)
	if err != nil {
		return nil // the read-write open reports it with the usual errors
	}
	defer func() { _ = pdb.Close() }()
	raw, closer, err := pdb.Get(metaFormat)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%w: %s: read the format marker: %v", ErrCorrupt, dir, err)
	}
	defer closer.Close()
	return formatOK(dir, raw)
}

// formatOK decodes a format marker and refuses any format but formatVersion.
func formatOK(dir string, raw []byte) error {
	var format uint64
	if err := encoding.UnmarshalBounded(raw, &format); err != nil {
		return fmt.Errorf("%w: format marker: %v", ErrCorrupt, err)
	}
	if format != formatVersion {
		return &FormatError{Dir: dir, Found: format, Want: formatVersion}
	}
	return nil
}
