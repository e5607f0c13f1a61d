package pebble

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
)

// This file decodes just enough of the MANIFEST's version edits to learn the
// oldest unflushed write-ahead log, and uses it to notice a deleted live log.
//
// A version edit (github.com/cockroachdb/pebble/v2/internal/manifest, which
// bitempo cannot import) is a sequence of fields, each a uvarint tag and a
// value whose layout the tag fixes. Tag 2 ("log number") carries Pebble's
// minimum unflushed log number: every log file numbered at least that is live,
// and Pebble's Open replays every *.log in the directory numbered at least that
// (wal.Scan, then the loop in Open), in order, without knowing which it should
// find: a live log that is not there is replayed as if it had never existed.
//
// The decoder walks every field of every edit, because a field's length is
// known only from its tag. It is bounded by the record (no allocation beyond
// the record, no length taken on trust) and gives up, claiming nothing, on any
// tag or field it cannot skip exactly as Pebble would read it.

// Version edit tags and the custom field tags of new-file entries, as Pebble's
// version_edit.go numbers them.
const (
	veComparer          = 1
	veLogNumber         = 2
	veNextFileNumber    = 3
	veLastSequence      = 4
	veCompactPointer    = 5
	veDeletedFile       = 6
	veNewFile           = 7
	vePrevLogNumber     = 9
	veNewFile2          = 100
	veNewFile3          = 102
	veNewFile4          = 103
	veNewFile5          = 104
	veCreatedBacking    = 105
	veRemovedBacking    = 106
	veNewBlobFile       = 107
	veDeletedBlobFile   = 108
	veCustomTerminate   = 1
	veCustomPathID      = 65
	veCustomNonSafeMask = 1 << 6
	veCustomVirtual     = 66
	veCustomSynthPrefix = 67
	veCustomSynthSuffix = 68
	veCustomBlobRefs    = 69
	veNumLevels         = 7
	veContainsPointKeys = 1 << 0
)

// editReader reads the fields of one version edit.
type editReader struct {
	b   []byte
	err bool // a field could not be read: the edit is not understood
}

