package store

import (
	"bytes"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/sstable"

	"github.com/bitempo/bitempo/encoding"
)

// This file tells the engine where a stored key's version suffix starts, so
// that Pebble keeps a bloom filter of key prefixes in every table file and a
// read of one key (SeekPrefixGE, Get) skips every file that does not hold it.
//
// Keys stay in bytewise order: the comparer is Pebble's default one with a
// Split and its own name. Where a key splits is decided per keyspace in
// layout.go (keyspace.split); this file only turns that into Pebble options.

// comparerName is the name Pebble records in a store's MANIFEST and OPTIONS
// files. It names the key layout, not only the order: a store written with
// another comparer is refused before Pebble opens it (checkComparer in
// format.go), whether Pebble's default (the development builds of format 2
// before the split existed) or an earlier layout of bitempo's own
// (devComparerNames). Pebble would refuse it anyway, with a message that says
// nothing about how to move the data.
const comparerName = "bitempo.layout.v3"

// devComparerNames are the comparers of development builds of format 2 whose
// keys and values this build would misread: bitempo.layout.v2 wrote 4-byte
// table ids, 8-byte surrogate keys and 4-byte log ordinals, transaction-log
// changes without re-asserts or valid_from deltas, and record values with an
// absolute valid_to, under the same format marker.
var devComparerNames = []string{"bitempo.layout.v2"}

// layoutComparer orders keys bytewise and splits them with splitKey. Split
// satisfies Pebble's contract for every byte string, not only for the keys the
// store writes (see splitKey), so a key planted by RawWrite cannot break the
// engine's order checks or its filters.
var layoutComparer = func() *pebble.Comparer {
	c := *pebble.DefaultComparer
	c.Split = splitKey
	c.ImmediateSuccessor = immediateSuccessor
	c.Name = comparerName
	return &c
}()

// optionsParseHooks let Pebble's OPTIONS parser know the layout's comparer
// (it knows only its own); any other comparer name fails the parse.
var optionsParseHooks = &pebble.ParseHooks{
	NewComparer: func(name string) (*pebble.Comparer, error) {
		if name != comparerName {
			return nil, fmt.Errorf("unknown comparer %q", name)
		}
		return layoutComparer, nil
	},
}

// filterBitsPerKey is the size of the prefix bloom filters: 10 bits per
// distinct prefix, a false-positive rate of about 1%.
const filterBitsPerKey = 10

// indexBlockSize is the target size of a table file's index blocks: large
// enough that nearly every file has a one-level index. Pebble's default (the
// data block size, 4 KiB) splits the index of a file of more than a few hundred
// blocks into partitions under a top-level index, and every seek into such a
// file reads two index blocks. Measured in BenchmarkGet (100k keys x 10
// versions, compacted): blocks asked of the cache per read 2.75 -> 1.76 for a
// latest Get, 11.4 -> 4.4 for a Get at an old transaction time. (Index blocks
// are the hottest blocks of the cache; a larger one costs more only when it is
// evicted.)
const indexBlockSize = 256 << 10

// applyLayoutOptions sets the Pebble options the layout needs: the comparer
// (key order and where a version suffix starts) and a bloom filter of key
// prefixes on every level. Level 0 has one too: a store under a write load
// keeps many level-0 files, and a point read would otherwise search each.
// Index blocks are large (indexBlockSize).
//
// It also keeps every value beside its key. Given a Split, Pebble's table
// writer by default moves the value of every key but the first of a prefix
// into separate value blocks, which suits MVCC keys, whose first suffix is
// the version nearly every read wants. bitempo's suffixes are valid times
// and transaction times that reads pick anywhere in a key's timeline (a
// version at a past valid time, a record at a past transaction, an event),
// and then each such read pays a second block read for the value (a Get at
// an old transaction time reads history records that are almost never the
// first of their key). See writerOptions for the tables bitempo writes
// itself, and BENCHMARKS.md for the measurement.
func applyLayoutOptions(o *pebble.Options) {
	o.Comparer = layoutComparer
	for i := range o.Levels {
		o.Levels[i].FilterPolicy = bloom.FilterPolicy(filterBitsPerKey)
		o.Levels[i].FilterType = pebble.TableFilter
		o.Levels[i].IndexBlockSize = indexBlockSize
	}
	o.Experimental.SpanPolicyFunc = valuesInPlace
}

