package pebble

import (
	"fmt"

	"github.com/bitempo/bitempo/layout"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/sstable"
)

// This file tells the engine where a stored key's version suffix starts, so
// that Pebble keeps a bloom filter of key prefixes in every table file and a
// read of one key (SeekPrefixGE, Get) skips every file that does not hold it.
//
// Keys stay in bytewise order: the comparer is Pebble's default one with a
// Split and its own name. Where a key splits is decided per keyspace in
// layout.go (keyspace.split); this file only turns that into Pebble options.

// layoutComparer orders keys bytewise and splits them with layout.Split. Split
// satisfies Pebble's contract for every byte string, not only for the keys the
// store writes (see layout.Split), so a key planted by RawWrite cannot break the
// engine's order checks or its filters.
var layoutComparer = func() *pebble.Comparer {
	c := *pebble.DefaultComparer
	c.Split = layout.Split
	c.ImmediateSuccessor = layout.ImmediateSuccessor
	c.Name = layout.ComparerName
	return &c
}()

// optionsParseHooks let Pebble's OPTIONS parser know the layout's comparer
// (it knows only its own); any other comparer name fails the parse.
var optionsParseHooks = &pebble.ParseHooks{
	NewComparer: func(name string) (*pebble.Comparer, error) {
		if name != layout.ComparerName {
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
// file reads two index blocks (docs/design/index-block-size.md).
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
// itself.
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