func (r *editReader) uvarint() uint64 {
	if r.err {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = true
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *editReader) skipBytes() {
	n := r.uvarint()
	if r.err || n > uint64(len(r.b)) {
		r.err = true
		return
	}
	r.b = r.b[n:]
}

func (r *editReader) byte1() byte {
	if r.err || len(r.b) == 0 {
		r.err = true
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *editReader) level() {
	if r.uvarint() >= veNumLevels {
		r.err = true
	}
}

// minUnflushedLog returns the minimum unflushed log number one version edit
// sets (has is false if it sets none), or ok false if the edit holds a tag or a
// field this decoder does not know how to skip.
func minUnflushedLog(edit []byte) (num uint64, has, ok bool) {
	r := &editReader{b: edit}
	for len(r.b) > 0 && !r.err {
		tag := r.uvarint()
		switch tag {
		case veComparer:
			r.skipBytes()
		case veLogNumber:
			num, has = r.uvarint(), true
		case veNextFileNumber, veLastSequence, vePrevLogNumber, veRemovedBacking:
			r.uvarint()
		case veCompactPointer:
			r.level()
			r.skipBytes()
		case veCreatedBacking:
			r.uvarint()
			r.uvarint()
		case veDeletedFile:
			r.level()
			r.uvarint()
		case veNewFile, veNewFile2, veNewFile3, veNewFile4, veNewFile5:
			r.newFile(tag)
		case veNewBlobFile:
			for range 5 { // file id, disk file number, size, value size, creation time
				r.uvarint()
			}
		case veDeletedBlobFile:
			r.uvarint()
			r.uvarint()
		default: // column families (which Pebble refuses) or a tag of a newer Pebble
			return 0, false, false
		}
	}
	if r.err {
		return 0, false, false
	}
	return num, has, true
}

// editComparer returns the comparer name a version edit records, when the
// edit starts with one (Pebble writes it first in the first edit of every
// MANIFEST), or ok false.
func editComparer(edit []byte) (name string, ok bool) {
	r := &editReader{b: edit}
	if r.uvarint() != veComparer || r.err {
		return "", false
	}
	n := r.uvarint()
	if r.err || n > uint64(len(r.b)) {
		return "", false
	}
	return string(r.b[:n]), true
}

// newFile skips a new-file entry of the given tag.
func (r *editReader) newFile(tag uint64) {
	r.level()
	r.uvarint() // file number
	if tag == veNewFile3 {
		r.uvarint() // path id
	}
	r.uvarint() // size
	if tag != veNewFile5 {
		r.skipBytes() // smallest and largest point keys
		r.skipBytes()
	} else {
		if r.byte1()&veContainsPointKeys != 0 {
			r.skipBytes()
			r.skipBytes()
		}
		r.skipBytes() // smallest and largest range keys
		r.skipBytes()
	}
	if tag != veNewFile {
		r.uvarint() // smallest and largest sequence numbers
		r.uvarint()
	}
	if tag != veNewFile4 && tag != veNewFile5 {
		return
	}
	for !r.err {
		switch custom := r.uvarint(); {
		case r.err || custom == veCustomTerminate:
			return
		case custom == veCustomPathID:
			r.err = true // Pebble refuses it too
		case custom == veCustomVirtual:
			r.uvarint() // backing file number
		case custom == veCustomSynthPrefix, custom == veCustomSynthSuffix:
			r.skipBytes()
		case custom == veCustomBlobRefs:
			r.uvarint() // reference depth
			n := r.uvarint()
			if n > uint64(len(r.b))/2 { // each reference is two uvarints
				r.err = true
				return
			}
			for range n {
				r.uvarint()
				r.uvarint()
			}
		case custom&veCustomNonSafeMask != 0:
			r.err = true // a field Pebble does not know how to skip either
		default:
			r.skipBytes()
		}
	}
}

// manifestLogs accumulates, record by record, the minimum unflushed log number
// of a MANIFEST: the last one any edit sets, as Pebble's replay keeps it.
type manifestLogs struct {
	min     uint64
	unknown bool // an edit could not be decoded: claim nothing
}

func (m *manifestLogs) add(edit []byte) {
	if m.unknown {
		return
	}
	num, has, ok := minUnflushedLog(edit)
	switch {
	case !ok:
		m.unknown = true
	case has && num != 0: // Pebble ignores a zero, as here
		m.min = num
	}
}

// missingLog reports a live write-ahead log that is missing from the directory
// holding names, as a description, or "" if none is known to be missing.
//
// What is claimed, and only that: no log numbered at least the minimum
// unflushed one exists, and an OPTIONS file numbered above that minimum does.
// Pebble's read-write Open creates the log for new commits and then writes an
// OPTIONS file with the next file number, and it never deletes a log numbered
// at least the minimum; so such an OPTIONS file shows that a live log was
// created after the minimum was recorded and has since gone. Without it the
// state is one a crash leaves: Open's own flush of the replayed logs records as
// the minimum a number no log file ever gets, and a crash before Open creates
// the next log leaves no live log at all, with every commit already in table
// files. Requiring the log numbered exactly the minimum instead would make that
// same flush a false alarm on every reopen of a store with a log.
//
// Not detected, because nothing records which logs existed: a deleted live log
// while another live log remains, and the deletion of every live log when the
// minimum was advanced by a flush after the store's last Open (no OPTIONS file
// is newer than it).
func missingLog(names []string, m *manifestLogs) string {
	if m.unknown {
		return ""
	}
	var newestOptions uint64
	for _, n := range names {
		if base, ok := strings.CutPrefix(n, "OPTIONS-"); ok {
			if num, err := strconv.ParseUint(base, 10, 64); err == nil {
				newestOptions = max(newestOptions, num)
			}
		}
	}
	if newestOptions <= m.min {
		return ""
	}
	for _, l := range logFiles(names) {
		if l.num >= m.min {
			return ""
		}
	}
	return fmt.Sprintf("the live write-ahead log is missing: the MANIFEST's oldest unflushed log is %06d and no log numbered %06d or later exists, "+
		"although OPTIONS-%06d shows that one (a file from %06d.log to %06d.log) was created when the store was last opened",
		m.min, m.min, newestOptions, m.min, newestOptions-1)
}
