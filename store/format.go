package store

import (
	"errors"
	"fmt"
	"slices"

	"github.com/bitempo/bitempo/encoding"
	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/atomicfs"
)

// This file checks a store's layout version (meta "format") before anything is
// written to it.
//
// Format history:
//
//	1  the first layout: a full record value per record in the current index
//	   and in history, one sk-index entry and one transaction-log entry per
//	   record (about 360 logical bytes per SCD2 version).
//	2  the compact layout of the package doc, ordered by the comparer of
//	   comparer.go. Format 2 has not been released; the development builds
//	   that wrote it before the comparer existed (with Pebble's default
//	   comparer, so without key prefixes or filters) wrote the same marker.
//	   Their stores are refused by the comparer name Pebble records
//	   (checkComparer), with the same way out as any other format. So are
//	   those of the development builds whose comparer was bitempo.layout.v2
//	   (4-byte table ids and log ordinals, 8-byte surrogate keys in keys,
//	   an absolute valid_to in record values): bitempo.layout.v3 is the
//	   layout of the package doc.
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
	// Comparer, when not empty, is the key order the store was written with,
	// where it is not this build's: development builds of format 2 wrote
	// Found = Want with Pebble's default comparer, or with an earlier layout's
	// comparer (bitempo.layout.v2).
	Comparer string
}

func (e *FormatError) Error() string {
	if e.Comparer != "" && e.Comparer != pebble.DefaultComparer.Name {
		return fmt.Sprintf("bitempo: %s has store format %d as written by a development build "+
			"(keys laid out for bitempo's comparer %q, another layout of format %d that this build would misread; this build lays them out for %q), "+
			"this build reads only the released format %d; it was not changed. To move its data, export it with the bitempo version that wrote it "+
			"(`bitempo export --all --history -o DIR`, which keeps every past record) and import it "+
			"into a new store with this one (`bitempo import DIR --db NEW`)", e.Dir, e.Found, e.Comparer, e.Found, comparerName, e.Want)
	}
	if e.Comparer != "" {
		return fmt.Sprintf("bitempo: %s has store format %d as written by a development build "+
			"(keys ordered by Pebble's comparer %q, without the key prefixes this build's filters need; this build orders them with %q), "+
			"this build reads only the released format %d; it was not changed. To move its data, export it with the bitempo version that wrote it "+
			"(`bitempo export --all --history -o DIR`, which keeps every past record) and import it "+
			"into a new store with this one (`bitempo import DIR --db NEW`)", e.Dir, e.Found, e.Comparer, comparerName, e.Want)
	}
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

// checkComparer refuses, before Pebble opens it, an existing store whose
// MANIFEST names another comparer than layoutComparer. Pebble would refuse it
// too, but with an error that does not say what the store is. A store
// written by Pebble's default comparer is opened read-only with that
// comparer, which writes nothing, to read its format marker: format 1, or a
// development build of format 2, is a *FormatError; no marker, or any other
// comparer, is not a bitempo store. A MANIFEST this cannot read is left to
// checkBeforeOpen and Pebble, which report it.
func checkComparer(fsys vfs.FS, dir string, popts *pebble.Options, mustExist bool) error {
	name, ok := manifestComparer(fsys, dir)
	if !ok || name == comparerName {
		return nil
	}
	if slices.Contains(devComparerNames, name) {
		// Only bitempo's development builds wrote these comparers, and only
		// with format 2's marker: no need to open the store to read it.
		return &FormatError{Dir: dir, Found: formatVersion, Want: formatVersion, Comparer: name}
	}
	if name != pebble.DefaultComparer.Name {
		return fmt.Errorf("%w: %s: a Pebble database ordered by comparer %q, not bitempo's %q", ErrNotBitempo, dir, name, comparerName)
	}
	ro := popts.Clone()
	ro.ReadOnly = true
	ro.Comparer = pebble.DefaultComparer
	pdb, err := pebble.Open(dir, ro)
	if err != nil {
		return fmt.Errorf("%w: %s: a store written with Pebble's default comparer (a format-1 store or a development build of format 2) that cannot be read: %v", ErrFormat, dir, err)
	}
	defer func() { _ = pdb.Close() }()
	raw, closer, err := pdb.Get(metaFormat)
	if errors.Is(err, pebble.ErrNotFound) {
		return notAStore(pdb, dir, popts.ReadOnly || mustExist)
	}
	if err != nil {
		return fmt.Errorf("%w: %s: read the format marker: %v", ErrCorrupt, dir, err)
	}
	defer closer.Close()
	if err := formatOK(dir, raw); err != nil {
		return err
	}
	return &FormatError{Dir: dir, Found: formatVersion, Want: formatVersion, Comparer: name}
}

// notAStore refuses a Pebble database of the default comparer without a
// format marker. An empty one is ErrNotExist to a read-only or MustExist open,
// as load says of any empty Pebble database; a read-write open cannot make it
// a store, since bitempo's keys need bitempo's comparer, so it is
// ErrNotBitempo, as is one that holds keys.
func notAStore(pdb *pebble.DB, dir string, mustExist bool) error {
	it, err := pdb.NewIter(nil)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrCorrupt, dir, err)
	}
	empty := !it.First()
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrCorrupt, dir, err)
	}
	switch {
	case empty && mustExist:
		return fmt.Errorf("%w: %s is an empty Pebble database", ErrNotExist, dir)
	case empty:
		return fmt.Errorf("%w: %s is an empty Pebble database ordered by Pebble's default comparer, which a bitempo store cannot use; create the store in a new directory", ErrNotBitempo, dir)
	}
	return fmt.Errorf("%w: %s: a Pebble database without bitempo's format marker", ErrNotBitempo, dir)
}

// manifestComparer returns the comparer name recorded in the store's current
// MANIFEST (the first field of its first version edit), or ok false when
// there is no readable one.
func manifestComparer(fsys vfs.FS, dir string) (name string, ok bool) {
	current, err := atomicfs.ReadMarker(fsys, dir, "manifest")
	if err != nil || current == "" {
		return "", false
	}
	first := true
	_, err = scanLog(fsys, fsys.PathJoin(dir, current), 0, func(edit []byte) {
		if first {
			first = false
			name, ok = editComparer(edit)
		}
	})
	if err != nil {
		return "", false
	}
	return name, ok
}

// layoutOK refuses a store of format 2 whose meta "layout" (raw, present
// when ok) does not name this build's layout. Pebble stores of an earlier
// layout are refused before this by the comparer their MANIFEST names
// (checkComparer); on an engine that records no comparer (etcd), a store
// written by a development build before the marker existed has none, and
// its keys would be misread.
func layoutOK(dir string, raw []byte, ok bool) error {
	if !ok {
		return &FormatError{Dir: dir, Found: formatVersion, Want: formatVersion, Comparer: devComparerNames[len(devComparerNames)-1]}
	}
	var name string
	if err := encoding.UnmarshalBounded(raw, &name); err != nil {
		return fmt.Errorf("%w: layout marker: %v", ErrCorrupt, err)
	}
	if name != comparerName {
		return &FormatError{Dir: dir, Found: formatVersion, Want: formatVersion, Comparer: name}
	}
	return nil
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
