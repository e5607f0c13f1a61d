package layout

import (
	"errors"
	"fmt"

	"github.com/bitempo/bitempo/encoding"
	"github.com/bitempo/bitempo/engine"
)

// This file checks a store's layout version (meta "format") before anything is
// written to it.
//
// Format history:
//
//	1  the first layout: a full record value per record in the current index
//	   and in history, one sk-index entry and one transaction-log entry per
//	   record (about 360 logical bytes per SCD2 version).
//	2  the compact layout, ordered by the comparer of split.go. Before its
//	   release, development builds that had no comparer yet (Pebble's
//	   default, so no key prefixes or filters) wrote the same marker. Their
//	   stores are refused by the comparer name Pebble records (the Pebble
//	   engine checks it before opening), with the same way out as any other
//	   format (DevFormatVersion). So are
//	   those of the development builds whose comparer was bitempo.layout.v2
//	   (4-byte table ids and log ordinals, 8-byte surrogate keys in keys,
//	   an absolute valid_to in record values), and those of bitempo.layout.v3
//	   (this layout without the newest-version keyspace, 0x14): a build of
//	   it would not keep that keyspace, and this one would find it empty;
//	   and those of bitempo.layout.v4 (group index entries holding the
//	   record's whole value, group attributes included).
//	   bitempo.layout.v5 is the layout of format 2's released builds.
//	3  format 2's keys, order and comparer (bitempo.layout.v5), with a
//	   current record holding the number of the commit that asserted it in
//	   place of that commit's time, and keyspace 0x07 mapping numbers to
//	   times: 6-7 bytes fewer per current record. Format-2 stores are
//	   refused; their own build's export --all --history and this build's
//	   import move them (the export's format is unchanged).
//
// A store of another format is refused, not upgraded in place nor opened
// read-only: an export and a reload into a new directory leave the old store
// untouched until the user deletes it (docs/design/old-formats-refused.md).

// PebbleDefaultComparer is the name of Pebble's default comparer, which the
// development builds of format 2 wrote before the layout had a comparer of
// its own.
const PebbleDefaultComparer = "leveldb.BytewiseComparator"

// ErrFormat: the store's layout version is not the one this build reads
// (older or newer); the error is a *FormatError that says how to move the data.
var ErrFormat = errors.New("bitempo: unsupported store format")

// ErrNewerFormat: the store was written by a newer bitempo layout version.
var ErrNewerFormat = errors.New("bitempo: store format is newer than this version supports")

// FormatError is returned by Open for a store whose layout version this build
// does not read. It matches ErrFormat, and also ErrNewerFormat when the store is
// newer than this build. Its message names the bitempo tool's export and import
// commands: moving a store between formats is the tool's job, so a library
// caller meets the same way out as a user of the tool.
type FormatError struct {
	Dir   string
	Found uint64 // the store's format
	Want  uint64 // the format this build reads and writes
	// Comparer, when not empty, is the key order the store was written with,
	// where it is not this build's: development builds of format 2 wrote
	// Found = Want with Pebble's default comparer, or with an earlier layout's
	// comparer (bitempo.v2).
	Comparer string
}

func (e *FormatError) Error() string {
	if e.Comparer != "" && e.Comparer != PebbleDefaultComparer {
		return fmt.Sprintf("bitempo: %s has store format %d as written by a development build "+
			"(keys laid out for bitempo's comparer %q, another layout of format %d that this build would misread; this build lays them out for %q), "+
			"this build reads only the released format %d; it was not changed. To move its data, export it with the bitempo version that wrote it "+
			"(`bitempo export --all --history -o DIR`, which keeps every past record) and import it "+
			"into a new store with this one (`bitempo import DIR --db NEW`)", e.Dir, e.Found, e.Comparer, e.Found, ComparerName, e.Want)
	}
	if e.Comparer != "" {
		return fmt.Sprintf("bitempo: %s has store format %d as written by a development build "+
			"(keys ordered by Pebble's comparer %q, without the key prefixes this build's filters need; this build orders them with %q), "+
			"this build reads only the released format %d; it was not changed. To move its data, export it with the bitempo version that wrote it "+
			"(`bitempo export --all --history -o DIR`, which keeps every past record) and import it "+
			"into a new store with this one (`bitempo import DIR --db NEW`)", e.Dir, e.Found, e.Comparer, ComparerName, e.Want)
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

// CheckLayout refuses a store of this format whose meta "layout" (raw, present
// when ok) does not name this build's. Pebble stores of an earlier
// layout are refused before this by the comparer their MANIFEST names
// (checkComparer); on an engine that records no comparer (etcd), a store
// written by a development build before the marker existed has none, and
// its keys would be misread.
func CheckLayout(dir string, raw []byte, ok bool) error {
	if !ok { // the marker came with bitempo.layout.v2's successor
		return &FormatError{Dir: dir, Found: FormatVersion, Want: FormatVersion, Comparer: DevComparerNames[0]}
	}
	var name string
	if err := encoding.UnmarshalBounded(raw, &name); err != nil {
		return fmt.Errorf("%w: layout marker: %v", engine.ErrCorrupt, err)
	}
	if name != ComparerName {
		return &FormatError{Dir: dir, Found: FormatVersion, Want: FormatVersion, Comparer: name}
	}
	return nil
}

// CheckFormat decodes a format marker and refuses any format but FormatVersion.
func CheckFormat(dir string, raw []byte) error {
	var format uint64
	if err := encoding.UnmarshalBounded(raw, &format); err != nil {
		return fmt.Errorf("%w: format marker: %v", engine.ErrCorrupt, err)
	}
	if format != FormatVersion {
		return &FormatError{Dir: dir, Found: format, Want: FormatVersion}
	}
	return nil
}
