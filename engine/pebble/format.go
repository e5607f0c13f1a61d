package pebble

import (
	"errors"
	"fmt"
	"slices"

	"github.com/bitempo/bitempo/engine"
	"github.com/bitempo/bitempo/layout"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/atomicfs"
)

// checkFormat opens the existing store in dir read-only, with popts otherwise,
// and refuses it with a *layout.FormatError when its format is not layout.FormatVersion. It
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
	raw, closer, err := pdb.Get(layout.MetaFormat)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%w: %s: read the format marker: %v", engine.ErrCorrupt, dir, err)
	}
	defer closer.Close()
	return layout.CheckFormat(dir, raw)
}

// checkComparer refuses, before Pebble opens it, an existing store whose
// MANIFEST names another comparer than layoutComparer. Pebble would refuse it
// too, but with an error that does not say what the store is. A store
// written by Pebble's default comparer is opened read-only with that
// comparer, which writes nothing, to read its format marker: format 1, or a
// development build of format 2, is a *layout.FormatError; no marker, or any other
// comparer, is not a bitempo store. A MANIFEST this cannot read is left to
// checkBeforeOpen and Pebble, which report it.
func checkComparer(fsys vfs.FS, dir string, popts *pebble.Options, mustExist bool) error {
	name, ok := manifestComparer(fsys, dir)
	if !ok || name == layout.ComparerName {
		return nil
	}
	if slices.Contains(layout.DevComparerNames, name) {
		// Only bitempo's development builds wrote these comparers, and only
		// with format 2's marker: no need to open the store to read it.
		return &layout.FormatError{Dir: dir, Found: layout.DevFormatVersion, Want: layout.FormatVersion, Comparer: name}
	}
	if name != pebble.DefaultComparer.Name {
		return fmt.Errorf("%w: %s: a Pebble database ordered by comparer %q, not bitempo's %q", engine.ErrNotBitempo, dir, name, layout.ComparerName)
	}
	ro := popts.Clone()
	ro.ReadOnly = true
	ro.Comparer = pebble.DefaultComparer
	pdb, err := pebble.Open(dir, ro)
	if err != nil {
		return fmt.Errorf("%w: %s: a store written with Pebble's default comparer (a format-1 store or a development build of format 2) that cannot be read: %v", layout.ErrFormat, dir, err)
	}
	defer func() { _ = pdb.Close() }()
	raw, closer, err := pdb.Get(layout.MetaFormat)
	if errors.Is(err, pebble.ErrNotFound) {
		return notAStore(pdb, dir, popts.ReadOnly || mustExist)
	}
	if err != nil {
		return fmt.Errorf("%w: %s: read the format marker: %v", engine.ErrCorrupt, dir, err)
	}
	defer closer.Close()
	err = layout.CheckFormat(dir, raw)
	var fe *layout.FormatError
	switch {
	case err == nil: // no build wrote this format's marker with Pebble's comparer
		return &layout.FormatError{Dir: dir, Found: layout.FormatVersion, Want: layout.FormatVersion, Comparer: name}
	case errors.As(err, &fe) && fe.Found == layout.DevFormatVersion:
		return &layout.FormatError{Dir: dir, Found: layout.DevFormatVersion, Want: layout.FormatVersion, Comparer: name}
	}
	return err
}

// notAStore refuses a Pebble database of the default comparer without a
// format marker. An empty one is engine.ErrNotExist to a read-only or MustExist open,
// as load says of any empty Pebble database; a read-write open cannot make it
// a store, since bitempo's keys need bitempo's comparer, so it is
// engine.ErrNotBitempo, as is one that holds keys.
func notAStore(pdb *pebble.DB, dir string, mustExist bool) error {
	it, err := pdb.NewIter(nil)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", engine.ErrCorrupt, dir, err)
	}
	empty := !it.First()
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		return fmt.Errorf("%w: %s: %v", engine.ErrCorrupt, dir, err)
	}
	switch {
	case empty && mustExist:
		return fmt.Errorf("%w: %s is an empty Pebble database", engine.ErrNotExist, dir)
	case empty:
		return fmt.Errorf("%w: %s is an empty Pebble database ordered by Pebble's default comparer, which a bitempo store cannot use; create the store in a new directory", engine.ErrNotBitempo, dir)
	}
	return fmt.Errorf("%w: %s: a Pebble database without bitempo's format marker", engine.ErrNotBitempo, dir)
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