// valuesInPlace is the span policy of every key: values stay in the data
// blocks (see applyLayoutOptions).
func valuesInPlace([]byte) (pebble.SpanPolicy, []byte, error) {
	return pebble.SpanPolicy{DisableValueSeparationBySuffix: true}, nil, nil
}

// writerOptions are the options of a table bitempo writes itself for an
// ingest: the store's comparer, filters and compression, with values in place
// like the tables Pebble writes (applyLayoutOptions).
func writerOptions(o *pebble.Options, format sstable.TableFormat) sstable.WriterOptions {
	wo := o.MakeWriterOptions(0, format)
	wo.DisableValueBlocks = true
	return wo
}

// splitKey returns the length of the prefix of key k: the part that names one
// key of one table (keyspace, table id, and the key's identity as
// keyspace.split decides), before the version suffix. A key without a suffix
// is all prefix.
//
// Pebble requires that the bytewise order of keys is the order of their
// (prefix, suffix) pairs, and that a prefix splits as itself. Both hold for
// every byte string because the split point is found reading from the front:
// whether a key splits at i depends only on its first i bytes and on whether
// more follow, so every longer key that starts with the same i bytes splits at
// i too, and a key of exactly those i bytes is all prefix. (A split
// found from the end, at the fixed-width times, would agree only for keys of
// the same table schema; a planted key of another shape would then make
// Pebble's table writer fail its order check on flush.)
//
// The table id is an ordered uvarint, read from the front too: a key whose
// bytes after its keyspace are not one in its only form is all prefix.
func splitKey(k []byte) int {
	if len(k) == 0 {
		return 0
	}
	rule := keyspaceSplit(k[0])
	if rule == splitNone {
		return len(k)
	}
	t := tableIDEnd(k)
	if t == 0 || t >= len(k) {
		return len(k)
	}
	var n int
	switch rule {
	case splitFirstComponent:
		n = firstComponentEnd(k[t:])
	case splitSK:
		_, n = decodeOrdered(k[t:])
	}
	if n <= 0 || t+n >= len(k) {
		return len(k)
	}
	return t + n
}

// immediateSuccessor appends the smallest prefix key greater than the prefix
// key a (Pebble's NextPrefix seeks there). Every key that extends a prefix that
// splitKey ends at a key's tuple component splits there too, so the smallest
// greater prefix key is past all of them: a with its last byte incremented
// (encoding.PrefixEnd), which ends the component early or breaks its escape,
// and so splits as itself. (Pebble's default, a | 0x00, would be a key of
// prefix a, sorting before a's versions: NextPrefix would stay on the key.)
// For any other prefix key, a | 0x00 is one.
func immediateSuccessor(dst, a []byte) []byte {
	if t := tableIDEnd(a); t > 0 && len(a) > t && splitKey(append(a[:len(a):len(a)], 0)) == len(a) {
		if end := encoding.PrefixEnd(a); end != nil {
			return append(dst, end...)
		}
	}
	return append(append(dst, a...), 0x00)
}

// Tags of key components and the escape bytes of string components, as
// encoding/key.go writes them. The split reads them without decoding the
// component; TestSplitKey checks them against encoding.AppendKey.
const (
	splitTagInt64  = 0x20
	splitTagUint64 = 0x21
	splitTagString = 0x30
	splitTagBytes  = 0x31
	splitEscape    = 0x00
	splitEscaped00 = 0xFF
	splitTerm      = 0x01
)

// firstComponentEnd returns the length of the well-formed tuple component at
// the front of b, or 0 if there is none.
func firstComponentEnd(b []byte) int {
	if len(b) == 0 {
		return 0
	}
	switch b[0] {
	case splitTagInt64, splitTagUint64:
		if len(b) < 9 {
			return 0
		}
		return 9
	case splitTagString, splitTagBytes:
		for i := 1; ; {
			j := bytes.IndexByte(b[i:], splitEscape)
			if j < 0 || i+j+1 >= len(b) {
				return 0
			}
			i += j + 1
			switch b[i] {
			case splitTerm:
				return i + 1
			case splitEscaped00:
				i++
			default:
				return 0
			}
		}
	}
	return 0
}
